package runstore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/blobref"
)

const ulidA, ulidB = "01JD0000000000000000000000", "01jd0000000000000000000001"

func TestKeyShapes(t *testing.T) {
	if got, want := SessionKey("r1", "writer", ulidA), "runs/r1/sessions/writer/"+ulidA; got != want {
		t.Errorf("SessionKey = %q, want %q", got, want)
	}
	if got, want := PauseKey("r1", "writer", ulidA), "runs/r1/sessions/writer/pause/"+ulidA; got != want {
		t.Errorf("PauseKey = %q, want %q", got, want)
	}
	if got, want := checkpointKey("r1", 42), "runs/r1/checkpoints/00000000000000000042.json"; got != want {
		t.Errorf("checkpointKey = %q, want %q", got, want)
	}
	for _, c := range [][3]string{
		{"", "n", ulidA}, {".r", "n", ulidA}, {"r/x", "n", ulidA}, {"r", "", ulidA}, {"r", "a.b", ulidA},
		{"r", "a/b", ulidA}, {"r", "n", "pause"}, {"r", "n", ulidA + "0"}, {"r", "n", ulidA[:25] + "-"},
		{strings.Repeat("r", maxRunIDLen+1), "n", ulidA}, {"r", strings.Repeat("n", maxNodeIDLen+1), ulidA},
	} {
		if k := SessionKey(c[0], c[1], c[2]); k != "" {
			t.Errorf("SessionKey(%q) = %q, want \"\"", c, k)
		}
		if k := PauseKey(c[0], c[1], c[2]); k != "" {
			t.Errorf("PauseKey(%q) = %q, want \"\"", c, k)
		}
	}
	// An invalid id yields "", which no store accepts.
	err := blob.PutBytes(context.Background(), blob.NewMem(), SessionKey("r", "a/b", ulidA), []byte("x"))
	if !errors.Is(err, blob.ErrInvalidKey) {
		t.Errorf("Put to an invalid session key = %v, want blob.ErrInvalidKey", err)
	}
}

func TestParseRef(t *testing.T) {
	for _, c := range []struct {
		run, ref string
		kind     RefKind
		node     string
	}{
		{"r1", SessionKey("r1", "w", ulidA), RefSession, "w"},
		{"r1", PauseKey("r1", "w", ulidA), RefPause, "w"},
		{"r1", SessionKey("r1", "pause", ulidA), RefSession, "pause"},
		{"r1", PauseKey("r1", "pause", ulidA), RefPause, "pause"},
		{"r1", SessionKey("r10", "w", ulidA), RefInvalid, ""},
		{"r1", checkpointKey("r1", 1), RefInvalid, ""},
		{"r1", "runs/r1/sessions/w/x", RefInvalid, ""},
		{"r1", "runs/r1/sessions/w/pause", RefInvalid, ""},
		{"r1", "runs/r1/sessions/w/other/" + ulidA, RefInvalid, ""},
		{"r1", "runs/r1/sessions/../x/" + ulidA, RefInvalid, ""},
		{"r1", "", RefInvalid, ""},
	} {
		kind, node, err := ParseRef(c.run, c.ref)
		if kind != c.kind || node != c.node || (err == nil) != (c.kind != RefInvalid) {
			t.Errorf("ParseRef(%q, %q) = %v, %q, %v; want %v, %q", c.run, c.ref, kind, node, err, c.kind, c.node)
		}
	}
}

// TestKeysNeverNest checks the layout's central promise on a population of
// awkward ids: no key is another key plus "/…". The memory store refuses
// nesting like the filesystem and versitygw do, so every key must also fit
// in one store.
func TestKeysNeverNest(t *testing.T) {
	runs := []string{"r", "r1", "r1-x", "r1.x", "runs", "checkpoints", "sessions", "pause"}
	nodes := []string{"w", "pause", "sessions", "checkpoints", "writer", "writer-2", "_"}
	ids := []string{ulidA, ulidB}
	var keys []string
	for _, r := range runs {
		for seq := int64(1); seq <= 3; seq++ {
			keys = append(keys, checkpointKey(r, seq))
		}
		for _, n := range nodes {
			for _, id := range ids {
				keys = append(keys, SessionKey(r, n, id), PauseKey(r, n, id))
			}
		}
	}
	set := map[string]bool{}
	for _, k := range keys {
		if err := blob.ValidateKey(k); err != nil {
			t.Fatalf("%q: %v", k, err)
		}
		set[k] = true
	}
	for _, k := range keys {
		for i := range len(k) {
			if k[i] == '/' && set[k[:i]] {
				t.Errorf("%q nests under the key %q", k, k[:i])
			}
		}
	}
	s := blob.NewMem()
	for _, k := range keys {
		if err := blob.PutBytes(context.Background(), s, k, []byte(k)); err != nil {
			t.Fatalf("Put(%q): %v", k, err)
		}
	}
}

// A checkpoint whose workspace names something other than a git object id
// is refused on read: the ids reach git's command line.
func TestDecodeRefusesForgedWorkspaceIDs(t *testing.T) {
	good := strings.Repeat("ab", 20)
	for _, ws := range []WorkspaceState{
		{Commit: "--output=.bashrc"},
		{Commit: good, Base: "-p"},
		{Commit: good, Packs: []WorkspacePack{{Key: "k", Tip: "HEAD"}}},
		{Commit: good, Packs: []WorkspacePack{{Key: "k", Tip: good, Base: strings.ToUpper(good)}}},
		{Commit: good[:39]},
	} {
		b, err := Encode(&Checkpoint{RunID: "r", Seq: 1, Workspace: &ws})
		require.NoError(t, err)
		_, err = Decode(b)
		require.ErrorIs(t, err, ErrInvalidCheckpoint, "%+v", ws)
	}
	b, err := Encode(&Checkpoint{RunID: "r", Seq: 1, Workspace: &WorkspaceState{Commit: good, Base: strings.Repeat("0", 64)}})
	require.NoError(t, err)
	_, err = Decode(b)
	require.NoError(t, err)
}

// A checkpoint's branches are as untrusted as its workspace: a name
// reaches a worker's directory names and git refs, a commit git's command
// line. Forged ones are refused on read, in open and joined branches.
func TestDecodeRefusesForgedBranches(t *testing.T) {
	good := strings.Repeat("ab", 20)
	for _, b := range []BranchState{
		{Name: "../../etc"},
		{Name: "a/b"},
		{Name: "a..b"},
		{Name: ".hidden"},
		{Name: "--upload-pack=x"},
		{Name: ""},
		{Name: "ok", Join: "../j"},
		{Name: "ok", Base: "-p"},
		{Name: "ok", Workspace: &WorkspaceState{Commit: "--output=x"}},
	} {
		for _, cp := range []*Checkpoint{{RunID: "r", Seq: 1, Branches: []BranchState{b}}, {RunID: "r", Seq: 1, Joined: []BranchState{b}}} {
			raw, err := Encode(cp)
			require.NoError(t, err)
			_, err = Decode(raw)
			require.ErrorIs(t, err, ErrInvalidCheckpoint, "%+v", b)
		}
	}
	ok := BranchState{Name: "outer.inner-2", Join: "gather", JoinVisit: 3, Base: good, Workspace: &WorkspaceState{Commit: good}}
	raw, err := Encode(&Checkpoint{RunID: "r", Seq: 1, Joined: []BranchState{ok}})
	require.NoError(t, err)
	cp, err := Decode(raw)
	require.NoError(t, err)
	require.Equal(t, "gather-3/outer/inner-2", cp.Joined[0].Ref())
}

// Each id's length cap is inclusive, every digit and letter may stand in a
// session id, and checkpoint seq 0 is no checkpoint.
func TestIDBounds(t *testing.T) {
	require.NoError(t, ValidateRunID(strings.Repeat("r", maxRunIDLen)))
	require.ErrorIs(t, ValidateRunID(strings.Repeat("r", maxRunIDLen+1)), ErrInvalidID)
	require.NoError(t, ValidateNodeID(strings.Repeat("n", maxNodeIDLen)))
	require.ErrorIs(t, ValidateNodeID(strings.Repeat("n", maxNodeIDLen+1)), ErrInvalidID)
	for _, id := range []string{"09azAZ09azAZ09azAZ09azAZ09", strings.Repeat("0", 26), strings.Repeat("9", 26), strings.Repeat("z", 26), strings.Repeat("Z", 26)} {
		require.True(t, validSessionID(id), id)
	}
	for _, id := range []string{strings.Repeat("0", 25), strings.Repeat("0", 27), strings.Repeat("0", 25) + "/", strings.Repeat("0", 25) + "_"} {
		require.False(t, validSessionID(id), id)
	}
	seq, ok := parseCheckpointName(strings.Repeat("0", seqDigits-1) + "1" + checkpointSuffix)
	require.True(t, ok)
	require.Equal(t, int64(1), seq)
	_, ok = parseCheckpointName(strings.Repeat("0", seqDigits) + checkpointSuffix)
	require.False(t, ok, "seq 0")
}

// A digest is 64 lower-case hex digits, every one of them checked.
func TestValidDigestChecksEveryDigit(t *testing.T) {
	require.True(t, validDigest(strings.Repeat("0", 32)+strings.Repeat("9", 16)+strings.Repeat("af", 8)))
	for _, d := range []string{
		strings.Repeat("0", 63), strings.Repeat("0", 65),
		strings.Repeat("0", 63) + "/", strings.Repeat("0", 63) + "g", strings.Repeat("0", 63) + "A",
		"../" + strings.Repeat("0", 61), strings.Repeat("0", 63) + ":", strings.Repeat("0", 63) + "`",
	} {
		require.False(t, validDigest(d), d)
	}
}

// TestEveryKeyIsHidden: every kind of key the store's layout mints, for
// run ids of every allowed shape, is one that internal/blobref hides from
// notes and pages, so a new kind of key cannot reach an output unseen.
func TestEveryKeyIsHidden(t *testing.T) {
	digest := strings.Repeat("ab", 32)
	for _, run := range []string{"r1", "run.with.dots", "A-b_c", strings.Repeat("x", maxRunIDLen)} {
		for _, k := range []string{
			SessionKey(run, "writer", ulidA),
			PauseKey(run, "writer", ulidA),
			AttemptKey(SessionKey(run, "writer", ulidA), 2),
			AttemptKey(PauseKey(run, "pause", ulidA), 3),
			checkpointKey(run, 42),
			WorkspacePackKey(run, digest),
			pathBlockKey(run, digest),
		} {
			require.NotEmpty(t, k)
			for _, text := range []string{k, "blob: get " + k + ": EIO", `"` + k + `"`, "/var/store/" + k} {
				require.True(t, blobref.In(text), "%q", text)
				require.NotContains(t, blobref.Hide(text), k)
				require.NotContains(t, blobref.Hide(text), run+"/")
			}
		}
	}
}
