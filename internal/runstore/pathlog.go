package runstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/blob"
)

// The path is history: a loop's checkpoint would otherwise repeat its last
// 200 steps every visit. Save writes the path in blocks of PathBlockSteps
// consecutive steps, aligned on the run's step count, each once, as an
// immutable blob named by the sha256 of what it holds
// (runs/<run>/path/<sha256>); the checkpoint names the blocks it spans and
// holds inline only the steps of the blocks not yet complete. Get puts the
// path back together, so a checkpoint read from the store holds the same
// path it was saved with.
//
// A block is untrusted input like every blob: it is read capped, checked
// against the digest the (signed) checkpoint names, and must hold the
// steps it is named for. A block that is missing or fails a check loses
// only history: Get returns the path from the first step after it, and
// PathLost counts what was dropped.

// PathBlockSteps is how many steps one path block holds.
const PathBlockSteps = 50

// maxPathBlockBytes caps what Get reads of one block, and
// maxPathBlockPlain what it decompresses to: 50 steps with details of a
// few KB each stay far below both.
const (
	maxPathBlockBytes = 4 << 20
	maxPathBlockPlain = 16 << 20
)

// maxPathBlocks is the most blocks Get reads for one checkpoint: a path of
// 200 steps spans at most five. A checkpoint naming more keeps the newest.
const maxPathBlocks = 8

const pathDir = "path"

// PathBlock names one stored block of the path: the steps it holds, from
// First (the run's step number, counting from 1), and the sha256 of its
// stored bytes.
type PathBlock struct {
	First  int    `json:"first"`
	Steps  int    `json:"steps"`
	Digest string `json:"digest"`
}

// ErrPathBlock reports a path block that is missing or is not the one its
// checkpoint names.
var ErrPathBlock = errors.New("runstore: path block")

func pathBlockKey(run, digest string) string {
	return RunPrefix(run) + pathDir + "/" + digest
}

// isPathBlockKey reports whether key is a path block of run.
func isPathBlockKey(run, key string) bool {
	digest, ok := strings.CutPrefix(key, RunPrefix(run)+pathDir+"/")
	return ok && validDigest(digest)
}

// writtenBlocks remembers the path blocks this process has written, by
// run and first step, with the steps they hold: a loop's next checkpoint
// spans the same blocks, and finds them here without encoding, hashing or
// writing them again. It forgets each after blockMemory, so a run deleted
// and started again under the same id gets its blocks written anew.
type writtenBlocks struct {
	mu    sync.Mutex
	known map[string]blockMemo
}

type blockMemo struct {
	steps  []Step
	digest string
	at     time.Time
}

const (
	blockMemory = 5 * time.Minute
	maxMemos    = 1024 // about 5 MB of steps
)

func blockID(run string, first int) string { return run + "/" + strconv.Itoa(first) }

// digest returns the digest of the block of run from first when this
// process wrote it, with the same steps, recently.
func (w *writtenBlocks) digest(run string, first int, steps []Step) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, ok := w.known[blockID(run, first)]
	if !ok || time.Since(m.at) >= blockMemory || !slices.EqualFunc(m.steps, steps, sameStep) {
		return "", false
	}
	return m.digest, true
}

// sameStep compares two steps whole, whatever fields a step gains (it
// holds slices, so == does not apply).
func sameStep(a, b Step) bool { return reflect.DeepEqual(a, b) }

func (w *writtenBlocks) add(run string, first int, steps []Step, digest string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.known == nil:
		w.known = map[string]blockMemo{}
	case len(w.known) >= maxMemos:
		// A run needs its last few blocks; forget the stale ones, and
		// all of them if that is not enough.
		for id, m := range w.known {
			if time.Since(m.at) >= blockMemory {
				delete(w.known, id)
			}
		}
		if len(w.known) >= maxMemos {
			clear(w.known)
		}
	}
	w.known[blockID(run, first)] = blockMemo{steps: slices.Clone(steps), digest: digest, at: time.Now()}
}

// splitPath writes c's complete path blocks and returns c with them named
// in PathBlocks and taken out of Path.
func (s *Store) splitPath(ctx context.Context, run string, c *Checkpoint) error {
	first := c.PathTotal - len(c.Path) + 1 // the step number of c.Path[0]
	if len(c.PathBlocks) > 0 || first < 1 {
		return nil // already split, or a path that does not count its steps
	}
	var (
		inline []Step
		blocks []PathBlock
		at     = -1
	)
	for i := 0; i < len(c.Path); {
		n := first + i // step number of c.Path[i]
		start := (n-1)/PathBlockSteps*PathBlockSteps + 1
		if n != start || i+PathBlockSteps > len(c.Path) {
			inline = append(inline, c.Path[i])
			i++
			continue
		}
		steps := c.Path[i : i+PathBlockSteps]
		digest, ok := s.blocks.digest(run, n, steps)
		if !ok {
			plain, err := json.Marshal(steps)
			if err != nil {
				return err
			}
			body := Compress(plain)
			sum := sha256.Sum256(body)
			digest = hex.EncodeToString(sum[:])
			err = blob.PutBytes(ctx, s.b, pathBlockKey(run, digest), body, blob.CreateOnly())
			if err != nil && !errors.Is(err, blob.ErrExists) {
				return fmt.Errorf("write path block of steps %d-%d: %w", n, n+PathBlockSteps-1, err)
			}
			s.blocks.add(run, n, steps, digest)
		}
		if at < 0 {
			at = len(inline)
		}
		blocks = append(blocks, PathBlock{First: n, Steps: PathBlockSteps, Digest: digest})
		i += PathBlockSteps
	}
	if len(blocks) > 0 {
		c.Path, c.PathBlocks, c.PathBlocksAt = inline, blocks, at
	}
	return nil
}

// joinPath reads the blocks cp names back into its path.
func (s *Store) joinPath(ctx context.Context, run string, cp *Checkpoint) {
	if len(cp.PathBlocks) == 0 {
		return
	}
	at := min(max(cp.PathBlocksAt, 0), len(cp.Path))
	path := slices.Clone(cp.Path[:at])
	lost := 0
	blocks := cp.PathBlocks
	if over := len(blocks) - maxPathBlocks; over > 0 {
		lost += len(path)
		path = path[:0]
		for _, b := range blocks[:over] {
			lost += min(max(b.Steps, 0), PathBlockSteps)
		}
		blocks = blocks[over:]
	}
	for _, b := range blocks {
		steps, err := s.readPathBlock(ctx, run, b)
		if err != nil {
			lost += len(path) + min(max(b.Steps, 0), PathBlockSteps)
			path = path[:0]
			continue
		}
		path = append(path, steps...)
	}
	cp.Path = append(path, cp.Path[at:]...)
	cp.PathBlocks, cp.PathBlocksAt = nil, 0
	cp.PathLost = lost
}

func (s *Store) readPathBlock(ctx context.Context, run string, b PathBlock) ([]Step, error) {
	if b.Steps < 1 || b.Steps > PathBlockSteps || !validDigest(b.Digest) {
		return nil, fmt.Errorf("%w: %+v is not a block's name", ErrPathBlock, b)
	}
	key := pathBlockKey(run, b.Digest)
	body, err := blob.GetBytesMax(ctx, s.b, key, maxPathBlockBytes)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrPathBlock, key, err)
	}
	if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) != b.Digest {
		return nil, fmt.Errorf("%w %s: its content is not the block the checkpoint names", ErrPathBlock, key)
	}
	plain, err := decompressMax(body, maxPathBlockPlain)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrPathBlock, key, err)
	}
	var steps []Step
	if err := json.Unmarshal(plain, &steps); err != nil || len(steps) != b.Steps {
		return nil, fmt.Errorf("%w %s: it does not hold %d steps", ErrPathBlock, key, b.Steps)
	}
	return steps, nil
}
