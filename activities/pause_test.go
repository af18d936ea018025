package activities

import (
	"context"
	"path"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/resolve"
	"github.com/tether-run/tether/internal/runstore"
)

// asker asks the user on its first turn unless its prompt carries an
// answer from a lost conversation (a long prompt); resumed with the
// answer, it says what it heard. Its prompt shows the session keys its
// input arrived with.
var asker = graph.Node{
	ID: "writer", Kind: graph.KindAgent, Backend: "scripted", Session: graph.SessionPersist,
	Prompt: `pick id=[{{with index .input "_session_id"}}{{.}}{{end}}] fp=[{{with index .input "_session_fingerprint"}}{{.}}{{end}}]`,
	Script: []string{
		`{{if gt (len .Prompt) 60}}turn {{.Turn}}: fresh, told {{.Prompt}}{{else}}ASK: which color?{{end}}`,
		`turn {{.Turn}}: painted it {{.Prompt}}`,
	},
}

// pauseRef mints a pause ref of run r1's writer whose ULID carries t.
func pauseRef(t time.Time, entropy byte) string {
	ref := refAt(t, entropy)
	return runstore.PauseKey("r1", "writer", path.Base(ref))
}

// answerOnNewWorker answers the writer's question on a worker with an
// empty root, planned to unpack the pause ref with digest.
func answerOnNewWorker(t *testing.T, store blob.Store, sessionID, ref, digest string) *VisitResult {
	t.Helper()
	res, err := newActs(t, store).Visit(context.Background(), &VisitRequest{
		RunID: "r1", NodeID: "writer", Visit: 1, Node: asker, Backend: "scripted", Started: time.Now(),
		Input:   map[string]any{agent.SessionIDKey: sessionID, agent.SessionFingerprintKey: "fp-planned"},
		Session: &SessionPlan{Kind: resolve.UnpackPause.String(), SessionID: sessionID, StateRef: ref, Digest: digest, Stripped: map[string]any{}},
		Answer:  &agent.Answer{Text: "teal"},
		PackTo:  refAt(time.Now(), 9),
	})
	require.NoError(t, err)
	return res
}

// A pause ref whose blob is there but corrupt (overwritten, or packed
// wrong) is never resumed (ADR-089, resolution order 1): the visit notes
// why, runs a fresh conversation with the session keys stripped from its
// input, and hands that conversation the human's answer, so it is not
// lost. The genuine blob resumes, so each refusal is the corruption's.
func TestCorruptPauseBlobRunsFreshWithTheAnswer(t *testing.T) {
	ctx := context.Background()
	store := blob.NewMem()
	// Minted after digests were recorded, so a digest is required of it.
	ref := pauseRef(digestsSince.Add(time.Minute), 1)
	asked, err := newActs(t, store).Visit(ctx, &VisitRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: asker, Backend: "scripted", PauseTo: ref, Started: time.Now()})
	require.NoError(t, err)
	require.Len(t, asked.Questions, 1)
	require.True(t, asked.Packed, asked.PackError)
	require.Equal(t, ref, asked.PackedTo)
	genuine := mustGet(t, store, ref)

	res := answerOnNewWorker(t, store, asked.SessionID, ref, asked.PackDigest)
	require.Empty(t, res.SessionNote)
	assert.Equal(t, asked.SessionID, res.SessionID)
	assert.Equal(t, "turn 2: painted it teal", res.Output["text"])

	garbage := []byte("not a session archive at all")
	for _, tc := range []struct {
		name, digest, note string
	}{
		{"overwritten: differs from its digest", asked.PackDigest, "not the one the checkpoint recorded"},
		{"packed corrupt: matches its digest, does not unpack", digestOf(garbage), "cannot be unpacked"},
		{"no digest on a ref minted after digests", "", "no digest"},
		{"truncated archive", digestOf(genuine[:len(genuine)/2]), "cannot be unpacked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := garbage
			if tc.name == "truncated archive" {
				data = genuine[:len(genuine)/2]
			}
			require.NoError(t, blob.PutBytes(ctx, store, ref, data))
			res := answerOnNewWorker(t, store, asked.SessionID, ref, tc.digest)
			assert.Contains(t, res.SessionNote, tc.note)
			assert.Equal(t, res.SessionNote, res.Output[SessionNoteKey])
			assert.NotEqual(t, asked.SessionID, res.SessionID, "a corrupt pause blob is never resumed")
			assert.Empty(t, res.Questions, "the fresh conversation got the answer and did not ask again")
			text, _ := res.Output["text"].(string)
			assert.Contains(t, text, "turn 1: fresh, told pick id=[] fp=[]", "the fresh visit runs with the session keys stripped")
			assert.Contains(t, text, LostAnswerIntro+"\nteal")
			assert.NotContains(t, text, asked.SessionID)
		})
	}
}
