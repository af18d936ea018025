package scripted

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/sessionlog/jsonl"
)

// session runs one visit and returns its id, the env and the packed blob.
func session(t *testing.T) (string, backend.Env, []byte) {
	t.Helper()
	b := New(Options{})
	e := env(t)
	res := run(t, b, backend.Request{Prompt: "p", Env: e})
	blob, err := b.Packer(e).PackSession(ctx, res.SessionID)
	require.NoError(t, err)
	return res.SessionID, e, blob
}

func TestPackUnpackRoundTrip(t *testing.T) {
	id, e, blob := session(t)
	b := New(Options{})
	again, err := b.Packer(e).PackSession(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, blob, again, "packing is deterministic")

	dst := backend.Env{StateRoot: filepath.Join(t.TempDir(), "fresh"), Workdir: "/elsewhere"}
	p := b.Packer(dst)
	assert.False(t, p.HasSession(ctx, id))
	require.NoError(t, p.UnpackSession(ctx, id, blob))
	assert.True(t, p.HasSession(ctx, id))
	src, err := os.ReadFile(filepath.Join(SessionsDir(e.StateRoot), jsonl.RelPath(e.Workdir, id)))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(SessionsDir(dst.StateRoot), jsonl.RelPath(e.Workdir, id)))
	require.NoError(t, err)
	assert.Equal(t, src, got)
	require.NoError(t, p.UnpackSession(ctx, id, blob), "unpacking twice is harmless")

	res := run(t, b, backend.Request{Prompt: "q", SessionID: id, Env: dst})
	assert.Equal(t, "turn 2: q", res.Text)
	// Restoring the older archive over the newer live file rolls it back.
	require.NoError(t, p.UnpackSession(ctx, id, blob))
	res = run(t, b, backend.Request{Prompt: "r", SessionID: id, Env: dst})
	assert.Equal(t, "turn 2: r", res.Text)
}

func TestPackMissingIsNoSession(t *testing.T) {
	p := New(Options{}).Packer(env(t))
	_, err := p.PackSession(ctx, "sc-missing")
	require.ErrorIs(t, err, backend.ErrNoSession)
	_, err = p.PackSession(ctx, "../x")
	require.ErrorIs(t, err, backend.ErrNoSession)
	assert.False(t, p.HasSession(ctx, "../x"))
}

func TestUnpackRemovesAStaleCopyInAnotherBucket(t *testing.T) {
	id, e, blob := session(t)
	b := New(Options{})
	// The same session, copied earlier into another bucket.
	staleDir := filepath.Join(SessionsDir(e.StateRoot), jsonl.Bucket("/old"))
	require.NoError(t, os.MkdirAll(staleDir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(staleDir, id+".jsonl"), []byte("stale"), 0o600))
	require.NoError(t, b.Packer(e).UnpackSession(ctx, id, blob))
	_, err := os.Stat(filepath.Join(staleDir, id+".jsonl"))
	require.ErrorIs(t, err, os.ErrNotExist)
	run(t, b, backend.Request{Prompt: "q", SessionID: id, Env: e})
}

type entry struct {
	hdr  tar.Header
	data []byte
}

// craft builds an archive by hand: a manifest listing files (digests
// computed from their data unless given) and then the raw entries.
func craft(t *testing.T, m manifest, entries ...entry) []byte {
	t.Helper()
	mb, err := json.Marshal(m)
	require.NoError(t, err)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	all := append([]entry{{hdr: tar.Header{Name: manifestName, Typeflag: tar.TypeReg}, data: mb}}, entries...)
	for _, e := range all {
		h := e.hdr
		h.Mode, h.ModTime = 0o600, time.Unix(0, 0)
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.data))
		}
		require.NoError(t, tw.WriteHeader(&h))
		if h.Typeflag == tar.TypeReg {
			_, err := tw.Write(e.data)
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func fileOf(p string, data []byte) manifestFile {
	sum := sha256.Sum256(data)
	return manifestFile{Path: p, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
}

func TestUnpackRefusesUnsafeArchives(t *testing.T) {
	id, e, blob := session(t)
	_, files, err := decodeArchive(blob)
	require.NoError(t, err)
	good := files[0]
	reg := func(name string, data []byte) entry {
		return entry{hdr: tar.Header{Name: name, Typeflag: tar.TypeReg}, data: data}
	}
	m := func(files ...manifestFile) manifest {
		return manifest{Format: archiveFormat, Backend: backend.Scripted, SessionID: id, Files: files}
	}
	other := "sc-OTHER"
	otherLog := bytes.Replace(good.Data, []byte(id), []byte(other), 1)
	auth := []byte(`{"token":"secret"}`)
	cases := map[string][]byte{
		"wrong session in manifest": craft(t, manifest{Format: archiveFormat, Backend: backend.Scripted, SessionID: other, Files: []manifestFile{fileOf(good.Path, good.Data)}}, reg(good.Path, good.Data)),
		"wrong backend":             craft(t, manifest{Format: archiveFormat, Backend: backend.ClaudeCode, SessionID: id, Files: []manifestFile{fileOf(good.Path, good.Data)}}, reg(good.Path, good.Data)),
		"unknown format":            craft(t, manifest{Format: "v0", Backend: backend.Scripted, SessionID: id, Files: []manifestFile{fileOf(good.Path, good.Data)}}, reg(good.Path, good.Data)),
		"dot-dot path":              craft(t, m(fileOf("sessions/../../evil.jsonl", good.Data)), reg("sessions/../../evil.jsonl", good.Data)),
		"absolute path":             craft(t, m(fileOf("/tmp/evil.jsonl", good.Data)), reg("/tmp/evil.jsonl", good.Data)),
		"credentials file":          craft(t, m(fileOf("auth.json", auth)), reg("auth.json", auth)),
		"extra credentials file":    craft(t, m(fileOf(good.Path, good.Data), fileOf("auth.json", auth)), reg(good.Path, good.Data), reg("auth.json", auth)),
		"another session's file":    craft(t, m(fileOf("sessions/_no-cwd/"+other+".jsonl", otherLog)), reg("sessions/_no-cwd/"+other+".jsonl", otherLog)),
		"log of another session":    craft(t, m(fileOf(good.Path, otherLog)), reg(good.Path, otherLog)),
		"invalid bucket":            craft(t, m(fileOf("sessions/bucket/"+id+".jsonl", good.Data)), reg("sessions/bucket/"+id+".jsonl", good.Data)),
		"log in the wrong bucket":   craft(t, m(fileOf("sessions/_no-cwd/"+id+".jsonl", good.Data)), reg("sessions/_no-cwd/"+id+".jsonl", good.Data)),
		"symlink entry":             craft(t, m(fileOf(good.Path, good.Data)), entry{hdr: tar.Header{Name: good.Path, Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}),
		"hardlink entry":            craft(t, m(fileOf(good.Path, good.Data)), entry{hdr: tar.Header{Name: good.Path, Typeflag: tar.TypeLink, Linkname: "/etc/passwd"}}),
		"entry not in manifest":     craft(t, m(fileOf(good.Path, good.Data)), reg(good.Path, good.Data), reg("sessions/x", nil)),
		"digest mismatch":           craft(t, m(manifestFile{Path: good.Path, Size: int64(len(good.Data)), SHA256: hex.EncodeToString(make([]byte, 32))}), reg(good.Path, good.Data)),
		"size mismatch":             craft(t, m(fileOf(good.Path, good.Data[:10])), reg(good.Path, good.Data)),
		"missing file":              craft(t, m(fileOf(good.Path, good.Data))),
		"no files":                  craft(t, m()),
		"truncated":                 blob[:len(blob)/2],
		"not an archive":            []byte("hello"),
		"empty":                     nil,
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			dst := t.TempDir()
			err := New(Options{}).Packer(backend.Env{StateRoot: dst}).UnpackSession(ctx, id, bad)
			require.Error(t, err)
			var left []string
			require.NoError(t, filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
				if err == nil && !fi.IsDir() {
					left = append(left, p)
				}
				return err
			}))
			assert.Empty(t, left, "a refused archive writes nothing")
		})
	}
	_ = e
}

func TestUnpackRefusesSymlinkedDirectories(t *testing.T) {
	id, _, blob := session(t)
	outside := t.TempDir()
	dst := t.TempDir()
	require.NoError(t, os.Symlink(outside, SessionsDir(dst)))
	err := New(Options{}).Packer(backend.Env{StateRoot: dst}).UnpackSession(ctx, id, blob)
	require.ErrorContains(t, err, "not a directory")
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was written through the link")
}

func TestSafeRel(t *testing.T) {
	for _, ok := range []string{"a", "sessions/b/c.jsonl"} {
		assert.NoError(t, safeRel(ok), ok)
	}
	for _, bad := range []string{"", "/a", "a/../b", "..", ".", "./a", "a//b", "a/", "a\\b", "a\x00b"} {
		assert.Error(t, safeRel(bad), bad)
	}
}
