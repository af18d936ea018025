package treepolicy

import (
	"path"
	"slices"
	"strings"
)

// sessionOnly are what a session archive refuses beyond the credential
// rules, whatever the backend: the public halves of SSH keys too, which
// a session folder has no use for, though a workspace may.
var sessionOnly = []string{"id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*"}

// ForSessions returns the policy of a session archive: pol's rules, the
// public halves of SSH keys, and the agent CLIs' own state files named by
// state (agent.Facts.State: patterns of one path component in path.Match
// syntax, compared in lower case). The packer refuses what Classify or
// State names; a workspace's policy is pol itself, since a repository
// may well hold a settings.json.
func (pol *Policy) ForSessions(state ...string) *Policy {
	p := *pol
	p.state = slices.Clone(pol.state)
	if len(p.state) == 0 {
		p.state = append(p.state, sessionOnly...)
	}
	for _, s := range state {
		p.state = append(p.state, strings.ToLower(s))
	}
	return &p
}

// State reports whether a component of the slash-separated path p (in
// any case) matches one of the state patterns of a session policy
// (ForSessions): p names a CLI's state file or lies under a state
// directory. A policy not made for sessions names none.
func (pol *Policy) State(p string) bool {
	if len(pol.state) == 0 {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		c = strings.ToLower(c)
		for _, pat := range pol.state {
			if ok, _ := path.Match(pat, c); ok {
				return true
			}
		}
	}
	return false
}
