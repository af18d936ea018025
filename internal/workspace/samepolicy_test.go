package workspace

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/packer"
)

// A credential file is refused identically by a session pack and by a
// workspace snapshot: for every path of the base list and every
// backend's login files, an agent that writes it beside an ordinary file
// sees the ordinary file travel and the credential stay behind, in both
// engines (the packer with the policy every worker gives its backends).
func TestPackAndSnapshotRefuseTheSameCredentials(t *testing.T) {
	ctx := context.Background()
	const id = "0b7c9b1e-5f7e-4a4e-9f57-2b6f2c1d7a10"
	places := func(_ agent.Env, id string) ([]packer.Place, error) {
		return []packer.Place{
			{Name: "log/" + id + ".jsonl", Path: "sessions/" + id + ".jsonl", Primary: true},
			{Name: "files/" + id, Path: "files/" + id, Dir: true},
		}, nil
	}
	for _, cred := range catalogue.CredentialExamples() {
		t.Run(cred, func(t *testing.T) {
			// The session pack.
			base := t.TempDir()
			a := agent.Env{StateRoot: filepath.Join(base, "a")}
			write(t, a.StateRoot, map[string]string{
				"sessions/" + id + ".jsonl": "turn\n",
				"files/" + id + "/notes.md": "plain\n",
				"files/" + id + "/" + cred:  "secret",
			})
			blob, err := packer.New("scripted", a, packer.Limits{}, packer.Files(places), packer.WithPolicy(catalogue.SessionPolicy())).PackSession(ctx, id)
			require.NoError(t, err)
			b := agent.Env{StateRoot: filepath.Join(base, "b")}
			require.NoError(t, packer.New("scripted", b, packer.Limits{}, packer.Files(places), packer.WithPolicy(catalogue.SessionPolicy())).UnpackSession(ctx, id, blob))
			packed := tree(t, b.StateRoot)

			// The workspace snapshot.
			e := newEnv(t)
			w := e.worker("run-1")
			_, err = w.Restore(ctx, nil)
			require.NoError(t, err)
			w.Touched()
			write(t, w.Dir(), map[string]string{"notes.md": "plain\n", cred: "secret"})
			s, rep, err := w.Snapshot(ctx, nil, info("agent wrote a credential"))
			require.NoError(t, err)
			r := e.worker("run-1")
			_, err = r.Restore(ctx, s)
			require.NoError(t, err)
			snapped := tree(t, r.Dir())

			assert.Equal(t, "plain\n", packed["files/"+id+"/notes.md"])
			assert.Equal(t, "plain\n", snapped["notes.md"])
			_, inPack := packed["files/"+id+"/"+cred]
			_, inSnapshot := snapped[cred]
			assert.False(t, inPack, "the pack carried %s", cred)
			assert.False(t, inSnapshot, "the snapshot carried %s", cred)
			assert.NotEmpty(t, noteFor(rep.Notes, cred), "the snapshot names what it left out: %v", rep.Notes)
		})
	}
}

// noteFor is the note about p, or "" when there is none.
func noteFor(notes []string, p string) string {
	for _, n := range notes {
		if len(n) > len(p) && n[:len(p)+1] == p+":" {
			return n
		}
	}
	return ""
}
