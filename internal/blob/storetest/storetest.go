// Package storetest is the conformance suite of blob.Store: one set of
// tests that every backend runs, in the clear and wrapped by
// blob.Encrypted, so that the contract written in package blob holds the
// same everywhere. Per-backend tests only cover mechanics the contract does
// not (URLs, on-disk layout).
package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-run/tether/internal/blob"
)

// LargeSize is the size of the streaming test's blob: above 64 MiB, so
// that it cannot hide in a 64 MiB buffer.
const LargeSize = 64<<20 + 1

// Harness describes a backend under test.
type Harness struct {
	// New returns an empty store. The suite closes it.
	New func(t *testing.T) blob.Store
	// InMemory marks a backend that keeps blobs in memory by design; the
	// streaming test then does not check the live heap.
	InMemory bool
	// NestedKeysAllowed marks a backend that can hold both "a" and "a/b"
	// (AWS S3 itself can); the nesting test is then skipped.
	NestedKeysAllowed bool
	// Faults are the storage faults this backend can suffer.
	Faults []Fault
}

// Fault is one injected storage fault. Every operation at Key must fail
// with an error that is not blob.ErrNotFound: a sick store is never an
// empty one.
type Fault struct {
	Name string
	// Inject breaks storage and returns the affected store and a key
	// whose lookup runs into the fault. It may skip the test when the
	// fault cannot be produced here, saying why.
	Inject func(t *testing.T) (s blob.Store, key string)
}

// testKey is the master key of the encrypted run; otherKey plays a wrong
// key.
var (
	testKey  = bytes.Repeat([]byte{0x42}, 32)
	otherKey = bytes.Repeat([]byte{0x24}, 32)
)

// Run runs the whole suite against the harness newHarness returns, once in
// the clear ("plain") and once through blob.Encrypted ("encrypted").
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	h := newHarness(t)
	t.Run("plain", func(t *testing.T) { run(t, h) })
	t.Run("encrypted", func(t *testing.T) {
		eh := h
		eh.New = func(t *testing.T) blob.Store { return encrypt(t, h.New(t), testKey) }
		eh.Faults = nil
		for _, f := range h.Faults {
			eh.Faults = append(eh.Faults, Fault{Name: f.Name, Inject: func(t *testing.T) (blob.Store, string) {
				s, k := f.Inject(t)
				return encrypt(t, s, testKey), k
			}})
		}
		run(t, eh)
		t.Run("Envelope", func(t *testing.T) { testEnvelope(t, h.New) })
	})
}

func encrypt(t *testing.T, s blob.Store, key []byte) blob.Store {
	t.Helper()
	es, err := blob.Encrypted(s, key)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func run(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name string
		f    func(*testing.T, Harness)
	}{
		{"RoundTrip", testRoundTrip},
		{"LargeStreamed", testLarge},
		{"CreateOnlyConcurrent", testCreateOnlyConcurrent},
		{"CreateOnlyIdempotent", testCreateOnlyIdempotent},
		{"NotFound", testNotFound},
		{"FaultsAreNotAbsence", testFaults},
		{"ListDelete", testListDelete},
		{"Keys", testKeys},
		{"CancelMidPut", testCancel},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, h) })
	}
}

func open(t *testing.T, h Harness) blob.Store {
	t.Helper()
	s := h.New(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func putGen(t *testing.T, s blob.Store, key string, seed byte, n int64, opts ...blob.PutOption) error {
	t.Helper()
	return s.Put(ctxFor(t), key, newGen(seed, n), n, opts...)
}

// checkGen asserts that key holds exactly the n bytes of seed, streaming.
func checkGen(t *testing.T, s blob.Store, key string, seed byte, n int64) {
	t.Helper()
	ctx := ctxFor(t)
	rc, err := s.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	defer rc.Close()
	h := sha256.New()
	got, err := io.Copy(h, rc)
	if err != nil {
		t.Fatalf("Get(%q): read: %v", key, err)
	}
	if got != n || !bytes.Equal(h.Sum(nil), digest(seed, n)) {
		t.Fatalf("Get(%q): %d bytes that differ from the %d put", key, got, n)
	}
	in, err := s.Stat(ctx, key)
	if err != nil {
		t.Fatalf("Stat(%q): %v", key, err)
	}
	if in.Key != key || in.Size != n {
		t.Fatalf("Stat(%q) = %+v, want key %q size %d", key, in, key, n)
	}
}

func mustNotFound(t *testing.T, s blob.Store, key string) {
	t.Helper()
	ctx := ctxFor(t)
	if _, err := s.Stat(ctx, key); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Stat(%q) = %v, want ErrNotFound", key, err)
	}
	if rc, err := s.Get(ctx, key); !errors.Is(err, blob.ErrNotFound) {
		if err == nil {
			rc.Close()
		}
		t.Fatalf("Get(%q) = %v, want ErrNotFound", key, err)
	}
}

func keysOf(infos []blob.Info) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = in.Key
	}
	return out
}

func mustList(t *testing.T, s blob.Store, prefix string, want ...string) []blob.Info {
	t.Helper()
	infos, err := s.List(ctxFor(t), prefix)
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	if got := keysOf(infos); !slices.Equal(got, want) {
		t.Fatalf("List(%q) = %q, want %q", prefix, got, want)
	}
	return infos
}

func testRoundTrip(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := ctxFor(t)
	sizes := []int64{0, 1, 1000, 64<<10 - 1, 64 << 10, 64<<10 + 1, 1<<20 + 3}
	var keys []string
	for i, n := range sizes {
		key := fmt.Sprintf("rt/blob-%d", i)
		keys = append(keys, key)
		if err := putGen(t, s, key, byte(i), n); err != nil {
			t.Fatalf("Put(%q, %d bytes): %v", key, n, err)
		}
		checkGen(t, s, key, byte(i), n)
	}
	infos := mustList(t, s, "rt/", keys...)
	for i, in := range infos {
		if in.Size != sizes[i] {
			t.Errorf("List: %s has size %d, want %d", in.Key, in.Size, sizes[i])
		}
		if in.ModTime.IsZero() {
			t.Errorf("List: %s has no modification time", in.Key)
		}
	}

	// A plain Put replaces.
	if err := blob.PutBytes(ctx, s, keys[3], []byte("replaced")); err != nil {
		t.Fatalf("overwrite: %v", err)
	}
	if b, err := blob.GetBytes(ctx, s, keys[3]); err != nil || string(b) != "replaced" {
		t.Fatalf("after overwrite Get = %q, %v", b, err)
	}

	// An unknown size streams as well.
	if err := s.Put(ctx, "rt/unknown-size", newGen(99, 300<<10), -1); err != nil {
		t.Fatalf("Put with size -1: %v", err)
	}
	checkGen(t, s, "rt/unknown-size", 99, 300<<10)
}

func testLarge(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := ctxFor(t)
	const key = "large/blob"
	probe := func() {}
	var hp *heapProbe
	if !h.InMemory {
		hp = newHeapProbe()
		probe = hp.sample
	}
	src := &probingReader{r: newGen(7, LargeSize), every: 8 << 20, next: 8 << 20, probe: probe}
	if err := s.Put(ctx, key, src, LargeSize); err != nil {
		t.Fatalf("Put of %d bytes: %v", LargeSize, err)
	}
	if hp != nil {
		t.Logf("Put: live heap grew by at most %.1f MiB", float64(hp.growth())/(1<<20))
		if hp.growth() > LargeSize*3/4 {
			t.Fatalf("Put: the live heap grew by %d bytes while streaming %d: the store holds the blob in memory", hp.growth(), LargeSize)
		}
	}

	in, err := s.Stat(ctx, key)
	if err != nil || in.Size != LargeSize {
		t.Fatalf("Stat = %+v, %v; want size %d", in, err, LargeSize)
	}
	if !h.InMemory {
		hp = newHeapProbe()
		probe = hp.sample
	}
	rc, err := s.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	sum := sha256.New()
	n, err := io.Copy(sum, &probingReader{r: rc, every: 8 << 20, next: 8 << 20, probe: probe})
	rc.Close()
	if err != nil {
		t.Fatalf("Get: read: %v", err)
	}
	if n != LargeSize || !bytes.Equal(sum.Sum(nil), digest(7, LargeSize)) {
		t.Fatalf("Get returned %d bytes that differ from the %d put", n, LargeSize)
	}
	if hp != nil {
		t.Logf("Get: live heap grew by at most %.1f MiB", float64(hp.growth())/(1<<20))
		if hp.growth() > LargeSize*3/4 {
			t.Fatalf("Get: the live heap grew by %d bytes while streaming %d: the store holds the blob in memory", hp.growth(), LargeSize)
		}
	}
	if err := s.Delete(ctx, key); err != nil {
		t.Fatalf("Delete: %v", err)
	}
}

func creatorBytes(i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("creator %d wrote this. ", i)), 4000)
}

func testCreateOnlyConcurrent(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := ctxFor(t)
	const creators = 8

	race := func(key string, content func(i int) []byte) []error {
		errs := make([]error, creators)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range creators {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = blob.PutBytes(ctx, s, key, content(i), blob.CreateOnly())
			}()
		}
		close(start)
		wg.Wait()
		return errs
	}

	errs := race("race/different", creatorBytes)
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("creators %d and %d both won a create-only Put", winner, i)
			}
			winner = i
		case !errors.Is(err, blob.ErrExists):
			t.Fatalf("creator %d: %v, want nil or ErrExists", i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("no creator won: %v", errs)
	}
	got, err := blob.GetBytes(ctx, s, "race/different")
	if err != nil || !bytes.Equal(got, creatorBytes(winner)) {
		t.Fatalf("the blob is not the winner's (%d) bytes: %v", winner, err)
	}

	// Identical bytes are retries of one write: every creator succeeds.
	for i, err := range race("race/same", func(int) []byte { return creatorBytes(0) }) {
		if err != nil {
			t.Fatalf("identical creator %d: %v", i, err)
		}
	}
}

func testCreateOnlyIdempotent(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := ctxFor(t)
	a, b := []byte("first version"), []byte("second version")
	if err := blob.PutBytes(ctx, s, "co/small", a, blob.CreateOnly()); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := blob.PutBytes(ctx, s, "co/small", a, blob.CreateOnly()); err != nil {
		t.Fatalf("identical re-put: %v", err)
	}
	for _, other := range [][]byte{b, append(slices.Clone(a), 'x'), a[:len(a)-1], nil} {
		if err := blob.PutBytes(ctx, s, "co/small", other, blob.CreateOnly()); !errors.Is(err, blob.ErrExists) {
			t.Fatalf("create-only with different bytes %q: %v, want ErrExists", other, err)
		}
	}
	if got, err := blob.GetBytes(ctx, s, "co/small"); err != nil || !bytes.Equal(got, a) {
		t.Fatalf("after refused puts Get = %q, %v; want %q", got, err, a)
	}
	// Without CreateOnly the same key is replaced.
	if err := blob.PutBytes(ctx, s, "co/small", b); err != nil {
		t.Fatalf("plain put over a create-only blob: %v", err)
	}

	// Blobs larger than an S3 part take the multipart path.
	const n = 12 << 20
	if err := putGen(t, s, "co/large", 3, n, blob.CreateOnly()); err != nil {
		t.Fatalf("large create: %v", err)
	}
	if err := putGen(t, s, "co/large", 3, n, blob.CreateOnly()); err != nil {
		t.Fatalf("large identical re-put: %v", err)
	}
	if err := putGen(t, s, "co/large", 4, n, blob.CreateOnly()); !errors.Is(err, blob.ErrExists) {
		t.Fatalf("large create-only with different bytes: %v, want ErrExists", err)
	}
	checkGen(t, s, "co/large", 3, n)
}

func testNotFound(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := ctxFor(t)
	mustNotFound(t, s, "nf/missing")
	mustNotFound(t, s, "nf/deep/er/missing")
	if err := s.Delete(ctx, "nf/missing"); err != nil {
		t.Fatalf("Delete of a missing key: %v, want nil", err)
	}
	mustList(t, s, "nf/")

	// A name that only prefixes other keys is not a blob.
	if err := blob.PutBytes(ctx, s, "nf/dir/x", []byte("x")); err != nil {
		t.Fatal(err)
	}
	mustNotFound(t, s, "nf/dir")
	if err := s.Delete(ctx, "nf/dir"); err != nil {
		t.Fatalf("Delete of a name that only prefixes keys: %v, want nil", err)
	}
	if got, err := blob.GetBytes(ctx, s, "nf/dir/x"); err != nil || string(got) != "x" {
		t.Fatalf("Delete(nf/dir) disturbed nf/dir/x: %q, %v", got, err)
	}

	// Deleted means absent.
	if err := blob.PutBytes(ctx, s, "nf/gone", []byte("soon")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "nf/gone"); err != nil {
		t.Fatal(err)
	}
	mustNotFound(t, s, "nf/gone")
	if err := s.Delete(ctx, "nf/gone"); err != nil {
		t.Fatalf("second Delete: %v, want nil", err)
	}
}

func testFaults(t *testing.T, h Harness) {
	if len(h.Faults) == 0 {
		t.Skip("this backend has no injectable storage faults")
	}
	for _, f := range h.Faults {
		t.Run(f.Name, func(t *testing.T) {
			s, key := f.Inject(t)
			t.Cleanup(func() { s.Close() })
			ctx := ctxFor(t)
			dir := key[:strings.LastIndexByte(key, '/')+1]
			check := func(op string, err error) {
				t.Helper()
				switch {
				case err == nil:
					t.Errorf("%s succeeded despite the fault", op)
				case errors.Is(err, blob.ErrNotFound):
					t.Errorf("%s reported the fault as absence: %v", op, err)
				default:
					t.Logf("%s: %v", op, err)
				}
			}
			rc, err := s.Get(ctx, key)
			if err == nil {
				rc.Close()
			}
			check("Get", err)
			_, err = s.Stat(ctx, key)
			check("Stat", err)
			check("Put", blob.PutBytes(ctx, s, key, []byte("data")))
			check("Delete", s.Delete(ctx, key))
			_, err = s.List(ctx, dir)
			check("List", err)
		})
	}
}

func testListDelete(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := ctxFor(t)
	keys := []string{"ld/a/1", "ld/a/2", "ld/a-b", "ld/ab/1", "ld/b/c/d", "ld/z"}
	for _, k := range keys {
		if err := blob.PutBytes(ctx, s, k, []byte(k)); err != nil {
			t.Fatalf("Put(%q): %v", k, err)
		}
	}
	sorted := slices.Sorted(slices.Values(keys))
	for _, in := range mustList(t, s, "ld/", sorted...) {
		if in.Size != int64(len(in.Key)) {
			t.Errorf("List: %s size %d, want %d", in.Key, in.Size, len(in.Key))
		}
	}
	mustList(t, s, "", sorted...)
	mustList(t, s, "ld/a", "ld/a-b", "ld/a/1", "ld/a/2", "ld/ab/1")
	mustList(t, s, "ld/a/", "ld/a/1", "ld/a/2")
	mustList(t, s, "ld/nope/")
	mustList(t, s, "ld/b/c/d", "ld/b/c/d")

	if err := s.Delete(ctx, "ld/z"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	mustNotFound(t, s, "ld/z")

	for _, k := range []string{"ld/a/1", "ld/a/2"} {
		if err := s.Delete(ctx, k); err != nil {
			t.Fatalf("Delete(%q): %v", k, err)
		}
	}
	mustList(t, s, "ld/", "ld/a-b", "ld/ab/1", "ld/b/c/d")

	// Once nothing nests under a name, the name can be a key again.
	if err := s.Delete(ctx, "ld/b/c/d"); err != nil {
		t.Fatalf("Delete(ld/b/c/d): %v", err)
	}
	if err := blob.PutBytes(ctx, s, "ld/b", []byte("now a key")); err != nil {
		t.Fatalf("Put(ld/b) after its nested keys were deleted: %v", err)
	}
	mustList(t, s, "ld/", "ld/a-b", "ld/ab/1", "ld/b")
}

func testKeys(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := ctxFor(t)
	invalid := []string{
		"", "/a", "a/", "a//b", ".", "..", "a/./b", "a/../b", "../a", ".hidden",
		"a/.tmp-x", "a b", `a\b`, "a\x00b", "a\nb", "ü", "a*", "a?b",
		strings.Repeat("a", blob.MaxSegmentLen+1),
		strings.Repeat("a/", blob.MaxKeyLen/2) + "a",
	}
	for _, k := range invalid {
		if err := blob.ValidateKey(k); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("ValidateKey(%q) = %v, want ErrInvalidKey", k, err)
		}
		if err := blob.PutBytes(ctx, s, k, []byte("x")); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", k, err)
		}
		if _, err := s.Get(ctx, k); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Get(%q) = %v, want ErrInvalidKey", k, err)
		}
		if _, err := s.Stat(ctx, k); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Stat(%q) = %v, want ErrInvalidKey", k, err)
		}
		if err := s.Delete(ctx, k); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
	for _, p := range []string{"/a", "a//", "../", ".x/", "a/../b/", "a b"} {
		if _, err := s.List(ctx, p); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("List(%q) = %v, want ErrInvalidKey", p, err)
		}
	}
	odd := "K-z_0.9/x=y+z@w,v/" + strings.Repeat("s", blob.MaxSegmentLen)
	if err := blob.PutBytes(ctx, s, odd, []byte("odd")); err != nil {
		t.Fatalf("Put(%q): %v", odd, err)
	}
	if got, err := blob.GetBytes(ctx, s, odd); err != nil || string(got) != "odd" {
		t.Fatalf("Get(%q) = %q, %v", odd, got, err)
	}

	// The byte count is checked: a short or long reader is no blob.
	for _, c := range []struct {
		key  string
		data string
		size int64
	}{{"size/short", "0123456789", 11}, {"size/long", "0123456789ab", 11}} {
		for _, opts := range [][]blob.PutOption{nil, {blob.CreateOnly()}} {
			err := s.Put(ctx, c.key, strings.NewReader(c.data), c.size, opts...)
			if err == nil || errors.Is(err, blob.ErrNotFound) {
				t.Fatalf("Put(%q) of %d bytes declared as %d = %v, want an error", c.key, len(c.data), c.size, err)
			}
			mustNotFound(t, s, c.key)
		}
	}

	if h.NestedKeysAllowed {
		t.Log("nesting not tested: this backend can hold nested keys")
		return
	}
	// No key may be another key plus "/…", in either order of creation.
	put := func(k, v string) error { return blob.PutBytes(ctx, s, k, []byte(v)) }
	if err := put("nest/a", "a"); err != nil {
		t.Fatal(err)
	}
	if err := put("nest/a/b", "ab"); err == nil || errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Put(nest/a/b) under the key nest/a = %v, want an error", err)
	}
	if err := put("nest/c/d", "cd"); err != nil {
		t.Fatal(err)
	}
	if err := put("nest/c", "c"); err == nil || errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Put(nest/c) over the key nest/c/d = %v, want an error", err)
	}
	mustList(t, s, "nest/", "nest/a", "nest/c/d")
	if got, err := blob.GetBytes(ctx, s, "nest/a"); err != nil || string(got) != "a" {
		t.Fatalf("nest/a = %q, %v", got, err)
	}
}

func testCancel(t *testing.T, h Harness) {
	s := open(t, h)
	for _, c := range []struct {
		name     string
		size, at int64
	}{
		{"small", 1 << 20, 512 << 10},
		{"large", 24 << 20, 20 << 20}, // S3: cancelled during a multipart upload
	} {
		for _, createOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/createOnly=%v", c.name, createOnly), func(t *testing.T) {
				key := fmt.Sprintf("cancel/%s-%v", c.name, createOnly)
				var opts []blob.PutOption
				if createOnly {
					opts = append(opts, blob.CreateOnly())
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				g := newGen(5, c.size)
				g.atOff, g.at = c.at, cancel
				err := s.Put(ctx, key, g, c.size, opts...)
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Put cancelled at byte %d = %v, want context.Canceled", c.at, err)
				}
				mustNotFound(t, s, key)
				mustList(t, s, key)
			})
		}
	}
	// A cancelled replacement leaves the old blob whole.
	t.Run("overwrite", func(t *testing.T) {
		const key = "cancel/old"
		if err := blob.PutBytes(ctxFor(t), s, key, []byte("old bytes")); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		g := newGen(6, 1<<20)
		g.atOff, g.at = 300<<10, cancel
		if err := s.Put(ctx, key, g, 1<<20); !errors.Is(err, context.Canceled) {
			t.Fatalf("Put = %v, want context.Canceled", err)
		}
		if got, err := blob.GetBytes(ctxFor(t), s, key); err != nil || string(got) != "old bytes" {
			t.Fatalf("after a cancelled overwrite Get = %q, %v", got, err)
		}
	})
}

// Envelope layout constants, restated from package blob's format comment
// so the tampering below hits known places: a 52-byte head (magic, key
// id, Tink's stream header) shares the first 64 KiB segment with the
// first plaintext; every later segment is 64 KiB, tag included.
const (
	envHeader  = 52
	envSegment = 64 << 10
	envTag     = 16
)

func testEnvelope(t *testing.T, newInner func(t *testing.T) blob.Store) {
	inner := newInner(t)
	t.Cleanup(func() { inner.Close() })
	enc := encrypt(t, inner, testKey)
	ctx := ctxFor(t)
	plain := bytes.Repeat([]byte("secret conversation "), 10000) // 200,000 bytes: 4 segments
	if err := blob.PutBytes(ctx, enc, "env/a", plain); err != nil {
		t.Fatal(err)
	}
	raw, err := blob.GetBytes(ctx, inner, "env/a")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("secret conversation")) {
		t.Fatal("the stored bytes contain the plaintext")
	}
	first := envSegment - envHeader - envTag
	segs := 1 + (len(plain)-first+envSegment-envTag-1)/(envSegment-envTag)
	if want := envHeader + len(plain) + segs*envTag; len(raw) != want {
		t.Fatalf("stored %d bytes, want %d", len(raw), want)
	}
	if in, err := enc.Stat(ctx, "env/a"); err != nil || in.Size != int64(len(plain)) {
		t.Fatalf("Stat = %+v, %v; want the plaintext size %d", in, err, len(plain))
	}
	if infos, err := enc.List(ctx, "env/"); err != nil || len(infos) != 1 || infos[0].Size != int64(len(plain)) {
		t.Fatalf("List = %+v, %v; want the plaintext size %d", infos, err, len(plain))
	}

	undecryptable := func(name string, s blob.Store, key string) {
		t.Helper()
		b, err := blob.GetBytes(ctx, s, key)
		if !errors.Is(err, blob.ErrDecrypt) {
			t.Errorf("%s: Get = %d bytes, %v; want ErrDecrypt", name, len(b), err)
			return
		}
		t.Logf("%s: %v", name, err)
	}
	undecryptable("wrong key", encrypt(t, inner, otherKey), "env/a")

	// Each tampering rewrites the envelope of its own key in place, so
	// the header's binding to the key holds and the body is what is
	// checked.
	tamper := func(name, key string, f func(b []byte) []byte) {
		t.Helper()
		if err := blob.PutBytes(ctx, enc, key, plain); err != nil {
			t.Fatal(err)
		}
		b, err := blob.GetBytes(ctx, inner, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := blob.PutBytes(ctx, inner, key, f(b)); err != nil {
			t.Fatal(err)
		}
		undecryptable(name, enc, key)
	}
	flip := func(i func(n int) int) func([]byte) []byte {
		return func(b []byte) []byte { b[i(len(b))] ^= 0x01; return b }
	}
	lastSegment := len(raw) - (segs-1)*envSegment
	tamper("flipped body byte", "env/flip-body", flip(func(int) int { return envSegment + 100 }))
	tamper("flipped header byte", "env/flip-header", flip(func(int) int { return 30 }))
	tamper("flipped last tag byte", "env/flip-last", flip(func(n int) int { return n - 1 }))
	tamper("truncated at a segment boundary", "env/cut-chunk", func(b []byte) []byte { return b[:len(b)-lastSegment] })
	tamper("truncated by one byte", "env/cut-byte", func(b []byte) []byte { return b[:len(b)-1] })
	tamper("truncated header", "env/cut-header", func(b []byte) []byte { return b[:envHeader-1] })
	tamper("segments swapped", "env/swap", func(b []byte) []byte {
		s1 := slices.Clone(b[envSegment : 2*envSegment])
		copy(b[envSegment:], b[2*envSegment:3*envSegment])
		copy(b[2*envSegment:], s1)
		return b
	})
	tamper("segment appended", "env/extend", func(b []byte) []byte { return append(b, b[envSegment:2*envSegment]...) })
	if err := blob.PutBytes(ctx, inner, "env/moved", raw); err != nil {
		t.Fatal(err)
	}
	undecryptable("moved to another key", enc, "env/moved")
	if err := blob.PutBytes(ctx, inner, "env/plain", bytes.Repeat([]byte("never encrypted "), 10)); err != nil {
		t.Fatal(err)
	}
	undecryptable("stored in the clear", enc, "env/plain")
	if _, err := enc.Stat(ctx, "env/cut-header"); !errors.Is(err, blob.ErrDecrypt) {
		t.Errorf("Stat of an impossible envelope size = %v, want ErrDecrypt", err)
	}

	// Create-only compares plaintexts, since every envelope differs.
	if err := blob.PutBytes(ctx, enc, "env/a", plain, blob.CreateOnly()); err != nil {
		t.Errorf("identical create-only re-put through encryption: %v", err)
	}
	if err := blob.PutBytes(ctx, enc, "env/a", plain[1:], blob.CreateOnly()); !errors.Is(err, blob.ErrExists) {
		t.Errorf("different create-only put through encryption: %v, want ErrExists", err)
	}
}
