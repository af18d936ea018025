package treepolicy

import (
	"slices"
	"strings"
)

// Class is what a path's name says about it.
type Class int

const (
	// Plain: nothing in the name says credential.
	Plain Class = iota
	// Secret: shaped like a credential or a private key. A repository may
	// track one legitimately (a test certificate, a template .env), so a
	// workspace keeps it only when the run's source already tracked it;
	// a session archive never holds one.
	Secret
	// Login: an agent CLI's login or account file, or a user's global
	// credential store. It never leaves the machine, whoever wrote it.
	Login
)

func (c Class) String() string {
	switch c {
	case Secret:
		return "credential-shaped file"
	case Login:
		return "login credential file"
	}
	return "plain file"
}

// A rule matches one path component (the lower-cased name: a literal,
// "prefix*" or "*suffix") or, when it holds a slash, the tail of the
// path, component by component.
type rule struct {
	pattern string
	class   Class
}

// rules is the base deny list. Each agent CLI's own login files are not
// here but in its backend's facts (agent.Facts.Credentials), which New
// adds as Login rules; the catalogue builds the one policy with every
// backend's, so a workspace refuses a claude login that a codex node
// copied.
var rules = []rule{
	// Global credential stores.
	{".aws/credentials", Login},
	{".git-credentials", Login},
	{".netrc", Login},
	{"_netrc", Login},
	{"id_rsa", Login},
	{"id_dsa", Login},
	{"id_ecdsa", Login},
	{"id_ed25519", Login},

	// Credential-shaped files a repository may track.
	{".env", Secret},
	{".env.*", Secret},
	{"*.env", Secret},
	{"id_rsa*", Secret},
	{"id_dsa*", Secret},
	{"id_ecdsa*", Secret},
	{"id_ed25519*", Secret},
	{"*_key", Secret}, // deploy_key, ssh_host_rsa_key
	{"*.pem", Secret},
	{"*.key", Secret},
	{"*.p12", Secret},
	{"*.pfx", Secret},
	{"credentials", Secret},
	{"credentials.json", Secret},
	{".npmrc", Secret},
	{".pypirc", Secret},
	{".pgpass", Secret},
	{".docker/config.json", Secret},
	{".kube/config", Secret},
	{"gh/hosts.yml", Secret},
}

// templates are names that look like a credential's but, by convention,
// hold only placeholders. Their contents are still scanned.
var templates = map[string]bool{
	".env.example": true, ".env.sample": true, ".env.template": true, ".env.dist": true,
}

// backupSuffixes do not make a credential anything else.
var backupSuffixes = []string{".bak", ".backup", ".old", ".orig", ".save", ".swp", ".tmp", "~"}

// Policy is the deny list: the base rules and the Login patterns it was
// made with, and, for a session archive, the state files (ForSessions).
// It is read-only once made, safe for concurrent use.
type Policy struct {
	exact       map[string]rule
	wild        []rule
	tails       []tailRule
	first, last [256]bool
	state       []string
}

// New returns the policy of the base rules plus logins, patterns of
// agent CLI login files (agent.Facts.Credentials) in the rules' syntax:
// a lower-case name, "prefix*", "*suffix", or a tail of a path with
// slashes.
func New(logins ...string) *Policy {
	all := slices.Clone(rules)
	for _, l := range logins {
		all = append(all, rule{strings.ToLower(l), Login})
	}
	p := &Policy{}
	p.exact, p.wild, p.tails = splitRules(all)
	p.first, p.last = ruleBytes(all)
	return p
}

// Classify returns the class of the slash-separated path p and the rule
// that matched (empty for Plain). A path under a credential-named
// directory takes that directory's class. It runs on every file of every
// snapshot walk, so it allocates nothing for a plain path in lower case.
func (pol *Policy) Classify(p string) (Class, string) {
	lp := strings.ToLower(p)
	for {
		c, pat := pol.classify(lp)
		if c != Plain {
			return c, pat
		}
		trimmed := lp
		for _, s := range backupSuffixes {
			trimmed = strings.TrimSuffix(trimmed, s)
		}
		if trimmed == lp || trimmed == "" || strings.HasSuffix(trimmed, "/") {
			return Plain, ""
		}
		lp = trimmed
	}
}

func (pol *Policy) classify(lp string) (Class, string) {
	best, why := Plain, ""
	// Components, without splitting.
	for rest := lp; ; {
		c := rest
		i := strings.IndexByte(rest, '/')
		if i >= 0 {
			c = rest[:i]
		}
		if k, pat := pol.classifyName(c); k > best {
			best, why = k, pat
		}
		if i < 0 {
			break
		}
		rest = rest[i+1:]
	}
	if best == Login {
		return best, why
	}
	for _, r := range pol.tails {
		if r.class > best && tailMatch(lp, r.parts) {
			best, why = r.class, r.pattern
		}
	}
	return best, why
}

// classifyName matches one lower-cased component against the one-name
// rules.
func (pol *Policy) classifyName(c string) (Class, string) {
	if c == "" || !pol.first[c[0]] && !pol.last[c[len(c)-1]] {
		return Plain, "" // most names: no rule starts or ends this way
	}
	if templates[c] || strings.HasSuffix(c, ".pub") {
		return Plain, "" // placeholders, public keys
	}
	best, why := Plain, ""
	if r, ok := pol.exact[c]; ok {
		best, why = r.class, r.pattern
	}
	for _, r := range pol.wild {
		if r.class > best && matchName(r.pattern, c) {
			best, why = r.class, r.pattern
		}
	}
	return best, why
}

// matchName is path.Match for the only shapes the rules use: a literal,
// "prefix*" and "*suffix".
func matchName(pattern, c string) bool {
	switch {
	case strings.HasSuffix(pattern, "*"):
		return strings.HasPrefix(c, pattern[:len(pattern)-1])
	case strings.HasPrefix(pattern, "*"):
		return strings.HasSuffix(c, pattern[1:])
	}
	return c == pattern
}

// tailMatch reports whether the components of lp end with parts, or
// whether a directory on the way does (a file under .docker/config.json/
// is as denied as the file).
func tailMatch(lp string, parts []string) bool {
	if !strings.Contains(lp, parts[0]) {
		return false // cheap: most paths hold no tail's first name
	}
	comps := strings.Split(lp, "/")
	for end := len(parts); end <= len(comps); end++ {
		ok := true
		for i, pp := range parts {
			if !matchName(pp, comps[end-len(parts)+i]) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

type tailRule struct {
	rule
	parts []string
}

// ruleBytes returns the first bytes of literal and "prefix*" rules and
// the last bytes of literal and "*suffix" rules.
func ruleBytes(rules []rule) (first, last [256]bool) {
	for _, r := range rules {
		p := r.pattern
		if strings.Contains(p, "/") {
			continue
		}
		if !strings.HasPrefix(p, "*") {
			first[p[0]] = true
		}
		if !strings.HasSuffix(p, "*") {
			last[p[len(p)-1]] = true
		}
	}
	return first, last
}

// splitRules sorts the rules by shape, once per policy: literal names,
// names with a wildcard, and tails.
func splitRules(rules []rule) (map[string]rule, []rule, []tailRule) {
	exact := map[string]rule{}
	var wild []rule
	var tails []tailRule
	for _, r := range rules {
		switch {
		case strings.Contains(r.pattern, "/"):
			tails = append(tails, tailRule{r, strings.Split(r.pattern, "/")})
		case strings.Contains(r.pattern, "*"):
			wild = append(wild, r)
		default:
			if r.class > exact[r.pattern].class {
				exact[r.pattern] = r
			}
		}
	}
	return exact, wild, tails
}

// Examples are paths the base rules hold for credentials: the files an
// agent wrote into a workspace in the report that made this package. The
// packer's and the workspace's tests range over them and over an Example
// of every backend's credential pattern, so the two are shown to refuse
// the same files.
var Examples = []string{
	".env", "config/.env.local", "backup/credentials", ".aws/credentials.bak",
	"id_rsa.bak", ".ssh/id_ed25519_sk", "deploy_key", "server.key", "tls/key.pem",
	".npmrc", ".docker/config.json", ".kube/config", ".config/gh/hosts.yml",
	".pypirc", ".git-credentials", ".netrc", "id_ed25519", "prod.env",
}

// Example returns a path that pattern (in the rules' syntax) matches:
// the pattern with a wildcard filled in.
func Example(pattern string) string {
	switch {
	case strings.HasSuffix(pattern, "*"):
		return strings.TrimSuffix(pattern, "*")
	case strings.Contains(pattern, "*"):
		return strings.Replace(pattern, "*", "x", 1)
	}
	return pattern
}
