package packer

import (
	"sync"

	"github.com/tether-run/tether/internal/treepolicy"
)

// basePolicy is the policy of a packer made without WithPolicy:
// treepolicy's base rules, for a session archive (the public halves of
// SSH keys too), without any backend's login or state files.
var basePolicy = sync.OnceValue(func() *treepolicy.Policy { return treepolicy.New().ForSessions() })

// WithPolicy sets the policy of the packer's archives (a session policy:
// treepolicy.Policy.ForSessions): the credentials and the CLIs' own state
// files it names are never packed and never unpacked. The registry gives
// every backend the one built from all backends' facts
// (catalogue.SessionPolicy), the same credentials a workspace snapshot
// refuses, so a login or state file of one CLI is refused in any
// backend's tree. Without it a packer keeps to treepolicy's base rules.
func WithPolicy(pol *treepolicy.Policy) Option {
	return func(p *Packer) { p.policy = pol }
}

// denied reports whether the slash-separated path p names a credential
// or a CLI's state file, or lies under a denied directory. Names compare
// in lower case, since macOS volumes usually ignore case.
func (p *Packer) denied(path string) bool {
	if c, _ := p.policy.Classify(path); c != treepolicy.Plain {
		return true
	}
	return p.policy.State(path)
}
