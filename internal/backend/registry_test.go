package backend_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/packer/packertest"
)

// The catalogue and the worker's backends are one registry: every backend
// the catalogue says this build runs has an executor on the worker, no
// executor is missing from the catalogue, and a backend has the persist
// capability exactly when it has a session packer.
func TestCatalogueAndWorkerBackendsAgree(t *testing.T) {
	bs, err := backend.New(backend.Config{})
	require.NoError(t, err)
	var names []string
	for _, b := range bs {
		names = append(names, b.Name())
		info, ok := catalogue.Lookup(b.Name())
		require.True(t, ok, "%s is not in the catalogue", b.Name())
		assert.True(t, info.Implemented, "%s runs but the catalogue says it is not implemented", b.Name())
		env := agent.Env{StateRoot: t.TempDir(), Workdir: t.TempDir()}
		assert.Equal(t, info.Persist, b.Packer(env) != nil, "%s: persist capability and packer disagree", b.Name())
	}
	assert.ElementsMatch(t, catalogue.Implemented(), names)
}

// A worker's backend configuration holds the model endpoints' keys; a log
// line or a printed value of it names which backends have one, never the
// key.
func TestConfigNeverShowsKeys(t *testing.T) {
	const key = "sk-ant-api03-tether-test-key-0123456789"
	cfg := backend.Config{CLIBin: "/opt/bin", Vars: map[string]map[string]string{
		"claude_code": {"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": "http://model"},
		"codex":       {"OPENAI_API_KEY": key},
		"elsewhere":   {"WHATEVER": key},
	}}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("backends", "config", cfg)
	for _, s := range []string{buf.String(), fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%v", struct{ C backend.Config }{cfg})} {
		assert.NotContains(t, s, key)
		assert.Contains(t, s, "/opt/bin")
		assert.Contains(t, s, "codex")
		assert.Contains(t, s, "http://model")
	}
}

// Each backend's facts say which settings it honours, and its executor
// applies exactly those: setting one it honours changes the fingerprint
// of a visit (what the model sees or may do), setting one it does not
// leaves it as it was. So the catalogue cannot claim a setting an
// executor drops, nor miss one it applies.
func TestHonoursIsWhatTheExecutorsApply(t *testing.T) {
	bs, err := backend.New(backend.Config{})
	require.NoError(t, err)
	set := map[string]agent.Settings{
		agent.SettingPermissions:        {Permissions: agent.PermissionReadOnly},
		agent.SettingTools:              {Tools: []string{"read"}},
		agent.SettingDisallowedTools:    {DisallowedTools: []string{"bash"}},
		agent.SettingSystemPrompt:       {SystemPrompt: "be brief"},
		agent.SettingAppendSystemPrompt: {AppendSystemPrompt: "and kind"},
	}
	require.Len(t, set, len(agent.AllSettings))
	for _, b := range bs {
		info, _ := catalogue.Lookup(b.Name())
		env := agent.Env{StateRoot: t.TempDir(), Workdir: t.TempDir()}
		plain := b.Fingerprint(agent.Request{Env: env})
		for _, s := range agent.AllSettings {
			changed := b.Fingerprint(agent.Request{Env: env, Settings: set[s]}) != plain
			assert.Equal(t, catalogue.Honours(b.Name(), s), changed, "%s: setting %s; its facts honour %v", b.Name(), s, info.Honours)
		}
	}
}

// The registry hands every backend's packer the policy built from all
// backends' facts: an archive holding any backend's state file is refused
// by every backend's packer, whichever CLI the file belongs to (the
// packer itself names none).
func TestEveryPackerRefusesEveryBackendsState(t *testing.T) {
	bs, err := backend.New(backend.Config{})
	require.NoError(t, err)
	checked := 0
	for _, b := range bs {
		p := b.Packer(agent.Env{StateRoot: t.TempDir(), Workdir: t.TempDir()})
		if p == nil {
			continue
		}
		for _, state := range catalogue.StateExamples() {
			blob := packertest.Craft(t, b.Name(), packertest.ID, packertest.File{Name: state, Body: "private"})
			assert.ErrorIs(t, p.UnpackSession(context.Background(), packertest.ID, blob), packer.ErrDenied, "%s: %s", b.Name(), state)
			checked++
		}
	}
	assert.Greater(t, checked, len(catalogue.StateExamples()), "more than one backend checked")
}
