package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/packer"
	"github.com/tether-run/tether/internal/treepolicy"
)

// fakeAnthropicKey is built at run time so this file holds no token a
// scanner would flag.
var fakeAnthropicKey = "sk-" + "ant-api03-" + strings.Repeat("Ab3dE", 19) + "AA"

// workerWith is env.worker with manager options.
func (e *env) workerWith(run string, opts ...Option) *Workspace {
	e.t.Helper()
	dir := e.t.TempDir()
	m := NewManager(filepath.Join(dir, "state"), e.blobs, Limits{}, nil, opts...)
	w, err := m.Open(context.Background(), run, filepath.Join(dir, "work"))
	require.NoError(e.t, err)
	e.t.Cleanup(w.Close)
	return w
}

// The report's case: credentials an agent writes into a workspace never
// reach a snapshot, each is named in the notes; the ones the run's source
// tracked travel; a hard link to a file outside is never read.
func TestSnapshotLeavesOutCredentialsAnAgentWrote(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	src := t.TempDir()
	write(t, src, map[string]string{
		"main.go":         "package main\n",
		"testdata/ca.pem": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
		"deploy/.env":     "PORT=8080\n",
	})
	base, rep, err := Import(ctx, e.blobs, "run-1", Source{From: src}, Limits{}, info("x").When)
	require.NoError(t, err)
	assert.Contains(t, strings.Join(rep.Notes, "\n"), "deploy/.env: a credential-shaped file (.env), kept: it comes from the run's source")

	a := e.worker("run-1")
	_, err = a.Restore(ctx, base)
	require.NoError(t, err)
	a.Touched()
	agent := map[string]string{"notes/todo.md": "use ANTHROPIC_API_KEY=" + fakeAnthropicKey + "\n"}
	for _, p := range catalogue.CredentialExamples() {
		agent[p] = "token"
	}
	agent[".env"] = "ANTHROPIC_API_KEY=" + fakeAnthropicKey + "\n"
	write(t, a.Dir(), agent)
	// A tracked file the agent fills with a key: the scanner has the last
	// word.
	write(t, a.Dir(), map[string]string{"deploy/.env": "KEY=" + fakeAnthropicKey + "\n"})
	outside := filepath.Join(t.TempDir(), "worker-secret")
	require.NoError(t, os.WriteFile(outside, []byte("the worker's own key"), 0o600))
	require.NoError(t, os.Link(outside, filepath.Join(a.Dir(), "innocent.txt")))

	s1, rep, err := a.Snapshot(ctx, base, info("writer visit 1"))
	require.NoError(t, err)
	notes := strings.Join(rep.Notes, "\n")
	for _, p := range append(catalogue.CredentialExamples(), "notes/todo.md", "innocent.txt", "deploy/.env") {
		assert.Contains(t, notes, p+": ", "every left-out file is named")
	}
	assert.NotContains(t, notes, fakeAnthropicKey)
	assert.NotContains(t, notes, "testdata/ca.pem", "a tracked certificate is kept")
	assert.Contains(t, strings.Join(s1.Notes, "\n"), "innocent.txt: ", "the checkpoint carries the notes for tether status")

	// A visit that only writes a credential makes no commit, but the
	// state it returns still says what was left out.
	a.Touched()
	_, err = a.Restore(ctx, s1)
	require.NoError(t, err)
	write(t, a.Dir(), map[string]string{"id_rsa": "key"})
	s2, rep, err := a.Snapshot(ctx, s1, info("writer visit 2"))
	require.NoError(t, err)
	assert.False(t, rep.Changed)
	assert.Equal(t, s1.Commit, s2.Commit)
	assert.Contains(t, s2.Notes, "id_rsa: a login credential file (id_rsa), not snapshotted (a snapshot keeps a credential only when the run's source tracked it)")
	assert.NotContains(t, s1.Notes, "id_rsa: a login credential file (id_rsa), not snapshotted (a snapshot keeps a credential only when the run's source tracked it)")

	b := e.worker("run-1")
	_, err = b.Restore(ctx, s1)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"main.go":         "package main\n",
		"testdata/ca.pem": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
	}, tree(t, b.Dir()))
}

// Under TETHER_REDACT=refuse the same files fail the snapshot, naming the
// file and never the value.
func TestSnapshotRefusesCredentialsUnderRefuse(t *testing.T) {
	ctx := context.Background()
	for name, files := range map[string]map[string]string{
		"by name":    {"a.go": "x", "tls/key.pem": "x"},
		"by content": {"a.go": "x", "notes.md": "key " + fakeAnthropicKey},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			w := e.workerWith("run-1", WithRedact(treepolicy.RedactRefuse))
			write(t, w.Dir(), files)
			_, _, err := w.Snapshot(ctx, nil, info("v1"))
			require.ErrorIs(t, err, ErrSecret)
			assert.NotContains(t, err.Error(), fakeAnthropicKey)
			assert.Contains(t, err.Error(), "TETHER_REDACT=detect")
		})
	}
}

// A directory swapped for a symlink after the walk cannot make the
// snapshot read a file outside the workspace.
func TestSnapshotReadsNoFileThroughASwappedDirectory(t *testing.T) {
	e := newEnv(t)
	w := e.worker("run-1")
	write(t, w.Dir(), map[string]string{"d/f": "mine"})
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "f"), []byte("the worker's"), 0o600))
	sc, err := scanTree(context.Background(), w.Dir(), scanOpts{})
	require.NoError(t, err)
	require.Len(t, sc.files, 1)
	require.NoError(t, os.RemoveAll(filepath.Join(w.Dir(), "d")))
	require.NoError(t, os.Symlink(outside, filepath.Join(w.Dir(), "d")))
	// Same size as the walk saw, so only the way in gives it away.
	require.NoError(t, os.WriteFile(filepath.Join(outside, "f"), []byte("them"), 0o600))
	content, err := readContent(w.Dir(), sc.files[0])
	require.Error(t, err)
	assert.NotEqual(t, "them", string(content))
}

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
