package packer

import (
	"archive/tar"
	"bytes"
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
