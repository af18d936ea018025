package packer

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/packer/archive"
	"github.com/tether-run/tether/internal/testenv/files"
)

// TestUnpackRefusesHostileArchives has one case per refusal. Every refused
// archive must leave the state root without a single file, and nothing may
// appear beside it.
func TestUnpackRefusesHostileArchives(t *testing.T) {
	cc := testBackend
	primary := file("project/"+testID+".jsonl", "{}\n")
	good := func(t testing.TB) []byte { return craft(t, cc, testID, primary) }

	cases := []struct {
		name   string
		limits Limits
		blob   func(t testing.TB) []byte
		// plant prepares the live root before the unpack and checks it after.
		plant func(t testing.TB, env agent.Env) func()
		want  error
	}{
		{name: "dot-dot", want: ErrUnsafePath, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, primary, file("../escaped", "x"))
		}},
		{name: "dot-dot inside a whitelisted dir", want: ErrUnsafePath, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, primary, file("project/"+testID+"/../../../escaped", "x"))
		}},
		{name: "absolute", want: ErrUnsafePath, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, primary, file("/tmp/escaped", "x"))
		}},
		{name: "unclean", want: ErrUnsafePath, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, file("project/./"+testID+".jsonl", "x"))
		}},
		{name: "symlink", want: ErrLinkEntry, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, tarEntry{name: "project/" + testID + ".jsonl", typeflag: tar.TypeSymlink, link: "/etc/passwd"})
		}},
		{name: "symlink in a session dir", want: ErrLinkEntry, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, primary, tarEntry{name: "tasks/" + testID + "/x", typeflag: tar.TypeSymlink, link: "../../.."})
		}},
		{name: "hardlink", want: ErrLinkEntry, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, primary, tarEntry{name: "tasks/" + testID + "/x", typeflag: tar.TypeLink, link: "/etc/passwd"})
		}},
		{name: "char device", want: ErrSpecialEntry, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, primary, tarEntry{name: "tasks/" + testID + "/null", typeflag: tar.TypeChar})
		}},
		{name: "block device", want: ErrSpecialEntry, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, primary, tarEntry{name: "tasks/" + testID + "/sda", typeflag: tar.TypeBlock})
		}},
		{name: "fifo", want: ErrSpecialEntry, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, primary, tarEntry{name: "tasks/" + testID + "/pipe", typeflag: tar.TypeFifo})
		}},
		{name: "outside whitelist", want: ErrNotWhitelisted, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, primary, file("project/"+otherID+".jsonl", "x"))
		}},
		{name: "outside whitelist, real path", want: ErrNotWhitelisted, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, file("projects/-x/"+testID+".jsonl", "x"))
		}},
		{name: "directory where the transcript goes", want: ErrNotWhitelisted, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, dir("project/"+testID+".jsonl"))
		}},
		{name: "denied file in a session dir", want: ErrDenied, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, primary, file("project/"+testID+"/.credentials.json", "x"))
		}},
		{name: "header backend mismatch", want: ErrHeaderMismatch, blob: func(t testing.TB) []byte {
			return craft(t, "codex", testID, primary)
		}},
		{name: "header id mismatch", want: ErrHeaderMismatch, blob: func(t testing.TB) []byte {
			return craft(t, cc, otherID, file("project/"+otherID+".jsonl", "x"))
		}},
		{name: "over total bytes", limits: Limits{MaxTotalBytes: 100}, want: ErrTooLarge, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, primary, file("tasks/"+testID+"/a", strings.Repeat("a", 60)), file("tasks/"+testID+"/b", strings.Repeat("b", 60)))
		}},
		{name: "over file count", limits: Limits{MaxFiles: 3}, want: ErrTooLarge, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, primary, dir("tasks/"+testID), file("tasks/"+testID+"/a", "a"), file("tasks/"+testID+"/b", "b"))
		}},
		{name: "over single-file size", limits: Limits{MaxFileBytes: 10}, want: ErrTooLarge, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, primary, file("tasks/"+testID+"/a", strings.Repeat("a", 11)))
		}},
		{name: "over the decompressed stream cap", limits: Limits{MaxTotalBytes: 1, MaxFiles: 1}, want: ErrTooLarge, blob: func(t testing.TB) []byte {
			// A compression bomb of zeros after the end of the archive.
			return wrap(t, Header{Backend: cc, SessionID: testID}, append(rawTar(t, []tarEntry{primary}), make([]byte, 8<<20)...))
		}},
		{name: "truncated stream", want: ErrCorrupt, blob: func(t testing.TB) []byte {
			b := craft(t, cc, testID, primary, file("tasks/"+testID+"/a", strings.Repeat("incompressible? no, but long enough ", 200)))
			return b[:len(b)-len(b)/3]
		}},
		{name: "corrupt zstd", want: ErrCorrupt, blob: func(t testing.TB) []byte {
			b := good(t)
			_, payload, _ := archive.Split(b)
			off := len(b) - len(payload)
			for i := off + 6; i < len(b); i += 3 {
				b[i] ^= 0x5a
			}
			return b
		}},
		{name: "not zstd at all", want: ErrCorrupt, blob: func(t testing.TB) []byte {
			var buf bytes.Buffer
			require.NoError(t, appendPrefix(&buf, Header{Backend: cc, SessionID: testID}))
			buf.Write(rawTar(t, []tarEntry{primary}))
			return buf.Bytes()
		}},
		{name: "bad magic", want: ErrCorrupt, blob: func(t testing.TB) []byte {
			b := good(t)
			copy(b, "NOTAPACK")
			return b
		}},
		{name: "empty blob", want: ErrCorrupt, blob: func(testing.TB) []byte { return nil }},
		{name: "unknown format version", want: ErrFormatVersion, blob: func(t testing.TB) []byte {
			b := good(t)
			b[len("TETHRPAK")+1] = 99
			return b
		}},
		{name: "header garbage", want: ErrCorrupt, blob: func(t testing.TB) []byte {
			b := good(t)
			b[archive.PrefixBytes] = '['
			return b
		}},
		{name: "header length past the end", want: ErrCorrupt, blob: func(t testing.TB) []byte {
			b := good(t)[:archive.PrefixBytes+4]
			return b
		}},
		{name: "trailing garbage after the frame", want: ErrCorrupt, blob: func(t testing.TB) []byte {
			return append(good(t), "garbage"...)
		}},
		{name: "data after the tar end", want: ErrCorrupt, blob: func(t testing.TB) []byte {
			return wrap(t, Header{Backend: cc, SessionID: testID}, append(rawTar(t, []tarEntry{primary}), "smuggled"...))
		}},
		{name: "duplicate entry", want: ErrCorrupt, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, primary, primary)
		}},
		{name: "no transcript", want: ErrCorrupt, blob: func(t testing.TB) []byte {
			return craft(t, cc, testID, file("tasks/"+testID+"/a", "a"))
		}},
		{name: "existing file not followed", want: ErrExists, blob: good,
			plant: func(t testing.TB, env agent.Env) func() {
				// A symlink where the transcript will go points at a file
				// outside the root; it must be neither followed nor
				// replaced.
				outside := filepath.Join(filepath.Dir(env.StateRoot), "outside.txt")
				require.NoError(t, os.WriteFile(outside, []byte("precious"), 0o644))
				dst := filepath.Join(env.StateRoot, "projects", slugOf(t, env), testID+".jsonl")
				require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
				require.NoError(t, os.Symlink(outside, dst))
				return func() {
					b, err := os.ReadFile(outside)
					require.NoError(t, err)
					assert.Equal(t, "precious", string(b))
					target, err := os.Readlink(dst)
					require.NoError(t, err)
					assert.Equal(t, outside, target)
				}
			}},
		{name: "symlinked project dir not followed", want: ErrExists, blob: good,
			plant: func(t testing.TB, env agent.Env) func() {
				outside := filepath.Join(filepath.Dir(env.StateRoot), "outside")
				require.NoError(t, os.MkdirAll(outside, 0o755))
				require.NoError(t, os.MkdirAll(filepath.Join(env.StateRoot, "projects"), 0o755))
				require.NoError(t, os.Symlink(outside, filepath.Join(env.StateRoot, "projects", slugOf(t, env))))
				return func() {
					entries, err := os.ReadDir(outside)
					require.NoError(t, err)
					assert.Empty(t, entries)
				}
			}},
		{name: "session id that is a path", want: ErrUnsafePath, blob: good},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := testEnv(t, "y")
			var check func()
			if c.plant != nil {
				check = c.plant(t, env)
			}
			before := files.Tree(t, filepath.Dir(env.StateRoot))
			id := testID
			if c.name == "session id that is a path" {
				id = "../" + testID
			}
			err := newTestPacker(env, c.limits).UnpackSession(ctx, id, c.blob(t))
			require.Error(t, err)
			assert.ErrorIs(t, err, c.want, "got %v", err)
			if check != nil {
				check()
			}
			assert.Equal(t, before, stripRoot(files.Tree(t, filepath.Dir(env.StateRoot)), before), "the unpack left something behind")
			assert.False(t, newTestPacker(env, Limits{}).HasSession(ctx, testID))
		})
	}
}

// stripRoot drops the empty state root directory the unpack may create.
func stripRoot(after, before []string) []string {
	had := map[string]bool{}
	for _, p := range before {
		had[p] = true
	}
	var out []string
	for _, p := range after {
		if p == "state/" && !had[p] {
			continue
		}
		out = append(out, p)
	}
	return out
}

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
