package packer

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/packer/archive"
)

const (
	testID  = "0b6f2c1e-4d4b-4a59-9a3e-1f2e3d4c5b6a"
	otherID = "7c1d0e9f-2a3b-4c5d-8e9f-0a1b2c3d4e5f"
)

// decompressed returns an archive's tar stream.
func decompressed(t testing.TB, blob []byte) []byte {
	t.Helper()
	_, payload, err := archive.Split(blob)
	require.NoError(t, err)
	dec, err := zstd.NewReader(bytes.NewReader(payload))
	require.NoError(t, err)
	defer dec.Close()
	out, err := io.ReadAll(dec)
	require.NoError(t, err)
	return out
}

// entryNames lists the names in an archive.
func entryNames(t testing.TB, blob []byte) []string {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(decompressed(t, blob)))
	var out []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out = append(out, h.Name)
	}
}

// tarEntry is one entry of a crafted archive.
type tarEntry struct {
	name     string
	typeflag byte
	body     string
	size     int64 // when nonzero, the header's size (body is padded to it)
	link     string
}

func file(name, body string) tarEntry { return tarEntry{name: name, typeflag: tar.TypeReg, body: body} }

func dir(name string) tarEntry { return tarEntry{name: name + "/", typeflag: tar.TypeDir} }

// rawTar builds a tar stream with no checks, so tests can craft hostile
// entries.
func rawTar(t testing.TB, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typeflag, Mode: 0o600, Linkname: e.link, Format: tar.FormatPAX}
		if e.typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
			if e.size > 0 {
				h.Size = e.size
			}
		}
		require.NoError(t, tw.WriteHeader(h))
		if h.Size > 0 {
			body := e.body + strings.Repeat("x", int(h.Size)-len(e.body))
			_, err := tw.Write([]byte(body))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

// wrap makes an archive blob of header h around a raw tar stream.
func wrap(t testing.TB, h Header, tarStream []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, appendPrefix(&buf, h))
	return testEncoder().EncodeAll(tarStream, buf.Bytes())
}

// testEncoder is shared: creating an encoder costs more than a fuzz run.
var testEncoder = sync.OnceValue(func() *zstd.Encoder {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		panic(err)
	}
	return enc
})

func craft(t testing.TB, backendName, id string, entries ...tarEntry) []byte {
	return wrap(t, Header{Backend: backendName, SessionID: id}, rawTar(t, entries))
}

// testBackend is the backend name in the headers of testLayout's archives.
// The fuzz corpus in testdata/fuzz was recorded with Claude Code's layout,
// whose archives name their parts exactly as testLayout does.
const testBackend = "claude_code"

// testPlaces is the packer's own test layout, shaped like Claude Code's
// (the richest of the CLIs'): a main file and a folder under a folder named
// for the working directory, and a folder of the session's elsewhere.
//
//	projects/<slug>/<id>.jsonl   main file
//	projects/<slug>/<id>/        folder
//	tasks/<id>/                  folder
//
// Archives name them project/<id>.jsonl, project/<id>/ and tasks/<id>/,
// without the slug, so an unpack places them under the target's slug.
// Claude Code's real layout, and its tests, are in internal/backend/claude.
func testPlaces(env agent.Env, id string) ([]Place, error) {
	proj := "projects/" + testSlug(env.Workdir) + "/"
	return []Place{
		{Name: "project/" + id + ".jsonl", Path: proj + id + ".jsonl", Primary: true},
		{Name: "project/" + id, Path: proj + id, Dir: true},
		{Name: "tasks/" + id, Path: "tasks/" + id, Dir: true},
	}, nil
}

// testSlug is dir with every byte that is not an ASCII letter or digit
// replaced by '-'.
func testSlug(dir string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '-'
	}, dir)
}

// newTestPacker is a packer of the test layout with the policy a worker
// gives every backend (catalogue.SessionPolicy: every backend's login and
// state files); opts may change it.
func newTestPacker(env agent.Env, limits Limits, opts ...Option) *Packer {
	return New(testBackend, env, limits, Files(testPlaces), append([]Option{WithPolicy(catalogue.SessionPolicy())}, opts...)...)
}

// denied is what the worker's packers refuse.
func denied(p string) bool { return newTestPacker(agent.Env{}, Limits{}).denied(p) }

// testEnv returns an env whose state root and working directory live
// under a fresh temp dir.
func testEnv(t testing.TB, name string) agent.Env {
	base := t.TempDir()
	wd := filepath.Join(base, "work", name)
	require.NoError(t, os.MkdirAll(wd, 0o755))
	return agent.Env{StateRoot: filepath.Join(base, "state"), Workdir: wd}
}

func slugOf(_ testing.TB, env agent.Env) string { return testSlug(env.Workdir) }
