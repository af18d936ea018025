package packer

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/testenv/files"
	"github.com/tether-run/tether/internal/treepolicy"
)

// denyFiles is one file per deny-list entry.
var denyFiles = []string{
	".credentials.json",
	".claude.json",
	".claude.json.backup.1796043165636",
	"auth.json",
	"models.json",
	"settings.json",
	"config.toml",
	"installation_id",
	"state_5.sqlite",
	"state_5.sqlite-wal",
	"state_5.sqlite-shm",
	"backups/.claude.json.backup.1",
	"telemetry/events.json",
}

func containsDenied(names []string, deny string) bool {
	for _, n := range names {
		n = strings.TrimSuffix(n, "/")
		if n == deny || strings.HasSuffix(n, "/"+deny) || strings.HasPrefix(deny, "backups/") && strings.Contains("/"+n+"/", "/backups/") || strings.HasPrefix(deny, "telemetry/") && strings.Contains("/"+n+"/", "/telemetry/") {
			return true
		}
	}
	return false
}

// Deny-listed files present in the source root, and inside session
// directories a whitelist glob covers, never reach an archive; an archive
// crafted to hold one is refused.
func TestDenyList(t *testing.T) {
	for _, deny := range denyFiles {
		t.Run(deny, func(t *testing.T) { checkDenied(t, deny) })
	}
}

// The credential files of the shared policy, every backend's logins
// included, are refused exactly as a workspace snapshot refuses them
// (internal/workspace ranges over the same catalogue.CredentialExamples).
func TestDenyListIsThePolicys(t *testing.T) {
	for _, deny := range catalogue.CredentialExamples() {
		t.Run(deny, func(t *testing.T) { checkDenied(t, deny) })
	}
}

func checkDenied(t *testing.T, deny string) {
	{
		{
			env := testEnv(t, "x")
			slug := seedSession(t, env, testID)
			for _, dir := range []string{"", "projects/" + slug + "/", "projects/" + slug + "/" + testID + "/", "projects/" + slug + "/" + testID + "/subagents/", "tasks/" + testID + "/"} {
				files.Write(t, env.StateRoot, dir+deny, "secret")
			}
			blob, err := newTestPacker(env, Limits{}).PackSession(ctx, testID)
			require.NoError(t, err)
			names := entryNames(t, blob)
			assert.Contains(t, names, "project/"+testID+"/subagents/agent-a1.jsonl")
			assert.False(t, containsDenied(names, deny), "%v", names)
			assert.NotContains(t, string(blob), "secret")

			for _, name := range []string{deny, "project/" + testID + "/" + deny, "tasks/" + testID + "/" + deny, "project/" + deny} {
				target := testEnv(t, "y")
				err := newTestPacker(target, Limits{}).UnpackSession(ctx, testID, craft(t, testBackend, testID, file("project/"+testID+".jsonl", "{}"), file(name, "secret")))
				assert.ErrorIs(t, err, ErrNotWhitelisted, name)
				if strings.HasPrefix(name, "project/"+testID+"/") || strings.HasPrefix(name, "tasks/") {
					assert.ErrorIs(t, err, ErrDenied, name)
				}
				assert.Empty(t, files.List(t, target.StateRoot))
			}
		}
	}
}

func TestDenied(t *testing.T) {
	for _, p := range []string{"auth.json", "a/AUTH.JSON", "auth.json.txt", "x/backups/y", "telemetry", "a/b.sqlite-wal", ".claude.json.backup.2", "keys/id_ed25519.pub"} {
		assert.True(t, denied(p), p)
	}
	for _, p := range []string{"project/x.jsonl", "tasks/x/1.json", "my-backups/x", "sqlite"} {
		assert.False(t, denied(p), p)
	}
}

// The CLIs' state files are the backends' facts, handed to the packer in
// its policy: generic code names none. A packer made without a policy
// keeps to treepolicy's base rules (and the public halves of keys), and
// one given a policy refuses the state files that policy names.
func TestStateFilesComeWithThePolicy(t *testing.T) {
	bare := New(testBackend, agent.Env{}, Limits{}, Files(testPlaces))
	assert.True(t, bare.denied(".env"), "treepolicy's base rules")
	assert.True(t, bare.denied("x/id_rsa.pub"), "the public halves of keys")
	assert.False(t, bare.denied("settings.json"), "no backend's state without its facts")
	given := New(testBackend, agent.Env{}, Limits{}, Files(testPlaces), WithPolicy(treepolicy.New().ForSessions("settings*.json")))
	assert.True(t, given.denied("a/Settings.local.JSON"))
	assert.False(t, given.denied("auth.json"), "only what the policy names")
	for _, p := range catalogue.StateExamples() {
		assert.True(t, denied(p), "%s: every backend's state file, in every backend's archive", p)
	}
}
