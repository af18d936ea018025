package packer

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/packer/archive"
	"github.com/tether-run/tether/internal/testenv/files"
)

// deltaSession is a session in the test layout: its transcript, one
// subagent transcript in its folder, and a task file.
type deltaSession struct {
	t   *testing.T
	env agent.Env
	p   *Packer
}

func newDeltaSession(t *testing.T) *deltaSession {
	env := testEnv(t, "delta")
	s := &deltaSession{t: t, env: env, p: newTestPacker(env, Limits{})}
	writeJSONL(t, filepath.Join(env.StateRoot, s.main()), 200<<10, rand.New(rand.NewChaCha8([32]byte{2})))
	s.write(s.sub("agent-1.jsonl"), `{"type":"assistant","text":"sub"}`+"\n")
	s.write("tasks/"+testID+"/1.json", `{"todo":"x"}`)
	return s
}

func (s *deltaSession) main() string {
	return "projects/" + testSlug(s.env.Workdir) + "/" + testID + ".jsonl"
}

func (s *deltaSession) sub(name string) string {
	return "projects/" + testSlug(s.env.Workdir) + "/" + testID + "/subagents/" + name
}

func (s *deltaSession) write(rel, content string) {
	p := filepath.Join(s.env.StateRoot, rel)
	require.NoError(s.t, os.MkdirAll(filepath.Dir(p), 0o700))
	require.NoError(s.t, os.WriteFile(p, []byte(content), 0o600))
}

func (s *deltaSession) appendTo(rel, content string) {
	f, err := os.OpenFile(filepath.Join(s.env.StateRoot, rel), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(s.t, err)
	_, err = f.WriteString(content)
	require.NoError(s.t, err)
	require.NoError(s.t, f.Close())
}

func (s *deltaSession) pack(base *Manifest) ([]byte, *Manifest) {
	s.t.Helper()
	blob, m, err := s.p.PackDelta(ctx, testID, base)
	require.NoError(s.t, err)
	return blob, m
}

// restore unpacks parts into a fresh root and checks that the manifest it
// returns (the sizes and sha256 of what it placed) is want.
func (s *deltaSession) restore(want *Manifest, parts ...[]byte) agent.Env {
	s.t.Helper()
	target := testEnv(s.t, "delta")
	m, err := newTestPacker(target, Limits{}).UnpackParts(ctx, testID, parts...)
	require.NoError(s.t, err)
	assert.Equal(s.t, want, m)
	return target
}

// restoreLive is restore of the latest parts, which must also place
// exactly the live session's files.
func (s *deltaSession) restoreLive(want *Manifest, parts ...[]byte) agent.Env {
	s.t.Helper()
	target := s.restore(want, parts...)
	// The target's working directory differs, and with it the slug.
	rename := func(p string) string { return strings.Replace(p, testSlug(s.env.Workdir), "SLUG", 1) }
	var have, live []string
	for _, f := range files.List(s.t, s.env.StateRoot) {
		live = append(live, rename(f)+"="+files.Read(s.t, s.env.StateRoot, f))
	}
	for _, f := range files.List(s.t, target.StateRoot) {
		have = append(have, strings.Replace(f, testSlug(target.Workdir), "SLUG", 1)+"="+files.Read(s.t, target.StateRoot, f))
	}
	assert.Equal(s.t, live, have)
	return target
}

func TestDeltaCarriesOnlyWhatTheVisitAdded(t *testing.T) {
	s := newDeltaSession(t)
	base, m0 := s.pack(nil)
	h, err := ReadHeader(base)
	require.NoError(t, err)
	assert.Empty(t, h.Kind, "without a manifest the pack is whole")
	assert.Len(t, m0.Files, 3)

	s.appendTo(s.main(), `{"type":"assistant","text":"the turn's reply"}`+"\n")
	d1, m1 := s.pack(m0)
	h, err = ReadHeader(d1)
	require.NoError(t, err)
	assert.Equal(t, KindDelta, h.Kind)
	assert.Less(t, len(d1), len(base)/2)
	stream := string(decompressed(t, d1))
	assert.Contains(t, stream, "the turn's reply")
	assert.NotContains(t, stream, "parentUuid", "the delta holds the appended bytes, not the transcript")
	assert.NotContains(t, stream, "todo", "an unchanged file is left out")

	// A new subagent file comes whole, beside another append.
	s.appendTo(s.main(), `{"type":"user","text":"again"}`+"\n")
	s.write(s.sub("agent-2.jsonl"), `{"type":"assistant","text":"new sub"}`+"\n")
	d2, m2 := s.pack(m1)
	assert.Contains(t, string(decompressed(t, d2)), "new sub")
	assert.Len(t, m2.Files, 4)

	s.restoreLive(m2, base, d1, d2)
	s.restore(m0, base)
	// The manifest of a restore is the base of the next delta there.
	target := s.restore(m1, base, d1)
	tp := newTestPacker(target, Limits{})
	next, _, err := tp.PackDelta(ctx, testID, m1)
	require.NoError(t, err)
	h, err = ReadHeader(next)
	require.NoError(t, err)
	assert.Equal(t, KindDelta, h.Kind)
}

func TestRewrittenOrRemovedFilesPackWhole(t *testing.T) {
	s := newDeltaSession(t)
	base, m0 := s.pack(nil)

	// A compaction rewrites the transcript shorter: the delta carries it
	// whole, and the rest still only as far as it changed.
	s.write(s.main(), `{"type":"summary","text":"compacted"}`+"\n")
	d1, m1 := s.pack(m0)
	h, err := ReadHeader(d1)
	require.NoError(t, err)
	assert.Equal(t, KindDelta, h.Kind)
	assert.Contains(t, string(decompressed(t, d1)), "compacted")
	s.restoreLive(m1, base, d1)

	// A rewrite of the same length or longer whose prefix differs is whole
	// too, never appended to the old prefix.
	s.write(s.main(), strings.Repeat("X", 40)+`{"type":"summary","text":"compacted"}`+"\n")
	d2, m2 := s.pack(m1)
	s.restoreLive(m2, base, d1, d2)

	// A file gone from the session cannot be a delta's: the pack is whole.
	require.NoError(t, os.Remove(filepath.Join(s.env.StateRoot, "tasks", testID, "1.json")))
	whole, m3 := s.pack(m2)
	h, err = ReadHeader(whole)
	require.NoError(t, err)
	assert.Empty(t, h.Kind)
	s.restoreLive(m3, whole)
}

func TestAHundredDeltasRestore(t *testing.T) {
	s := newDeltaSession(t)
	base, m := s.pack(nil)
	parts := [][]byte{base}
	for i := range 100 {
		s.appendTo(s.main(), `{"turn":`+strconv.Itoa(i)+`}`+"\n")
		if i%10 == 0 {
			s.appendTo(s.sub("agent-1.jsonl"), `{"sub":`+strconv.Itoa(i)+`}`+"\n")
		}
		var d []byte
		d, m = s.pack(m)
		parts = append(parts, d)
	}
	s.restoreLive(m, parts...)
}

// Each part is untrusted input: a delta that does not follow its base, a
// chain in the wrong order, a part of another session, and entries that
// escape or break the limits are refused with typed errors, and nothing
// reaches the live root.
func TestUnpackPartsRefusesBrokenChains(t *testing.T) {
	s := newDeltaSession(t)
	base, m0 := s.pack(nil)
	s.appendTo(s.main(), "one\n")
	d1, m1 := s.pack(m0)
	s.appendTo(s.main(), "two\n")
	d2, _ := s.pack(m1)

	main := "project/" + testID + ".jsonl"
	sum := func(b string) string { x := sha256.Sum256([]byte(b)); return hex.EncodeToString(x[:]) }
	craftDelta := func(entries ...*tar.Header) []byte {
		return wrap(t, Header{Backend: testBackend, SessionID: testID, Kind: KindDelta}, paxTar(t, entries...))
	}
	cases := []struct {
		name  string
		parts [][]byte
		want  error
	}{
		{"none", nil, ErrBrokenChain},
		{"skips a delta", [][]byte{base, d2}, ErrBrokenChain},
		{"out of order", [][]byte{base, d2, d1}, ErrBrokenChain},
		{"a delta first", [][]byte{d1}, ErrBrokenChain},
		{"a whole archive as a delta", [][]byte{base, base}, ErrBrokenChain},
		{"another session", [][]byte{base, craftWith(t, otherID, d1)}, ErrHeaderMismatch},
		{"wrong prefix", [][]byte{base, craftDelta(&tar.Header{Name: main, Size: 4, PAXRecords: map[string]string{
			archive.PAXOffset: strconv.FormatInt(m0.Files[main].Size, 10), archive.PAXPrefix: sum("not it"), archive.PAXSum: sum("x")}})}, ErrBrokenChain},
		{"wrong result", [][]byte{base, craftDelta(&tar.Header{Name: main, Size: 4, PAXRecords: map[string]string{
			archive.PAXOffset: strconv.FormatInt(m0.Files[main].Size, 10), archive.PAXPrefix: m0.Files[main].SHA256, archive.PAXSum: sum("x")}})}, ErrBrokenChain},
		{"appends to nothing", [][]byte{base, craftDelta(&tar.Header{Name: "project/" + testID + "/subagents/new.jsonl", Size: 4, PAXRecords: map[string]string{
			archive.PAXOffset: "0", archive.PAXPrefix: sum(""), archive.PAXSum: sum("abcd")}})}, ErrBrokenChain},
		{"escapes", [][]byte{base, craftDelta(&tar.Header{Name: "../../etc/passwd", Size: 4, PAXRecords: map[string]string{archive.PAXSum: sum("abcd")}})}, ErrUnsafePath},
		{"off the whitelist", [][]byte{base, craftDelta(&tar.Header{Name: "project/other.jsonl", Size: 4, PAXRecords: map[string]string{archive.PAXSum: sum("abcd")}})}, ErrNotWhitelisted},
		{"a link", [][]byte{base, craftDelta(&tar.Header{Name: main, Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"})}, ErrLinkEntry},
		{"a credential", [][]byte{base, craftDelta(&tar.Header{Name: "project/" + testID + "/.credentials.json", Size: 4, PAXRecords: map[string]string{archive.PAXSum: sum("abcd")}})}, ErrDenied},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := testEnv(t, "delta")
			_, err := newTestPacker(target, Limits{}).UnpackParts(ctx, testID, tc.parts...)
			require.ErrorIs(t, err, tc.want)
			assert.Empty(t, files.List(t, target.StateRoot), "nothing is placed from a refused chain")
		})
	}

	t.Run("UnpackSession refuses a delta", func(t *testing.T) {
		target := testEnv(t, "delta")
		err := newTestPacker(target, Limits{}).UnpackSession(ctx, testID, d1)
		require.ErrorIs(t, err, ErrCorrupt)
	})
	t.Run("an append that grows past the limits", func(t *testing.T) {
		target := testEnv(t, "delta")
		lim := DefaultLimits()
		lim.MaxFileBytes = m1.Files[main].Size
		_, err := newTestPacker(target, lim).UnpackParts(ctx, testID, base, d1, d2)
		require.ErrorIs(t, err, ErrTooLarge)
	})
	t.Run("too many parts", func(t *testing.T) {
		target := testEnv(t, "delta")
		parts := make([][]byte, MaxParts+1)
		_, err := newTestPacker(target, Limits{}).UnpackParts(ctx, testID, parts...)
		require.ErrorIs(t, err, ErrTooLarge)
	})
}

// A delta is scanned for secrets like a whole archive: what the visit
// appended, under RedactRefuse, refuses the pack.
func TestDeltaIsScannedForSecrets(t *testing.T) {
	s := newDeltaSession(t)
	s.p = newTestPacker(s.env, Limits{}, WithRedact(RedactRefuse))
	_, m0 := s.pack(nil)
	s.appendTo(s.main(), `{"text":"key sk-ant-api03-`+strings.Repeat("A", 95)+`AA"}`+"\n")
	_, _, err := s.p.PackDelta(ctx, testID, m0)
	require.ErrorIs(t, err, ErrSecret)
}

// paxTar writes a tar stream of headers whose file bodies are 'a's.
func paxTar(t *testing.T, hs ...*tar.Header) []byte {
	t.Helper()
	var b strings.Builder
	tw := tar.NewWriter(&b)
	for _, h := range hs {
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		h.Mode, h.Format = 0o600, tar.FormatPAX
		require.NoError(t, tw.WriteHeader(h))
		if h.Size > 0 {
			_, err := tw.Write([]byte(strings.Repeat("a", int(h.Size))))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return []byte(b.String())
}

// craftWith rewraps blob's tar stream under another session id.
func craftWith(t *testing.T, id string, blob []byte) []byte {
	h, err := ReadHeader(blob)
	require.NoError(t, err)
	h.SessionID = id
	return wrap(t, h, decompressed(t, blob))
}

// The sample of a streamed file is the sample read back from it, whatever
// its size and however its bytes arrive.
func TestSamplerMatchesSampleAt(t *testing.T) {
	rng := rand.New(rand.NewChaCha8([32]byte{9}))
	for _, size := range []int64{0, 1, 4095, 64 << 10, 128<<10 + 1, 300 << 10, 2<<20 + 17} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.IntN(256))
		}
		want, err := sampleAt(strings.NewReader(string(data)), size)
		require.NoError(t, err)
		s := newSampler(size)
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(70<<10))
			_, _ = s.Write(rest[:n])
			rest = rest[n:]
		}
		assert.Equal(t, want, s.sum(), "size %d", size)
	}
	_, err := sampleAt(strings.NewReader("short"), 10)
	assert.Error(t, err, "a file shorter than the size sampled")
}

// A file that grew is packed as its appended bytes without hashing what
// it had; a rewrite of its head, or of the bytes its old end, is packed
// whole, as is any change when the manifest has no hash state.
func TestGrownFilesAreJudgedByTheirSample(t *testing.T) {
	for name, edit := range map[string]func(data []byte) int64{
		"head":      func([]byte) int64 { return 10 },
		"old end":   func(data []byte) int64 { return int64(len(data)) - 100 },
		"middle":    func(data []byte) int64 { return 4*int64(len(data))/9 + 10 }, // in a window
		"nothing":   func([]byte) int64 { return -1 },
		"no state":  func([]byte) int64 { return -2 },
		"no sample": func([]byte) int64 { return -3 },
	} {
		t.Run(name, func(t *testing.T) {
			s := newDeltaSession(t)
			base, m0 := s.pack(nil)
			main := filepath.Join(s.env.StateRoot, s.main())
			data, err := os.ReadFile(main)
			require.NoError(t, err)
			at := edit(data)
			switch at {
			case -2:
				m0 = withFile(m0, s.main(), func(f *FileState) { f.State = nil })
			case -3:
				m0 = withFile(m0, s.main(), func(f *FileState) { f.Sample = "" })
			case -1:
			default:
				f, err := os.OpenFile(main, os.O_WRONLY, 0)
				require.NoError(t, err)
				_, err = f.WriteAt([]byte("#"), at)
				require.NoError(t, err)
				require.NoError(t, f.Close())
			}
			s.appendTo(s.main(), `{"type":"assistant","text":"appended"}`+"\n")
			d, m1 := s.pack(m0)
			stream := string(decompressed(t, d))
			appended := strings.Contains(stream, archive.PAXOffset)
			if at >= 0 {
				assert.False(t, appended, "a rewrite the sample covers packs the file whole")
			} else {
				assert.True(t, appended, "a file that only grew is packed as what it appended")
			}
			s.restoreLive(m1, base, d)
		})
	}
}

func withFile(m *Manifest, name string, edit func(*FileState)) *Manifest {
	c := &Manifest{Files: map[string]FileState{}}
	for k, v := range m.Files {
		if strings.HasSuffix(k, filepath.Base(name)) {
			edit(&v)
		}
		c.Files[k] = v
	}
	return c
}
