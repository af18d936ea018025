package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ProbePrefix is where a worker probes its store: workers/<id>/, beside
// runs/ and never inside a run.
func ProbePrefix(workerID string) string {
	id := strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '-'
	}, workerID)
	id = strings.TrimLeft(id, ".")
	if id == "" {
		id = "worker"
	}
	if len(id) > 200 {
		id = id[:200]
	}
	return "workers/" + id + "/"
}

// Probe checks that s can write an object under prefix, read the same
// bytes back, and delete it: what a worker must be able to do before it
// takes a visit. Its error says which step failed, on which key, and why,
// in one line.
func Probe(ctx context.Context, s Store, prefix string) error {
	key := prefix + "probe-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	want := []byte("tether store probe " + key)
	if err := PutBytes(ctx, s, key, want); err != nil {
		return fmt.Errorf("write failed: %w", err)
	}
	got, err := GetBytesMax(ctx, s, key, int64(len(want))+1)
	if err != nil {
		_ = s.Delete(ctx, key)
		return fmt.Errorf("wrote %s, read back failed: %w", key, err)
	}
	if !bytes.Equal(got, want) {
		_ = s.Delete(ctx, key)
		return fmt.Errorf("wrote %s but read back other bytes (%d, want %d): the store does not keep what it is given", key, len(got), len(want))
	}
	if err := s.Delete(ctx, key); err != nil {
		return fmt.Errorf("wrote and read %s, delete failed: %w", key, err)
	}
	if _, err := s.Stat(ctx, key); !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("deleted %s but it is still there (%v)", key, err)
	}
	return nil
}
