package treepolicy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClassifyCredentials(t *testing.T) {
	for _, p := range Examples {
		c, why := testPolicy.Classify(p)
		assert.NotEqual(t, Plain, c, p)
		assert.NotEmpty(t, why, p)
	}
	for p, want := range map[string]Class{
		".claude/.credentials.json": Login,
		"home/.codex/auth.json":     Login,
		".aws/credentials.bak":      Login,
		"ID_RSA":                    Login,
		"config/.env.local":         Secret,
		"tls/key.pem":               Secret,
		// Not what a walk makes, but no way around the rules either.
		"a//id_rsa":    Login,
		"/home/.netrc": Login,
	} {
		got, _ := testPolicy.Classify(p)
		assert.Equal(t, want, got, p)
	}
}

func TestClassifyLeavesOrdinaryFilesAlone(t *testing.T) {
	for _, p := range []string{
		"main.go", "auth.go", "internal/credentials.go", "keyboard.c", "docs/keys.md",
		".env.example", "config/settings.json", "Cargo.toml", ".kube/README.md",
		"gh/hosts.go", "pkg/key/key.go", "monkey", "id_rsa.pub", ".ssh/id_ed25519.pub",
	} {
		c, why := testPolicy.Classify(p)
		assert.Equal(t, Plain, c, "%s (%s)", p, why)
	}
}

// BenchmarkClassify is the cost a snapshot walk pays per file.
func BenchmarkClassify(b *testing.B) {
	for b.Loop() {
		testPolicy.Classify("internal/workspace/snapshot_test.go")
	}
}

// FuzzClassify: any path classifies without panicking, case never
// matters, and a backup suffix never makes a credential plain.
func FuzzClassify(f *testing.F) {
	for _, p := range Examples {
		f.Add(p)
	}
	f.Add("a/b/c.go")
	f.Add("~")
	f.Add(".bak")
	f.Fuzz(func(t *testing.T, p string) {
		c, _ := testPolicy.Classify(p)
		if u, _ := testPolicy.Classify(strings.ToUpper(p)); u != c && ascii(p) {
			t.Fatalf("%q is %v, its upper case %v", p, c, u)
		}
		if c != Plain {
			if b, _ := testPolicy.Classify(p + ".bak"); b == Plain {
				t.Fatalf("%q is %v, %q is plain", p, c, p+".bak")
			}
		}
	})
}

func ascii(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// testPolicy holds logins shaped like the backends' (the catalogue's
// tests check the real ones).
var testPolicy = New(".credentials.json*", ".claude.json*", ".codex/auth.json*", ".pi/agent/auth.json*", ".pi/agent/models.json*")

// The logins given to New are Login rules, and without them the same
// files are plain: the base list does not know any CLI.
func TestNewAddsLogins(t *testing.T) {
	for _, p := range []string{".claude/.credentials.json", ".claude.json", "home/.codex/auth.json", ".pi/agent/auth.json", ".pi/agent/models.json.bak"} {
		c, _ := testPolicy.Classify(p)
		assert.Equal(t, Login, c, p)
		c, _ = New().Classify(p)
		assert.Equal(t, Plain, c, p)
	}
	for _, pat := range []string{".codex/auth.json*", "*.tok", "token.json"} {
		c, _ := New(pat).Classify("a/" + Example(pat))
		assert.Equal(t, Login, c, pat)
	}
}

// Where two rules of the same class match, the reason named is the first
// one met: the outermost component before the ones under it, a one-name
// rule before a tail, and among name rules the first of the list. The
// reason reaches workspace_notes and `tether status`, so it must not
// change from one build to the next.
func TestClassifyNamesTheFirstRuleOfEqualClass(t *testing.T) {
	for p, want := range map[string]string{
		"x.pem/y.key":          "*.pem",   // outer component first
		"id_rsa2/.kube/config": "id_rsa*", // a name rule before a tail
		"id_rsa.pem":           "id_rsa*", // list order among name rules
		".env.prod.pem":        ".env.*",
	} {
		c, why := testPolicy.Classify(p)
		assert.Equal(t, Secret, c, p)
		assert.Equal(t, want, why, p)
	}
}

// A session policy refuses the state files it is made with and the
// public halves of keys, on top of the credential rules; the policy it
// is made from (a workspace's) names no state file.
func TestForSessions(t *testing.T) {
	ws := New(".tool/login.json*")
	s := ws.ForSessions("settings*.json", "backups")
	for _, p := range []string{"settings.json", "a/Settings.Local.JSON", "x/backups/y", "backups", "k/id_ed25519.pub"} {
		assert.True(t, s.State(p), p)
		assert.False(t, ws.State(p), p)
	}
	for _, p := range []string{"my-settings.jsonl", "backups-old/x", "notes.md"} {
		assert.False(t, s.State(p), p)
	}
	c, _ := s.Classify("h/.tool/login.json")
	assert.Equal(t, Login, c, "the credential rules stay")
	assert.False(t, New().ForSessions().State("settings.json"), "only what it is given")
}
