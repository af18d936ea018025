package console

import (
	"context"
	"fmt"

	"github.com/tether-run/tether/internal/runstore"
)

// A run's checkpoints are its history: checkpoint k holds the run as it
// stood after its k-th save, its latest steps and each node's output of
// that time. A page about an old visit finds the checkpoint saved right
// after it by a binary search along the run's line of history. A rewind
// starts a new line from an older checkpoint, so the search goes line by
// line, newest first (a rewound run's "writer visit 3" is the one its
// current line holds).

// peek reads checkpoint seq of run without its path blocks (cached).
func (s *Server) peek(ctx context.Context, run string, seq int64) (*runstore.Checkpoint, error) {
	key := fmt.Sprintf("%s/%d", run, seq)
	if cp, ok := s.caches.peeked.get(key); ok {
		return cp, nil
	}
	cp, err := s.opts.Runs.Peek(ctx, run, seq)
	if err != nil {
		return nil, err
	}
	s.caches.peeked.put(key, cp)
	return cp, nil
}

// checkpoint reads checkpoint seq of run whole (cached).
func (s *Server) checkpoint(ctx context.Context, run string, seq int64) (*runstore.Checkpoint, error) {
	key := fmt.Sprintf("%s/%d", run, seq)
	if cp, ok := s.caches.full.get(key); ok {
		return cp, nil
	}
	cp, err := s.opts.Runs.Get(ctx, run, seq)
	if err != nil {
		return nil, err
	}
	s.caches.full.put(key, cp)
	return cp, nil
}

// seqs lists run's checkpoint numbers, oldest first; a page that asked
// once (withListing) is given the same list again, not a second listing:
// a long run's listing is most of its page's time (docs/performance.md).
func (s *Server) seqs(ctx context.Context, run string) ([]int64, error) {
	l, _ := ctx.Value(listingKey{}).(*listing)
	if l != nil && l.run == run && l.seqs != nil {
		return l.seqs, nil
	}
	infos, err := s.opts.Runs.List(ctx, run)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(infos))
	for i, in := range infos {
		out[i] = in.Seq
	}
	if l != nil && l.run == run {
		l.seqs = out
	}
	return out, nil
}

// listing is one page's list of a run's checkpoints.
type listing struct {
	run  string
	seqs []int64
}

type listingKey struct{}

// withListing is ctx for one page about run, which lists its checkpoints
// at most once.
func withListing(ctx context.Context, run string) context.Context {
	return context.WithValue(ctx, listingKey{}, &listing{run: run})
}

// findCheckpoint returns the earliest checkpoint of run's current line of
// history for which holds is true (nil when none is), holds being false
// and then true along each line: "the visit was recorded", "the path
// reached step n".
func (s *Server) findCheckpoint(ctx context.Context, run string, holds func(*runstore.Checkpoint) bool) (*runstore.Checkpoint, error) {
	all, err := s.seqs(ctx, run)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, nil
	}
	end := len(all) - 1 // the line's last checkpoint, an index into all
	for {
		last, err := s.peek(ctx, run, all[end])
		if err != nil {
			return nil, err
		}
		if !holds(last) {
			return nil, nil
		}
		// Where this line began: the rewind checkpoint that copied an
		// older one (every checkpoint after it carries its lineage).
		begin := 0
		var from int64 = -1
		if l := last.Lineage; l != nil && l.Kind == "rewind" && l.Run == run {
			from = l.Seq
			lo, hi := 0, end
			if i := index(all, l.At); l.At > 0 && i >= 0 {
				lo, hi = i, i // the rewind says where it wrote its checkpoint
			}
			for lo < hi {
				mid := (lo + hi) / 2
				cp, err := s.peek(ctx, run, all[mid])
				if err != nil {
					return nil, err
				}
				if sameLineage(cp.Lineage, l) {
					hi = mid
				} else {
					lo = mid + 1
				}
			}
			begin = lo
		}
		first, err := s.peek(ctx, run, all[begin])
		if err != nil {
			return nil, err
		}
		if holds(first) && from > 0 {
			// It held already when the line began: look in the line the
			// rewind went back to, up to the checkpoint it copied.
			i := index(all, from)
			if i < 0 || i >= end {
				return first, nil
			}
			end = i
			continue
		}
		lo, hi := begin, end
		for lo < hi {
			mid := (lo + hi) / 2
			cp, err := s.peek(ctx, run, all[mid])
			if err != nil {
				return nil, err
			}
			if holds(cp) {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		return s.peek(ctx, run, all[lo])
	}
}

func sameLineage(a, b *runstore.Lineage) bool {
	return a != nil && b != nil && *a == *b
}

func index(all []int64, seq int64) int {
	lo, hi := 0, len(all)
	for lo < hi {
		mid := (lo + hi) / 2
		if all[mid] < seq {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(all) && all[lo] == seq {
		return lo
	}
	return -1
}

// visitCheckpoint is the checkpoint saved right after node's visit
// (whole, with its path): its outputs are that visit's, its workspace
// the files the visit left.
func (s *Server) visitCheckpoint(ctx context.Context, run, node string, visit int) (*runstore.Checkpoint, error) {
	cp, err := s.findCheckpoint(ctx, run, func(cp *runstore.Checkpoint) bool { return cp.Visits[node] >= visit && !pausedAt(cp, node, visit) })
	if err != nil || cp == nil {
		return nil, err
	}
	return s.checkpoint(ctx, run, cp.Seq)
}

// pausedAt says cp was saved while node's visit waited for an answer: it
// counts the visit, which has not ended yet.
func pausedAt(cp *runstore.Checkpoint, node string, visit int) bool {
	return cp.Pause != nil && cp.Pause.NodeID == node && cp.Pause.Visit == visit
}

// stepsBetween returns steps lo..hi (numbered from 1) of run's path:
// from have (the newest steps, ending at step total) where they are
// there, else from the checkpoint whose path reached hi.
func (s *Server) stepsBetween(ctx context.Context, run string, have []runstore.Step, total, lo, hi int) ([]runstore.Step, error) {
	if first := total - len(have) + 1; lo >= first {
		return have[lo-first : hi-first+1], nil
	}
	cp, err := s.findCheckpoint(ctx, run, func(cp *runstore.Checkpoint) bool { return cp.PathTotal >= hi })
	if err != nil {
		return nil, err
	}
	if cp == nil {
		return nil, fmt.Errorf("no checkpoint of run %s holds steps %d-%d", run, lo, hi)
	}
	whole, err := s.checkpoint(ctx, run, cp.Seq)
	if err != nil {
		return nil, err
	}
	first := whole.PathTotal - len(whole.Path) + 1
	if lo < first {
		lo = first
	}
	if hi > whole.PathTotal || lo > hi {
		return nil, fmt.Errorf("run %s's checkpoints no longer hold steps %d-%d", run, lo, hi)
	}
	return whole.Path[lo-first : hi-first+1], nil
}
