package activities

import (
	"context"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/claude"
	"github.com/tether-run/tether/internal/backend/cliexec"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/resolve"
	"github.com/tether-run/tether/internal/runstore"
)

// refAt mints a slot ref of run r1's writer whose ULID carries time t.
func refAt(t time.Time, entropy byte) string {
	id := ulid.ULID{}
	_ = id.SetTime(ulid.Timestamp(t))
	id[15] = entropy
	return runstore.SessionKey("r1", "writer", id.String())
}

// echoWriter is a persist writer whose reply is its prompt, which shows
// the session keys its input arrived with.
var echoWriter = graph.Node{
	ID: "writer", Kind: graph.KindAgent, Backend: "scripted", Session: graph.SessionPersist,
	Prompt: `visit {{.visit}} id=[{{with index .input "_session_id"}}{{.}}{{end}}] fp=[{{with index .input "_session_fingerprint"}}{{.}}{{end}}]`,
	Script: []string{"{{.Prompt}}"},
}

// twoSlots runs two visits of one persist conversation on one worker and
// returns both results: two valid archives of the same session.
func twoSlots(t *testing.T, store blob.Store, now time.Time) (*VisitResult, *VisitResult) {
	t.Helper()
	a := newActs(t, store)
	v1, err := a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: echoWriter, Backend: "scripted", PackTo: refAt(now, 1), Started: now})
	require.NoError(t, err)
	require.True(t, v1.Packed, v1.PackError)
	v2, err := a.Visit(context.Background(), &VisitRequest{
		RunID: "r1", NodeID: "writer", Visit: 2, Node: echoWriter, Backend: "scripted", Started: now,
		Session: &SessionPlan{Kind: "unpack_own_slot", SessionID: v1.SessionID, StateRef: v1.PackedTo, Digest: v1.PackDigest},
		PackTo:  refAt(now, 2),
	})
	require.NoError(t, err)
	require.True(t, v2.Packed, v2.PackError)
	require.Equal(t, v1.SessionID, v2.SessionID)
	return v1, v2
}

// visitOnNewWorker runs visit 3 of the writer on a worker with an empty
// root, planned to unpack ref with digest, its input carrying the session
// keys the plan set (as the workflow sends them).
func visitOnNewWorker(t *testing.T, store blob.Store, sessionID, ref, digest string) *VisitResult {
	t.Helper()
	b := newActs(t, store)
	res, err := b.Visit(context.Background(), &VisitRequest{
		RunID: "r1", NodeID: "writer", Visit: 3, Node: echoWriter, Backend: "scripted", Started: time.Now(),
		Input:   map[string]any{agent.SessionIDKey: sessionID, agent.SessionFingerprintKey: "fp-planned"},
		Session: &SessionPlan{Kind: "unpack_own_slot", SessionID: sessionID, StateRef: ref, Digest: digest, Stripped: map[string]any{}},
	})
	require.NoError(t, err)
	return res
}

// A bucket writer replaces a slot's blob with another valid archive of the
// same conversation: only the recorded digest tells them apart. The visit
// must refuse it, run fresh, and run with the session keys stripped.
func TestVisitRefusesASwappedArchive(t *testing.T) {
	ctx := context.Background()
	store := blob.NewMem()
	v1, v2 := twoSlots(t, store, time.Now())
	swapped, err := blob.GetBytes(ctx, store, v2.PackedTo)
	require.NoError(t, err)
	require.NoError(t, blob.PutBytes(ctx, store, v1.PackedTo, swapped))

	res := visitOnNewWorker(t, store, v1.SessionID, v1.PackedTo, v1.PackDigest)
	assert.Contains(t, res.SessionNote, "not the one the checkpoint recorded")
	assert.NotEqual(t, v1.SessionID, res.SessionID, "a swapped archive is never resumed")
	text, _ := res.Output["text"].(string)
	assert.Contains(t, text, "id=[] fp=[]", "the fresh visit must run with the session keys stripped")
	assert.NotContains(t, text, v1.SessionID)

	// The genuine blob is resumed, so the refusal above is the digest's.
	require.NoError(t, blob.PutBytes(ctx, store, v1.PackedTo, mustGet(t, store, v2.PackedTo)))
	res = visitOnNewWorker(t, store, v2.SessionID, v2.PackedTo, v2.PackDigest)
	assert.Empty(t, res.SessionNote)
	assert.Equal(t, v2.SessionID, res.SessionID)
}

func mustGet(t *testing.T, s blob.Store, key string) []byte {
	t.Helper()
	b, err := blob.GetBytes(context.Background(), s, key)
	require.NoError(t, err)
	return b
}

// An empty digest is "no digest" only for a slot packed before digests
// were recorded (its ref's ULID says when); on a newer slot it is refused,
// so a checkpoint that lost its digest cannot let a swapped archive in.
func TestVisitRefusesAMissingDigestOnANewSlot(t *testing.T) {
	store := blob.NewMem()
	v1, _ := twoSlots(t, store, digestsSince.Add(time.Hour))
	res := visitOnNewWorker(t, store, v1.SessionID, v1.PackedTo, "")
	assert.Contains(t, res.SessionNote, "no digest")
	assert.NotEqual(t, v1.SessionID, res.SessionID)

	old := blob.NewMem()
	o1, _ := twoSlots(t, old, digestsSince.Add(-24*time.Hour))
	res = visitOnNewWorker(t, old, o1.SessionID, o1.PackedTo, "")
	assert.Empty(t, res.SessionNote, "a slot from before digests resumes without one")
	assert.Equal(t, o1.SessionID, res.SessionID)
}

// A ref of another run is never read, whatever the checkpoint says.
func TestVisitRefusesAnotherRunsRef(t *testing.T) {
	ctx := context.Background()
	store := blob.NewMem()
	v1, _ := twoSlots(t, store, time.Now())
	foreign := strings.Replace(v1.PackedTo, "runs/r1/", "runs/r2/", 1)
	require.NoError(t, blob.PutBytes(ctx, store, foreign, mustGet(t, store, v1.PackedTo)))
	res := visitOnNewWorker(t, store, v1.SessionID, foreign, v1.PackDigest)
	assert.Contains(t, res.SessionNote, "not one of this run")
	assert.NotEqual(t, v1.SessionID, res.SessionID)
}

// On the fallback backend the planned session cannot continue: the visit
// runs with the session keys stripped from its input, not only without
// --resume.
func TestFallbackStripsTheSessionKeys(t *testing.T) {
	a := newActs(t, blob.NewMem())
	a.Backends = append(a.Backends, claude.New(claude.Options{Options: cliexec.Options{BinDir: t.TempDir()}}))
	node := echoWriter
	node.Backend, node.Fallback = "claude_code", []string{"scripted"}
	node.Prompt += ` topic=[{{index .input "topic"}}]`
	res, err := a.Visit(context.Background(), &VisitRequest{
		RunID: "r1", NodeID: "writer", Visit: 2, Node: node, Backend: "claude_code",
		Input:   map[string]any{agent.SessionIDKey: "claude-session", agent.SessionFingerprintKey: "fp", "topic": "x"},
		Session: &SessionPlan{Kind: "unpack_own_slot", SessionID: "claude-session", StateRef: refAt(time.Now(), 1), Stripped: map[string]any{"topic": "x"}},
		Started: time.Now(),
	})
	require.NoError(t, err)
	assert.Contains(t, res.SessionNote, "fallback")
	text, _ := res.Output["text"].(string)
	assert.Contains(t, text, "id=[] fp=[]")
	assert.Contains(t, text, "topic=[x]", "the input's other keys stay")
	assert.NotContains(t, text, "claude-session")
}

// endlessStore serves an endless blob at every session key and counts
// what it served.
type endlessStore struct {
	blob.Store
	served int64
}

func (e *endlessStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if !strings.Contains(key, "/sessions/") {
		return e.Store.Get(ctx, key)
	}
	return io.NopCloser(readerFunc(func(p []byte) (int, error) {
		if e.served > 64<<20 {
			return 0, errors.New("read far past any cap")
		}
		clear(p)
		e.served += int64(len(p))
		return len(p), nil
	})), nil
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// The restore activity of runs recorded before one-trip visits reads with
// the same cap as Visit: an endless object at a ref is refused as soon as
// it passes the cap, and a blob that differs from its digest, or a digest
// missing on a new ref, is refused.
func TestRestoreSessionIsCappedAndChecked(t *testing.T) {
	ctx := context.Background()
	endless := &endlessStore{Store: blob.NewMem()}
	a := newActs(t, endless)
	a.maxSessionBlob = 1 << 20
	_, err := a.RestoreSession(ctx, &RestoreRequest{RunID: "r1", Node: writer, Backend: "scripted", SessionID: "s", StateRef: refAt(time.Now(), 1)})
	assert.Equal(t, ErrTypeSessionUnavailable, appType(err), "%v", err)
	assert.ErrorIs(t, err, blob.ErrTooLarge)
	assert.Less(t, endless.served, int64(2<<20), "the read stops at the cap")

	store := blob.NewMem()
	v1, v2 := twoSlots(t, store, digestsSince.Add(time.Minute))
	b := newActs(t, store)
	req := &RestoreRequest{RunID: "r1", Node: echoWriter, Backend: "scripted", SessionID: v1.SessionID, StateRef: v1.PackedTo, Digest: v2.PackDigest}
	_, err = b.RestoreSession(ctx, req)
	assert.Equal(t, ErrTypeSessionUnavailable, appType(err), "a blob that differs from its digest: %v", err)
	req.Digest = ""
	_, err = b.RestoreSession(ctx, req)
	assert.Equal(t, ErrTypeSessionUnavailable, appType(err), "no digest on a new ref: %v", err)
	req.Digest = v1.PackDigest
	rr, err := b.RestoreSession(ctx, req)
	require.NoError(t, err)
	assert.True(t, rr.Present)
}

// A run id is a directory name under the work root: one that climbs out
// of it is refused before any directory is made.
func TestRunIDCannotLeaveTheWorkRoot(t *testing.T) {
	a := newActs(t, blob.NewMem())
	outside := filepath.Join(filepath.Dir(a.WorkDir), "escaped")
	for _, run := range []string{"../escaped", "../../x", "..", ".", "a/../../escaped", "/abs"} {
		_, err := a.liveEnv("scripted", run, graph.Node{ID: "n"})
		assert.Error(t, err, "run id %q", run)
		_, err = a.Visit(context.Background(), &VisitRequest{RunID: run, NodeID: "n", Node: graph.Node{ID: "n", Kind: graph.KindTool, Run: []string{"true"}}, Started: time.Now()})
		assert.Equal(t, ErrTypeBadRequest, appType(err), "run id %q: %v", run, err)
		_, err = a.RestoreSession(context.Background(), &RestoreRequest{RunID: run, Node: writer, Backend: "scripted", SessionID: "s"})
		assert.Equal(t, ErrTypeBadRequest, appType(err), "run id %q: %v", run, err)
	}
	_, err := os.Stat(outside)
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing was created outside the work root")
	_, err = a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "../n", Branch: true, Node: graph.Node{ID: "../n", Kind: graph.KindTool, Run: []string{"true"}}, Started: time.Now()})
	assert.Equal(t, ErrTypeBadRequest, appType(err), "a branch node id becomes a directory name too: %v", err)
}

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

// liveOn reports whether a's live root for run r1 holds the scripted
// session id: what a has-session check would answer there.
func liveOn(t *testing.T, a *Activities, id string) bool {
	t.Helper()
	b, ok := a.Backends.Get("scripted")
	require.True(t, ok)
	env := agent.Env{StateRoot: filepath.Join(a.StateDir, "runs", "r1", "scripted"), Workdir: filepath.Join(a.WorkDir, "r1")}
	return b.Packer(env).HasSession(context.Background(), id)
}

// spoil does to a blob what each case of the tests below needs: take it
// away, put another genuine archive of the same session in its place (its
// digest differs), or put bytes there that match the planned digest but
// do not unpack. It returns the digest to plan with.
type spoil struct {
	name, note string
	do         func(t *testing.T, store blob.Store, ref string, other []byte, planned string) string
}

var spoils = []spoil{
	{"missing", "gone from the store", func(t *testing.T, store blob.Store, ref string, _ []byte, planned string) string {
		require.NoError(t, store.Delete(context.Background(), ref))
		return planned
	}},
	{"swapped", "not the one the checkpoint recorded", func(t *testing.T, store blob.Store, ref string, other []byte, planned string) string {
		require.NoError(t, blob.PutBytes(context.Background(), store, ref, other))
		return planned
	}},
	{"does not unpack", "cannot be unpacked", func(t *testing.T, store blob.Store, ref string, _ []byte, _ string) string {
		garbage := []byte("not a session archive")
		require.NoError(t, blob.PutBytes(context.Background(), store, ref, garbage))
		return digestOf(garbage)
	}},
}

// eachSpoil runs test as a subtest for each spoil, on a store and a
// worker of its own.
func eachSpoil(t *testing.T, test func(t *testing.T, sp spoil, store blob.Store, a *Activities, now time.Time)) {
	for _, sp := range spoils {
		t.Run(sp.name, func(t *testing.T) {
			store := blob.NewMem()
			test(t, sp, store, newActs(t, store), time.Now())
		})
	}
}

// ADR-089 rows 19 and 20 on the worker that still holds the session live
// (same worker, same root): a planned slot whose blob is missing, swapped
// or does not unpack is never resumed through the live session (no
// fall-through to has-session). Here the plan names visit 1's slot (a
// rewind), while the worker's live session has moved on to visit 2's: the
// visit runs fresh, with the session keys stripped, and says why.
func TestRefusedSlotRunsFreshOnTheWorkerThatHoldsTheSession(t *testing.T) {
	eachSpoil(t, func(t *testing.T, sp spoil, store blob.Store, a *Activities, now time.Time) {
		v1, err := a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: echoWriter, Backend: "scripted", PackTo: refAt(now, 1), Started: now})
		require.NoError(t, err)
		v2, err := a.Visit(context.Background(), &VisitRequest{
			RunID: "r1", NodeID: "writer", Visit: 2, Node: echoWriter, Backend: "scripted", Started: now, PackTo: refAt(now, 2),
			Session: &SessionPlan{Kind: resolve.UnpackOwnSlot.String(), SessionID: v1.SessionID, StateRef: v1.PackedTo, Digest: v1.PackDigest},
		})
		require.NoError(t, err)
		require.Equal(t, v1.SessionID, v2.SessionID)
		digest := sp.do(t, store, v1.PackedTo, mustGet(t, store, v2.PackedTo), v1.PackDigest)
		require.True(t, liveOn(t, a, v1.SessionID), "the worker still holds the session live")

		res, err := a.Visit(context.Background(), &VisitRequest{
			RunID: "r1", NodeID: "writer", Visit: 2, Node: echoWriter, Backend: "scripted", Started: now,
			Input:   map[string]any{agent.SessionIDKey: v1.SessionID, agent.SessionFingerprintKey: v1.Fingerprint, "topic": "x"},
			Session: &SessionPlan{Kind: resolve.UnpackOwnSlot.String(), SessionID: v1.SessionID, Fingerprint: v1.Fingerprint, StateRef: v1.PackedTo, Digest: digest, Stripped: map[string]any{"topic": "x"}},
		})
		require.NoError(t, err)
		assert.Contains(t, res.SessionNote, sp.note)
		assert.Equal(t, res.SessionNote, res.Output[SessionNoteKey], "the output says why")
		assert.NotEqual(t, v1.SessionID, res.SessionID, "the live session is not resumed")
		assert.Equal(t, "visit 2 id=[] fp=[]", res.Output["text"], "no session keys reached the visit")
	})
}

// asksTwice asks on its first turn and again on its second; the third
// says it is done. A fresh conversation told a lost answer (a long
// prompt) says so instead. The prompt shows the session keys.
var asksTwice = graph.Node{
	ID: "writer", Kind: graph.KindAgent, Backend: "scripted", Session: graph.SessionPersist,
	Prompt: `pick id=[{{with index .input "_session_id"}}{{.}}{{end}}] fp=[{{with index .input "_session_fingerprint"}}{{.}}{{end}}]`,
	Script: []string{
		`{{if gt (len .Prompt) 60}}turn {{.Turn}}: fresh, told {{.Prompt}}{{else}}ASK: first?{{end}}`,
		`ASK: second?`,
		`turn {{.Turn}}: done`,
	},
}

// The same for a pause blob: the writer asked twice on this worker (pause
// blobs A, then B); a plan to answer from A (a run resumed from the
// checkpoint that named A) finds A missing, swapped or not unpacking. The
// worker still holds the session, now at B: the answer goes to a fresh
// conversation's prompt, never to the live session.
func TestRefusedPauseBlobRunsFreshOnTheWorkerThatHoldsTheSession(t *testing.T) {
	eachSpoil(t, func(t *testing.T, sp spoil, store blob.Store, a *Activities, now time.Time) {
		refA, refB := pauseRef(now, 1), pauseRef(now, 2)
		first, err := a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: asksTwice, Backend: "scripted", PauseTo: refA, Started: now})
		require.NoError(t, err)
		require.Len(t, first.Questions, 1)
		second, err := a.Visit(context.Background(), &VisitRequest{
			RunID: "r1", NodeID: "writer", Visit: 1, Node: asksTwice, Backend: "scripted", PauseTo: refB, Started: now,
			Session: &SessionPlan{Kind: resolve.UnpackPause.String(), SessionID: first.SessionID, StateRef: refA, Digest: first.PackDigest},
			Answer:  &agent.Answer{Text: "one"},
		})
		require.NoError(t, err)
		require.Len(t, second.Questions, 1, "the live session asked again")
		require.Equal(t, first.SessionID, second.SessionID)
		digest := sp.do(t, store, refA, mustGet(t, store, refB), first.PackDigest)
		require.True(t, liveOn(t, a, first.SessionID), "the worker still holds the session live")

		res, err := a.Visit(context.Background(), &VisitRequest{
			RunID: "r1", NodeID: "writer", Visit: 1, Node: asksTwice, Backend: "scripted", Started: now,
			Input:   map[string]any{agent.SessionIDKey: first.SessionID, agent.SessionFingerprintKey: first.Fingerprint},
			Session: &SessionPlan{Kind: resolve.UnpackPause.String(), SessionID: first.SessionID, Fingerprint: first.Fingerprint, StateRef: refA, Digest: digest, Stripped: map[string]any{}},
			Answer:  &agent.Answer{Text: "teal"},
		})
		require.NoError(t, err)
		assert.Contains(t, res.SessionNote, sp.note)
		assert.NotEqual(t, first.SessionID, res.SessionID, "the live session is not resumed")
		assert.Empty(t, res.Questions)
		text, _ := res.Output["text"].(string)
		assert.Contains(t, text, "turn 1: fresh, told pick id=[] fp=[]", "no session keys reached the visit")
		assert.Contains(t, text, LostAnswerIntro+"\nteal", "the answer is not lost")
	})
}

// A node whose graph says ask_user: false never leaves its run waiting on
// an answer: a backend that asks anyway (the script here) fails the
// visit, non-retryable, and no pause blob is written.
func TestANodeThatMayNotAskFailsWhenItAsks(t *testing.T) {
	store := blob.NewMem()
	never := asker
	never.AskUser = new(bool)
	ref := pauseRef(digestsSince.Add(time.Minute), 1)
	_, err := newActs(t, store).Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "writer", Visit: 1, Node: never, Backend: "scripted", PauseTo: ref, Started: time.Now()})
	require.Error(t, err)
	assert.Equal(t, ErrTypeBadRequest, appType(err), "%v", err)
	assert.Contains(t, err.Error(), "ask_user: false")
	_, err = store.Get(context.Background(), ref)
	assert.ErrorIs(t, err, blob.ErrNotFound, "no pause blob for an answer that never comes")
}
