package packer

import (
	"archive/tar"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-run/tether/internal/agent"
)

// FuzzUnpack feeds Unpack arbitrary blobs. When wrapped is true the input is
// taken as a raw tar stream and sealed with a valid header and zstd frame,
// so the fuzzer explores tar structure rather than zstd checksums. Unpack
// must not panic, must not create anything outside its state root, and
// when it fails must leave no file in the root.
func FuzzUnpack(f *testing.F) {
	cc := testBackend
	seeds := [][]tarEntry{
		{file("project/"+testID+".jsonl", "{}\n")},
		{file("project/"+testID+".jsonl", "{}\n"), dir("project/" + testID), file("project/"+testID+"/sub/a.jsonl", "a"), dir("tasks/" + testID), file("tasks/"+testID+"/1.json", "{}")},
		{file("../escape", "x")},
		{file("/abs", "x")},
		{tarEntry{name: "project/" + testID + ".jsonl", typeflag: tar.TypeSymlink, link: "../../../x"}},
		{tarEntry{name: "tasks/" + testID + "/x", typeflag: tar.TypeLink, link: "/etc/passwd"}},
		{tarEntry{name: "tasks/" + testID + "/x", typeflag: tar.TypeFifo}},
		{file("project/"+testID+"/.credentials.json", "x")},
		// The deep-path attack, one entry below more implicit folders than
		// MaxDepth allows. testdata/fuzz/FuzzUnpack/deep-path-8000 holds
		// the 8,000-deep archive itself; its raw tar (16 KB) would make
		// the fuzzer spend its time minimising.
		{file("project/"+testID+".jsonl", "{}\n"), file(deepName(DefaultMaxDepth+8), "x")},
	}
	for _, s := range seeds {
		raw := rawTar(f, s)
		f.Add(raw, true)
		f.Add(wrap(f, Header{Backend: cc, SessionID: testID}, raw), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, wrapped bool) {
		base := fuzzDir(t)
		env := agent.Env{StateRoot: filepath.Join(base, "state"), Workdir: filepath.Join(base, "wd")}
		blob := data
		if wrapped {
			blob = wrap(t, Header{Backend: cc, SessionID: testID}, data)
		}
		err := newTestPacker(env, Limits{MaxTotalBytes: 1 << 20, MaxFiles: 64, MaxFileBytes: 1 << 20}).UnpackSession(ctx, testID, blob)

		slug := testSlug(env.Workdir)
		allowed := []string{
			"projects/" + slug + "/" + testID + ".jsonl",
			"projects/" + slug + "/" + testID + "/",
			"tasks/" + testID + "/",
		}
		walkErr := filepath.WalkDir(base, func(p string, d fs.DirEntry, werr error) error {
			if werr != nil {
				return werr
			}
			rel, _ := filepath.Rel(base, p)
			rel = filepath.ToSlash(rel)
			if rel == "." || rel == "state" {
				return nil
			}
			if !strings.HasPrefix(rel, "state/") {
				t.Fatalf("unpack created %s outside its state root", rel)
			}
			if strings.Contains(rel, stagingPrefix) {
				t.Fatalf("staging directory %s left behind", rel)
			}
			if d.Type()&fs.ModeType&^fs.ModeDir != 0 {
				t.Fatalf("unpack created a non-regular file %s (%v)", rel, d.Type())
			}
			if d.IsDir() {
				return nil
			}
			if err != nil {
				t.Fatalf("failed unpack (%v) left file %s", err, rel)
			}
			in := strings.TrimPrefix(rel, "state/")
			for _, a := range allowed {
				if in == a || strings.HasSuffix(a, "/") && strings.HasPrefix(in, a) {
					return nil
				}
			}
			t.Fatalf("unpack created %s, outside the session whitelist", rel)
			return nil
		})
		if walkErr != nil && !os.IsNotExist(walkErr) {
			t.Fatal(walkErr)
		}
	})
}

// fuzzDir returns a fresh directory for one run, on tmpfs when the machine
// has one: unpack fsyncs every file and directory, which on a disk costs
// ~25 ms a run and starves the fuzzer.
func fuzzDir(t *testing.T) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "packer-fuzz-")
		if err == nil {
			t.Cleanup(func() { _ = os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}
