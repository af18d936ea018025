package packer

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/packer/archive"
)

// headerOf returns a header whose JSON is exactly n bytes.
func headerOf(t *testing.T, n int) Header {
	t.Helper()
	h := Header{Backend: "b", SessionID: "s"}
	js, err := json.Marshal(h)
	require.NoError(t, err)
	h.SourceWorkdir = strings.Repeat("w", n-len(js))
	js, err = json.Marshal(h)
	require.NoError(t, err)
	require.Len(t, js, n)
	return h
}

// A header of exactly the cap is written and read back, also with no
// payload after it; one byte more is refused on either side.
func TestHeaderCapIsInclusive(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, appendPrefix(&buf, headerOf(t, archive.MaxHeaderBytes)))
	h, payload, err := archive.Split(buf.Bytes())
	require.NoError(t, err, "a header of exactly the cap, ending the blob")
	assert.Equal(t, headerOf(t, archive.MaxHeaderBytes), h)
	assert.Empty(t, payload)

	buf.Reset()
	assert.ErrorIs(t, appendPrefix(&buf, headerOf(t, archive.MaxHeaderBytes+1)), ErrTooLarge)

	// A blob that claims a header one byte longer than the cap, or longer
	// than the blob, is corrupt.
	var ok bytes.Buffer
	require.NoError(t, appendPrefix(&ok, headerOf(t, 100)))
	b := ok.Bytes()
	b[len("TETHRPAK")+2+3]++ // header length 101: one past the blob's end
	_, _, err = archive.Split(b)
	assert.ErrorIs(t, err, ErrCorrupt)
	big := make([]byte, archive.PrefixBytes+archive.MaxHeaderBytes+1)
	copy(big, ok.Bytes()[:len("TETHRPAK")+2])
	big[len("TETHRPAK")+2], big[len("TETHRPAK")+3], big[len("TETHRPAK")+4], big[len("TETHRPAK")+5] = 0, 1, 0, 1 // 65537
	_, _, err = archive.Split(big)
	assert.ErrorIs(t, err, ErrCorrupt)
}

// A path of exactly MaxPathBytes bytes and MaxDepth directories on the
// way is taken; one byte or one directory more is refused.
func TestPathCapsAreInclusive(t *testing.T) {
	l := withDefaults(Limits{MaxPathBytes: 10, MaxDepth: 3})
	assert.NoError(t, checkPath(l, "abcdefghij"))
	assert.ErrorIs(t, checkPath(l, "abcdefghijk"), ErrTooDeep)
	assert.NoError(t, checkPath(l, "a/b/c/d"))
	assert.ErrorIs(t, checkPath(l, "a/b/c/d/e"), ErrTooDeep)
}

// Zero and negative fields take their defaults; set ones stay.
func TestLimitsDefaults(t *testing.T) {
	assert.Equal(t, DefaultLimits(), withDefaults(Limits{}))
	assert.Equal(t, DefaultLimits(), withDefaults(Limits{MaxTotalBytes: -1, MaxFiles: -1, MaxFileBytes: -1, MaxDepth: -1, MaxPathBytes: -1}))
	set := Limits{MaxTotalBytes: 1, MaxFiles: 2, MaxFileBytes: 3, MaxDepth: 4, MaxPathBytes: 5}
	assert.Equal(t, set, withDefaults(set))
}

// The cap on a blob read from the store, by the defaults: the files, a
// tar header per entry at the longest path, slack, and the prefix. A
// change to it changes what a worker refuses to read.
func TestMaxBlobBytes(t *testing.T) {
	want := int64(512<<20) + 10_000*(4096+2048) + 1<<20 + 64<<10 + int64(archive.PrefixBytes)
	assert.Equal(t, want, MaxBlobBytes(DefaultLimits()))
	assert.Equal(t, want, MaxBlobBytes(Limits{}))
	small := Limits{MaxTotalBytes: 1000, MaxFiles: 2, MaxFileBytes: 10, MaxDepth: 2, MaxPathBytes: 100}
	assert.Equal(t, int64(1000+2*(100+2048)+1<<20+64<<10+archive.PrefixBytes), MaxBlobBytes(small))
}

// Every stale part goes, not only the first: a session whose later copy
// lost both its task folder and its subagent folder is brought back to
// exactly that on a root that still holds both.
func TestUnpackRemovesEveryStalePart(t *testing.T) {
	a := testEnv(t, "x")
	slugA := seedSession(t, a, testID)
	b := testEnv(t, "y")
	pb := newTestPacker(b, Limits{})
	full, err := newTestPacker(a, Limits{}).PackSession(ctx, testID)
	require.NoError(t, err)
	require.NoError(t, pb.UnpackSession(ctx, testID, full))
	slugB := slugOf(t, b)
	require.DirExists(t, filepath.Join(b.StateRoot, "tasks", testID))
	require.DirExists(t, filepath.Join(b.StateRoot, "projects", slugB, testID))

	require.NoError(t, os.RemoveAll(filepath.Join(a.StateRoot, "tasks", testID)))
	require.NoError(t, os.RemoveAll(filepath.Join(a.StateRoot, "projects", slugA, testID)))
	bare, err := newTestPacker(a, Limits{}).PackSession(ctx, testID)
	require.NoError(t, err)
	require.NoError(t, pb.UnpackSession(ctx, testID, bare))
	assert.NoDirExists(t, filepath.Join(b.StateRoot, "tasks", testID))
	assert.NoDirExists(t, filepath.Join(b.StateRoot, "projects", slugB, testID))
	assert.True(t, pb.HasSession(ctx, testID))
}

// A blob of exactly the read cap is read (and here refused as corrupt);
// one byte more is refused as too large before it is looked at.
func TestBlobCapIsInclusive(t *testing.T) {
	l := Limits{MaxTotalBytes: 1, MaxFiles: 1, MaxFileBytes: 1, MaxDepth: 1, MaxPathBytes: 1}
	p := newTestPacker(testEnv(t, "x"), l)
	max := MaxBlobBytes(l)
	err := p.UnpackSession(ctx, testID, make([]byte, max))
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.NotErrorIs(t, err, ErrTooLarge)
	assert.ErrorIs(t, p.UnpackSession(ctx, testID, make([]byte, max+1)), ErrTooLarge)
}

// An archive of exactly MaxFiles entries (files and folders) unpacks; the
// hostile table has the same archive one over.
func TestFileCountCapIsInclusive(t *testing.T) {
	primary := file("project/"+testID+".jsonl", "{}\n")
	blob := craft(t, testBackend, testID, primary, dir("tasks/"+testID), file("tasks/"+testID+"/a", "a"), file("tasks/"+testID+"/b", "b"))
	require.NoError(t, newTestPacker(testEnv(t, "x"), Limits{MaxFiles: 4}).UnpackSession(ctx, testID, blob))
	assert.ErrorIs(t, newTestPacker(testEnv(t, "y"), Limits{MaxFiles: 3}).UnpackSession(ctx, testID, blob), ErrTooLarge)
}

// A file of exactly MaxFileBytes, and files totalling exactly
// MaxTotalBytes, unpack; a byte more of either is refused.
func TestSizeCapsAreInclusive(t *testing.T) {
	primary := file("project/"+testID+".jsonl", "{}\n") // 3 bytes
	one := func(n int) []byte {
		return craft(t, testBackend, testID, primary, file("tasks/"+testID+"/a", strings.Repeat("a", n)))
	}
	require.NoError(t, newTestPacker(testEnv(t, "a"), Limits{MaxFileBytes: 10}).UnpackSession(ctx, testID, one(10)))
	assert.ErrorIs(t, newTestPacker(testEnv(t, "b"), Limits{MaxFileBytes: 10}).UnpackSession(ctx, testID, one(11)), ErrTooLarge)
	require.NoError(t, newTestPacker(testEnv(t, "c"), Limits{MaxTotalBytes: 13}).UnpackSession(ctx, testID, one(10)))
	assert.ErrorIs(t, newTestPacker(testEnv(t, "d"), Limits{MaxTotalBytes: 12}).UnpackSession(ctx, testID, one(10)), ErrTooLarge)
}
