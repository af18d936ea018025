package blob_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tether-run/tether/internal/blob"
)

// withFifoWriter opens path for writing in the background and closes it
// at once, so a reader a broken store left blocked on the fifo returns and
// the test ends instead of hanging.
func releaseFifo(path string) {
	go func() {
		if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
	}()
}

// A fifo someone put at a key must not hang the store: every operation
// that reads a key returns promptly, within its deadline, with an error
// that is not absence; a plain Put replaces it.
func TestFSRefusesAFifoAtAKey(t *testing.T) {
	dir := t.TempDir()
	s := openFS(t, dir)
	defer s.Close()
	if err := os.MkdirAll(filepath.Join(dir, "runs", "r1"), 0o700); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "runs", "r1", "blob")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no fifos here: %v", err)
	}
	ops := map[string]func(ctx context.Context) error{
		"Get": func(ctx context.Context) error {
			rc, err := s.Get(ctx, "runs/r1/blob")
			if err == nil {
				_, err = io.ReadAll(rc)
				rc.Close()
			}
			return err
		},
		"GetBytesMax": func(ctx context.Context) error { _, err := blob.GetBytesMax(ctx, s, "runs/r1/blob", 1<<20); return err },
		"CreateOnlyPut": func(ctx context.Context) error {
			return blob.PutBytes(ctx, s, "runs/r1/blob", []byte("x"), blob.CreateOnly())
		},
		"Stat": func(ctx context.Context) error { _, err := s.Stat(ctx, "runs/r1/blob"); return err },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- op(ctx) }()
			select {
			case err := <-done:
				if err == nil || errors.Is(err, blob.ErrNotFound) {
					t.Fatalf("%s on a fifo = %v, want a fault that is not absence", name, err)
				}
				// The op ends at its deadline, give or take a busy
				// machine's scheduling; blocked, it would never end.
				if d := time.Since(start); d > 10*time.Second {
					t.Fatalf("%s took %v, far past its 2 s deadline", name, d)
				}
			case <-time.After(20 * time.Second):
				releaseFifo(fifo)
				t.Fatalf("%s blocked on a fifo past its deadline", name)
			}
		})
	}
	if err := blob.PutBytes(context.Background(), s, "runs/r1/blob", []byte("x")); err != nil {
		t.Fatalf("plain Put over a fifo: %v", err)
	}
	if got, err := blob.GetBytes(context.Background(), s, "runs/r1/blob"); err != nil || string(got) != "x" {
		t.Fatalf("Get after replacing the fifo = %q, %v", got, err)
	}
}

// A reader of a blob stops when its context ends, even mid-blob.
func TestFSGetHonoursTheContextWhileReading(t *testing.T) {
	s := openFS(t, t.TempDir())
	defer s.Close()
	if err := blob.PutBytes(context.Background(), s, "big", make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rc, err := s.Get(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := rc.Read(make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := rc.Read(make([]byte, 1024)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read after cancel = %v, want context.Canceled", err)
	}
	if _, err := io.Copy(io.Discard, rc); !errors.Is(err, context.Canceled) {
		t.Fatalf("io.Copy after cancel = %v, want context.Canceled", err)
	}
}
