package runstore_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"compress/gzip"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// Save stores a checkpoint as a gzip member of its JSON, inside the MAC
// line when the store has a key, and Get reads it back unchanged.
func TestCheckpointIsStoredCompressed(t *testing.T) {
	ctx := context.Background()
	for name, key := range map[string][]byte{"unsigned": nil, "signed": testKey(1)} {
		t.Run(name, func(t *testing.T) {
			b := blob.NewMem()
			s := runstore.New(b, runstore.WithKey(key))
			cp := toolCheckpoint("r1", 1, "make", "test")
			cp.Path = nil
			for range 200 {
				cp.Path = append(cp.Path, runstore.Step{Node: "check", Visit: 1, Status: "ok", StartedAt: "2026-12-01T10:00:00Z", DurationMS: 40})
			}
			if err := s.Save(ctx, "r1", cp); err != nil {
				t.Fatal(err)
			}
			raw, err := blob.GetBytes(ctx, b, cpKey1)
			if err != nil {
				t.Fatal(err)
			}
			header, body := splitMAC(raw)
			if (key != nil) != (len(header) > 0) {
				t.Fatalf("stored %.20q: a MAC line iff the store has a key", raw)
			}
			plain, _ := runstore.Encode(cp)
			if !bytes.HasPrefix(body, gzipMagic) || len(body) > len(plain)/4 {
				t.Fatalf("stored body is %d bytes starting %x; want a gzip member well under the %d bytes of JSON", len(body), body[:4], len(plain))
			}
			got, err := s.Get(ctx, "r1", 1)
			if err != nil {
				t.Fatal(err)
			}
			if again, _ := runstore.Encode(got); !bytes.Equal(again, plain) {
				t.Fatalf("Get returned\n%s\nwant\n%s", again, plain)
			}
		})
	}
}

// Checkpoints written before compression, bare JSON or a MAC line and
// JSON, read as before.
func TestUncompressedCheckpointsStillRead(t *testing.T) {
	ctx := context.Background()
	b := blob.NewMem()
	plain, _ := runstore.Encode(toolCheckpoint("r1", 1, "make"))
	if err := blob.PutBytes(ctx, b, cpKey1, plain); err != nil {
		t.Fatal(err)
	}
	if cp, err := runstore.New(b).Get(ctx, "r1", 1); err != nil || runapi.GraphOrEmpty(cp).Nodes[0].Run[0] != "make" {
		t.Fatalf("Get of a bare JSON checkpoint = %+v, %v", cp, err)
	}
	if err := blob.PutBytes(ctx, b, cpKey1, runstore.Seal(testKey(1), "r1", 1, plain)); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*runstore.Store{"keyed": runstore.New(b, runstore.WithKey(testKey(1))), "keyless": runstore.New(b)} {
		if cp, err := s.Get(ctx, "r1", 1); err != nil || runapi.GraphOrEmpty(cp).Nodes[0].Run[0] != "make" {
			t.Fatalf("%s Get of a sealed JSON checkpoint = %+v, %v", name, cp, err)
		}
	}
}

// A frame that would decompress past MaxCheckpointBytes is refused from
// its header, without allocating its content: whether it states its size,
// hides it (a streamed frame), or states a small size and is followed by
// more.
func TestCheckpointBombIsRefused(t *testing.T) {
	ctx := context.Background()
	b := blob.NewMem()
	s := runstore.New(b)
	if err := s.Save(ctx, "r1", toolCheckpoint("r1", 1, "make")); err != nil {
		t.Fatal(err) // and warms the decoder up, so its tables are not counted
	}
	if _, err := s.Get(ctx, "r1", 1); err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, runstore.MaxCheckpointBytes+1)
	var streamed bytes.Buffer
	zw, err := gzip.NewWriterLevel(&streamed, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(zeros); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	small, _ := runstore.Encode(toolCheckpoint("r1", 2, "make"))
	// A member that lies about its size: the bomb's body under a trailer
	// that states a small one.
	liar := bytes.Clone(streamed.Bytes())
	copy(liar[len(liar)-4:], []byte{100, 0, 0, 0})
	bombs := map[string][]byte{
		"states its size":       runstore.Compress(zeros),
		"streamed":              streamed.Bytes(),
		"states less":           liar,
		"more than it states":   append(runstore.Compress(small), runstore.Compress(zeros)...),
		"signed, keyless store": runstore.Seal(testKey(1), "r1", 2, runstore.Compress(zeros)),
	}
	zeros = nil
	for name, bomb := range bombs {
		t.Run(name, func(t *testing.T) {
			if len(bomb) > 1<<20 {
				t.Fatalf("test setup: the bomb is %d bytes, not a small frame", len(bomb))
			}
			if err := blob.PutBytes(ctx, b, "runs/r1/checkpoints/00000000000000000002.json", bomb); err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := s.Get(ctx, "r1", 2)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, runstore.ErrCorruptCheckpoint) || errors.Is(err, blob.ErrNotFound) {
				t.Fatalf("Get of a gzip bomb = %v, want ErrCorruptCheckpoint", err)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
				t.Fatalf("refusing the bomb allocated %d bytes", n)
			}
		})
	}
}

// A damaged body is a clear ErrCorruptCheckpoint that names the object
// and what to do, never a panic and never not-found.
func TestCorruptCheckpointIsRefused(t *testing.T) {
	ctx := context.Background()
	plain, _ := runstore.Encode(toolCheckpoint("r1", 1, "make"))
	frame := runstore.Compress(plain)
	flipped := bytes.Clone(frame)
	flipped[len(flipped)/2] ^= 0xFF
	cases := map[string][]byte{
		"truncated":           frame[:len(frame)-5],
		"header only":         frame[:6],
		"magic only":          gzipMagic,
		"garbage after magic": append(bytes.Clone(gzipMagic), bytes.Repeat([]byte{0xEE}, 64)...),
		"flipped byte":        flipped,
		"neither":             []byte("PK\x03\x04 not a checkpoint"),
		"empty":               nil,
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			b := blob.NewMem()
			if err := blob.PutBytes(ctx, b, cpKey1, data); err != nil {
				t.Fatal(err)
			}
			_, err := runstore.New(b).Get(ctx, "r1", 1)
			if !errors.Is(err, runstore.ErrCorruptCheckpoint) || errors.Is(err, blob.ErrNotFound) {
				t.Fatalf("Get = %v, want ErrCorruptCheckpoint", err)
			}
			if msg := err.Error(); !strings.Contains(msg, cpKey1) || !strings.Contains(msg, "backup") {
				t.Fatalf("error %q does not name the object and what to do", msg)
			}
		})
	}
}

// A keyed store checks the MAC of the stored bytes before it decompresses
// anything: a flipped byte is an authentication failure, not a damaged
// frame, even where the frame would no longer decompress.
func TestSignedCompressedCheckpointIsVerifiedFirst(t *testing.T) {
	ctx := context.Background()
	b := blob.NewMem()
	s := runstore.New(b, runstore.WithKey(testKey(1)))
	if err := s.Save(ctx, "r1", toolCheckpoint("r1", 1, "make")); err != nil {
		t.Fatal(err)
	}
	raw, _ := blob.GetBytes(ctx, b, cpKey1)
	header, body := splitMAC(raw)
	for _, i := range []int{0, len(body) / 2, len(body) - 1} {
		forged := append(bytes.Clone(header), body...)
		forged[len(header)+i] ^= 0x01
		if err := blob.PutBytes(ctx, b, cpKey1, forged); err != nil {
			t.Fatal(err)
		}
		_, err := s.Get(ctx, "r1", 1)
		if !errors.Is(err, runstore.ErrCheckpointAuth) || errors.Is(err, runstore.ErrCorruptCheckpoint) {
			t.Fatalf("Get with body byte %d flipped = %v, want ErrCheckpointAuth alone", i, err)
		}
	}
	bomb := append(bytes.Clone(header), runstore.Compress(make([]byte, 1<<20))...)
	if err := blob.PutBytes(ctx, b, cpKey1, bomb); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "r1", 1); !errors.Is(err, runstore.ErrCheckpointAuth) {
		t.Fatalf("Get of another frame under the MAC line = %v, want ErrCheckpointAuth", err)
	}
}

// `tether store sign` signs compressed and bare JSON checkpoints alike,
// leaving each body as it found it.
func TestSignKeepsEachBody(t *testing.T) {
	ctx := context.Background()
	b := blob.NewMem()
	if err := runstore.New(b).Save(ctx, "r1", toolCheckpoint("r1", 1, "make")); err != nil {
		t.Fatal(err)
	}
	plain, _ := runstore.Encode(toolCheckpoint("r1", 2, "make"))
	cpKey2 := "runs/r1/checkpoints/00000000000000000002.json"
	if err := blob.PutBytes(ctx, b, cpKey2, plain); err != nil {
		t.Fatal(err)
	}
	keyed := runstore.New(b, runstore.WithKey(testKey(1)))
	rep, err := keyed.Sign(ctx, "r1")
	if err != nil || len(rep.Signed) != 2 {
		t.Fatalf("Sign = %+v, %v", rep, err)
	}
	for key, prefix := range map[string][]byte{cpKey1: gzipMagic, cpKey2: []byte("{")} {
		raw, _ := blob.GetBytes(ctx, b, key)
		if header, body := splitMAC(raw); len(header) == 0 || !bytes.HasPrefix(body, prefix) {
			t.Fatalf("%s after Sign: %.8q…; want a MAC line, then the body as it was", key, raw)
		}
	}
	for seq := int64(1); seq <= 2; seq++ {
		if cp, err := keyed.Get(ctx, "r1", seq); err != nil || cp.Seq != seq {
			t.Fatalf("keyed Get %d after Sign = %v, %v", seq, cp, err)
		}
	}
	// A damaged unsigned checkpoint is not signed.
	if err := blob.PutBytes(ctx, b, "runs/r2/checkpoints/00000000000000000001.json", gzipMagic); err != nil {
		t.Fatal(err)
	}
	if _, err := keyed.Sign(ctx, "r2"); !errors.Is(err, runstore.ErrCorruptCheckpoint) {
		t.Fatalf("Sign of a damaged checkpoint = %v, want ErrCorruptCheckpoint", err)
	}
}
