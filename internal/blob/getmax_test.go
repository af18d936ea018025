package blob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tether-run/tether/internal/blob"
)

func TestGetBytesMax(t *testing.T) {
	ctx := context.Background()
	s := blob.NewMem()
	data := bytes.Repeat([]byte("x"), 100)
	if err := blob.PutBytes(ctx, s, "k", data); err != nil {
		t.Fatal(err)
	}
	if got, err := blob.GetBytesMax(ctx, s, "k", 100); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("GetBytesMax at the size = %d bytes, %v", len(got), err)
	}
	got, err := blob.GetBytesMax(ctx, s, "k", 99)
	if !errors.Is(err, blob.ErrTooLarge) || got != nil {
		t.Fatalf("GetBytesMax under the size = %d bytes, %v; want ErrTooLarge", len(got), err)
	}
	if !strings.Contains(err.Error(), `"k"`) || !strings.Contains(err.Error(), "99") {
		t.Errorf("the error does not name the key and the limit: %v", err)
	}
	// A zero limit admits only an empty blob (a negative one is no limit).
	if got, err := blob.GetBytesMax(ctx, s, "k", 0); !errors.Is(err, blob.ErrTooLarge) || got != nil {
		t.Fatalf("GetBytesMax with a zero limit = %d bytes, %v; want ErrTooLarge", len(got), err)
	}
	if _, err := blob.GetBytesMax(ctx, s, "missing", 10); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("GetBytesMax of a missing key = %v, want ErrNotFound", err)
	}
	if err := blob.PutBytes(ctx, s, "empty", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := blob.GetBytesMax(ctx, s, "empty", 0); err != nil || len(got) != 0 {
		t.Fatalf("GetBytesMax of an empty blob = %q, %v", got, err)
	}
}

// An endless blob is refused once more than max bytes arrived, without
// reading the rest (GetBytes would never return).
func TestGetBytesMaxStopsReading(t *testing.T) {
	body := &endless{}
	s := &oneReader{Store: blob.NewMem(), body: body}
	_, err := blob.GetBytesMax(context.Background(), s, "huge", 1<<20)
	if !errors.Is(err, blob.ErrTooLarge) {
		t.Fatalf("GetBytesMax = %v, want ErrTooLarge", err)
	}
	if body.n > 1<<20+64<<10 {
		t.Errorf("read %d bytes for a 1 MiB limit", body.n)
	}
	if !body.closed {
		t.Error("the body was not closed")
	}
	// A zero limit stops at the first byte too.
	body = &endless{limit: 8 << 20}
	s = &oneReader{Store: blob.NewMem(), body: body}
	if _, err := blob.GetBytesMax(context.Background(), s, "big", 0); !errors.Is(err, blob.ErrTooLarge) {
		t.Fatalf("GetBytesMax with a zero limit = %v, want ErrTooLarge", err)
	}
	if body.n > 64<<10 {
		t.Errorf("read %d bytes for a zero limit", body.n)
	}
}

// endless yields zeros forever (or up to limit, if set) and counts them.
type endless struct {
	n, limit int64
	closed   bool
}

func (e *endless) Read(p []byte) (int, error) {
	if e.limit > 0 && e.n >= e.limit {
		return 0, io.EOF
	}
	if e.limit > 0 {
		p = p[:min(int64(len(p)), e.limit-e.n)]
	}
	clear(p)
	e.n += int64(len(p))
	return len(p), nil
}

func (e *endless) Close() error { e.closed = true; return nil }

// oneReader serves body for every Get.
type oneReader struct {
	blob.Store
	body io.ReadCloser
}

func (o *oneReader) Get(context.Context, string) (io.ReadCloser, error) { return o.body, nil }
