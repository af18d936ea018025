package blob

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// memStore keeps blobs in process memory, for unit tests. It enforces the
// same key and nesting rules as the durable backends so that tests catch a
// key scheme that would fail on disk or S3.
type memStore struct {
	mu    sync.RWMutex
	blobs map[string]memBlob
}

type memBlob struct {
	data []byte // never mutated once stored
	mod  time.Time
}

var (
	memNamedMu sync.Mutex
	memNamed   = map[string]*memStore{}
)

// NewMem returns an empty in-memory Store.
func NewMem() Store { return &memStore{blobs: map[string]memBlob{}} }

// openMem serves mem:// (a fresh store) and mem://NAME (one store per name
// for the life of the process, so two components of one test share it).
func openMem(name string) Store {
	if name == "" {
		return NewMem()
	}
	memNamedMu.Lock()
	defer memNamedMu.Unlock()
	s, ok := memNamed[name]
	if !ok {
		s = &memStore{blobs: map[string]memBlob{}}
		memNamed[name] = s
	}
	return s
}

func (m *memStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts ...PutOption) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	o := applyPut(opts)
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(size))
	}
	if _, err := io.Copy(&buf, putReader(ctx, key, r, size)); err != nil {
		return fmt.Errorf("blob: put %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("blob: put %q: %w", key, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.nestingLocked(key); err != nil {
		return err
	}
	if old, ok := m.blobs[key]; ok && o.createOnly {
		if bytes.Equal(old.data, buf.Bytes()) {
			return nil
		}
		return fmt.Errorf("%w: %q holds different bytes", ErrExists, key)
	}
	m.blobs[key] = memBlob{data: buf.Bytes(), mod: time.Now()}
	return nil
}

func (m *memStore) nestingLocked(key string) error {
	for i := strings.IndexByte(key, '/'); i >= 0; i = nextSlash(key, i) {
		if _, ok := m.blobs[key[:i]]; ok {
			return fmt.Errorf("blob: put %q: key nests under the existing key %q; keys must not nest", key, key[:i])
		}
	}
	for k := range m.blobs {
		if strings.HasPrefix(k, key+"/") {
			return fmt.Errorf("blob: put %q: the existing key %q nests under it; keys must not nest", key, k)
		}
	}
	return nil
}

func nextSlash(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

func (m *memStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := checkCall(ctx, "get", key); err != nil {
		return nil, err
	}
	m.mu.RLock()
	b, ok := m.blobs[key]
	m.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, key)
	}
	return io.NopCloser(bytes.NewReader(b.data)), nil
}

func (m *memStore) Stat(ctx context.Context, key string) (Info, error) {
	if err := checkCall(ctx, "stat", key); err != nil {
		return Info{}, err
	}
	m.mu.RLock()
	b, ok := m.blobs[key]
	m.mu.RUnlock()
	if !ok {
		return Info{}, fmt.Errorf("%w: %q", ErrNotFound, key)
	}
	return Info{Key: key, Size: int64(len(b.data)), ModTime: b.mod}, nil
}

func (m *memStore) List(ctx context.Context, prefix string) ([]Info, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blob: list %q: %w", prefix, err)
	}
	m.mu.RLock()
	var out []Info
	for k, b := range m.blobs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, Info{Key: k, Size: int64(len(b.data)), ModTime: b.mod})
		}
	}
	m.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (m *memStore) Delete(ctx context.Context, key string) error {
	if err := checkCall(ctx, "delete", key); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.blobs, key)
	m.mu.Unlock()
	return nil
}

func (m *memStore) Close() error { return nil }
