package catalogue

import (
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/treepolicy"
)

// Every backend's login files are Login to the one policy, and nowhere
// else than in the backend's own facts (the base list knows no CLI).
func TestPolicyRefusesEveryBackendsLogins(t *testing.T) {
	for _, b := range All() {
		for _, c := range b.Credentials {
			for _, p := range []string{treepolicy.Example(c), "some/dir/" + treepolicy.Example(c), strings.ToUpper(treepolicy.Example(c)) + ".bak"} {
				got, why := Policy().Classify(p)
				assert.Equal(t, treepolicy.Login, got, "%s: %s (%s)", b.Name, p, why)
			}
		}
	}
	for _, p := range CredentialExamples() {
		got, _ := Policy().Classify(p)
		assert.NotEqual(t, treepolicy.Plain, got, p)
	}
}

// Every backend's state files are refused by the session policy, in any
// case and under any directory, and by no workspace: a repository may
// hold a settings.json. Each pattern is one path component that
// path.Match reads.
func TestSessionPolicyRefusesEveryBackendsState(t *testing.T) {
	for _, b := range All() {
		for _, s := range b.State {
			_, err := path.Match(s, "")
			require.NoError(t, err, "%s: state pattern %q", b.Name, s)
			assert.NotContains(t, s, "/", "%s: a state pattern is one path component", b.Name)
			for _, p := range []string{treepolicy.Example(s), "some/dir/" + strings.ToUpper(treepolicy.Example(s)), treepolicy.Example(s) + "/under/it"} {
				assert.True(t, SessionPolicy().State(p), "%s: %s", b.Name, p)
				assert.False(t, Policy().State(p), "%s: a workspace keeps %s", b.Name, p)
			}
		}
	}
	assert.NotEmpty(t, StateExamples())
	for _, p := range CredentialExamples() {
		got, _ := SessionPolicy().Classify(p)
		assert.NotEqual(t, treepolicy.Plain, got, "the session policy refuses every credential too: %s", p)
	}
}

// The facts are well formed: every implemented backend honours only
// known settings and maps every permission level.
func TestFactsAreWellFormed(t *testing.T) {
	assert.NotContains(t, Implemented(), "kimi", "kimi has no executor in this build")
	assert.Contains(t, Implemented(), "scripted")
	for _, b := range All() {
		if !b.Implemented {
			assert.False(t, b.Persist, b.Name)
			continue
		}
		for _, s := range b.Honours {
			assert.Contains(t, agent.AllSettings, s, b.Name)
		}
		// A backend that honours permissions maps every level; one that
		// does not has none to map (validation refuses the setting).
		for _, l := range Permissions() {
			if slices.Contains(b.Honours, agent.SettingPermissions) {
				assert.NotEmpty(t, b.Permissions[l], "%s: permission %s", b.Name, l)
			} else {
				assert.Empty(t, b.Permissions[l], "%s: permission %s", b.Name, l)
			}
		}
	}
	assert.False(t, ReportsCost("codex"))
	assert.True(t, ReportsCost("claude_code"))
	assert.False(t, HasPersist("kimi"))
	assert.False(t, HasPersist("grok"))
	assert.True(t, HasPersist("gemini"))
	assert.True(t, HasPersist("opencode"))
	assert.True(t, Honours("pi", agent.SettingTools))
	assert.False(t, Honours("codex", agent.SettingTools))
}

// No package of the DSL links an executor: graph validation and session
// resolution read the catalogue, which reads only each backend's facts.
func TestDSLLinksNoBackendImplementation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/tether-run/tether/internal/graph", "github.com/tether-run/tether/internal/resolve", "github.com/tether-run/tether/internal/catalogue").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	const mod = "github.com/tether-run/tether/internal/"
	for _, d := range deps {
		// A backend's facts and its session leaf (archive names and the
		// transcript reader) are leaves; its executor is not.
		if strings.HasPrefix(d, mod+"backend") && !strings.HasSuffix(d, "/facts") && !strings.HasSuffix(d, "/session") {
			t.Errorf("the DSL links %s", d)
		}
		for _, heavy := range []string{mod + "askuser", mod + "sessionlog/", mod + "packer", mod + "sandbox", "github.com/modelcontextprotocol/", "github.com/klauspost/compress"} {
			if strings.HasPrefix(d, heavy) {
				t.Errorf("the DSL links %s", d)
			}
		}
	}
	t.Logf("graph + resolve + catalogue: %d packages", len(deps))
}
