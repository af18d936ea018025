package runstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/testenv"
)

const ulidA, ulidB, ulidC = "01JD0000000000000000000000", "01JD0000000000000000000001", "01JD0000000000000000000002"

func checkpoint(run string, seq int64) *runstore.Checkpoint {
	return &runstore.Checkpoint{
		RunID:  run,
		Seq:    seq,
		Status: runstore.StatusWaiting,
		Graph:  json.RawMessage(`{"name":"loop","start":"writer"}`),
		Inputs: map[string]any{"topic": "stores"},
		Cursor: []runstore.Cursor{{Node: "judge", Input: map[string]any{"draft": "v1"}, From: "writer"}},
		Outputs: map[string]map[string]any{
			"writer": {"text": "v1", "_session_id": "sess-1", "_backend": "claude_code"},
		},
		Visits: map[string]int{"writer": 2, "judge": 1},
		NodeSessions: map[string]runstore.NodeSessionSlot{
			"writer": {Backend: "claude_code", SessionID: "sess-1", Fingerprint: "fp", StateRef: runstore.SessionKey(run, "writer", ulidA)},
		},
		Pause: &runstore.PauseInfo{
			NodeID: "writer", Visit: 2, Questions: []runstore.Question{{ID: "q1", Text: "which?"}},
			Backend: "claude_code", SessionID: "sess-1",
			BackendSessionStateRef: runstore.PauseKey(run, "writer", ulidB),
		},
		LoopSnapshots: []runstore.LoopSnapshot{{Node: "writer", Visit: 1, Output: map[string]any{"text": "v0"}}},
		Path:          []runstore.Step{{Node: "writer", Visit: 1, Status: "ok"}},
	}
}

// runStoreSuite runs the run store's contract over a blob store backend.
func runStoreSuite(t *testing.T, newBlobs func(t *testing.T) blob.Store) {
	ctx := context.Background()
	open := func(t *testing.T) *runstore.Store {
		b := newBlobs(t)
		t.Cleanup(func() { b.Close() })
		return runstore.New(b)
	}

	t.Run("SaveGetLatestList", func(t *testing.T) {
		s := open(t)
		if _, err := s.Latest(ctx, "r1"); !errors.Is(err, runstore.ErrNoCheckpoint) || !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("Latest of an empty run = %v, want ErrNoCheckpoint wrapping blob.ErrNotFound", err)
		}
		if infos, err := s.List(ctx, "r1"); err != nil || len(infos) != 0 {
			t.Fatalf("List of an empty run = %v, %v", infos, err)
		}
		// Out of order, and across a digit boundary: 10 sorts after 9.
		for _, seq := range []int64{2, 10, 9, 1} {
			if err := s.Save(ctx, "r1", checkpoint("r1", seq)); err != nil {
				t.Fatalf("Save %d: %v", seq, err)
			}
		}
		infos, err := s.List(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for _, in := range infos {
			seqs = append(seqs, in.Seq)
			if in.Size == 0 || in.ModTime.IsZero() {
				t.Errorf("List: %+v lacks size or time", in)
			}
		}
		if !reflect.DeepEqual(seqs, []int64{1, 2, 9, 10}) {
			t.Fatalf("List seqs = %v", seqs)
		}
		latest, err := s.Latest(ctx, "r1")
		if err != nil || latest.Seq != 10 {
			t.Fatalf("Latest = %v, %v; want seq 10", latest, err)
		}
		want := checkpoint("r1", 10)
		want.Version = runstore.FormatVersion
		if !reflect.DeepEqual(latest, want) {
			t.Fatalf("Latest round trip:\n got %+v\nwant %+v", latest, want)
		}
		if _, err := s.Get(ctx, "r1", 3); !errors.Is(err, runstore.ErrNoCheckpoint) {
			t.Fatalf("Get of a missing seq = %v, want ErrNoCheckpoint", err)
		}
		// RunID may be left empty; the store stamps it.
		cp := checkpoint("", 11)
		if err := s.Save(ctx, "r1", cp); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Get(ctx, "r1", 11); err != nil || got.RunID != "r1" {
			t.Fatalf("Get 11 = %+v, %v", got, err)
		}
		if cp.RunID != "" {
			t.Fatal("Save modified the caller's checkpoint")
		}
	})

	t.Run("CreateOnly", func(t *testing.T) {
		s := open(t)
		if err := s.Save(ctx, "r1", checkpoint("r1", 1)); err != nil {
			t.Fatal(err)
		}
		if err := s.Save(ctx, "r1", checkpoint("r1", 1)); err != nil {
			t.Fatalf("identical re-save (a retried activity): %v", err)
		}
		other := checkpoint("r1", 1)
		other.Status = runstore.StatusFailed
		err := s.Save(ctx, "r1", other)
		if !errors.Is(err, runstore.ErrSeqTaken) || !errors.Is(err, blob.ErrExists) {
			t.Fatalf("different checkpoint under a taken seq = %v, want ErrSeqTaken", err)
		}
		if got, _ := s.Get(ctx, "r1", 1); got.Status != runstore.StatusWaiting {
			t.Fatalf("the refused save replaced the checkpoint: %s", got.Status)
		}

		// Two writers racing for one seq: exactly one wins.
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cp := checkpoint("r1", 2)
				cp.Error = fmt.Sprintf("writer %d", i)
				switch err := s.Save(ctx, "r1", cp); {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, runstore.ErrSeqTaken):
					t.Errorf("writer %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d writers took seq 2, want exactly 1", wins.Load())
		}
	})

	t.Run("Refusals", func(t *testing.T) {
		s := open(t)
		for _, c := range []struct {
			run string
			cp  *runstore.Checkpoint
		}{
			{"r1", checkpoint("r1", 0)},
			{"r1", checkpoint("r1", -1)},
			{"r1", checkpoint("r2", 1)},
			{"r1", nil},
			{"bad/run", checkpoint("bad/run", 1)},
			{"", checkpoint("", 1)},
		} {
			if err := s.Save(ctx, c.run, c.cp); err == nil {
				t.Errorf("Save(%q, %+v) succeeded", c.run, c.cp)
			}
		}
		if _, err := s.Get(ctx, "../x", 1); !errors.Is(err, runstore.ErrInvalidID) {
			t.Errorf("Get with a bad run id = %v", err)
		}
	})

	t.Run("UnknownVersion", func(t *testing.T) {
		b := newBlobs(t)
		defer b.Close()
		s := runstore.New(b)
		key := "runs/r1/checkpoints/00000000000000000001.json"
		if err := blob.PutBytes(ctx, b, key, []byte(`{"version":99,"run_id":"r1","seq":1}`)); err != nil {
			t.Fatal(err)
		}
		_, err := s.Latest(ctx, "r1")
		if !errors.Is(err, runstore.ErrUnknownVersion) {
			t.Fatalf("Latest of a version-99 checkpoint = %v, want ErrUnknownVersion", err)
		}
		if errors.Is(err, runstore.ErrNoCheckpoint) {
			t.Fatal("an unreadable checkpoint was reported as absent")
		}
	})

	t.Run("DeleteRun", func(t *testing.T) {
		b := newBlobs(t)
		defer b.Close()
		s := runstore.New(b)
		// Runs whose ids share a prefix with r1 must survive its delete.
		for _, run := range []string{"r1", "r10", "r1-x", "r1.x"} {
			for seq := int64(1); seq <= 3; seq++ {
				if err := s.Save(ctx, run, checkpoint(run, seq)); err != nil {
					t.Fatal(err)
				}
			}
			for _, k := range []string{
				runstore.SessionKey(run, "writer", ulidA),
				runstore.SessionKey(run, "writer", ulidC),
				runstore.SessionKey(run, "pause", ulidA), // a node named "pause"
				runstore.PauseKey(run, "writer", ulidB),
				runstore.PauseKey(run, "pause", ulidB),
			} {
				if err := blob.PutBytes(ctx, b, k, []byte("session"), blob.CreateOnly()); err != nil {
					t.Fatalf("Put(%q): %v", k, err)
				}
			}
		}
		if err := blob.PutBytes(ctx, b, "runs/r1/stray", []byte("?")); err != nil {
			t.Fatal(err)
		}
		runs, err := s.ListRuns(ctx)
		if err != nil || !reflect.DeepEqual(runs, []string{"r1", "r1-x", "r1.x", "r10"}) {
			t.Fatalf("ListRuns = %q, %v", runs, err)
		}

		rep, err := s.DeleteRun(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if rep.Checkpoints != 3 || rep.Sessions != 5 || rep.Pauses != 2 || rep.Other != 1 || rep.Total != 9 || len(rep.Keys) != 9 {
			t.Fatalf("DeleteRun report = %+v", rep)
		}
		if left, err := b.List(ctx, runstore.RunPrefix("r1")); err != nil || len(left) != 0 {
			t.Fatalf("left under r1: %v, %v", left, err)
		}
		if _, err := s.Latest(ctx, "r1"); !errors.Is(err, runstore.ErrNoCheckpoint) {
			t.Fatalf("Latest after delete = %v", err)
		}
		for _, run := range []string{"r10", "r1-x", "r1.x"} {
			if left, err := b.List(ctx, runstore.RunPrefix(run)); err != nil || len(left) != 8 {
				t.Fatalf("run %s lost blobs to r1's delete: %d left, %v", run, len(left), err)
			}
		}
		runs, err = s.ListRuns(ctx)
		if err != nil || !reflect.DeepEqual(runs, []string{"r1-x", "r1.x", "r10"}) {
			t.Fatalf("ListRuns after delete = %q, %v", runs, err)
		}
		// Deletes are retried: a second one finds nothing and succeeds.
		if rep, err := s.DeleteRun(ctx, "r1"); err != nil || rep.Total != 0 {
			t.Fatalf("second DeleteRun = %+v, %v", rep, err)
		}
	})

	t.Run("PathIsWrittenOnce", func(t *testing.T) {
		b := newBlobs(t)
		t.Cleanup(func() { b.Close() })
		s := runstore.New(b)
		var saved []*runstore.Checkpoint
		for seq, total := range []int{40, 120, 199, 200, 201, 260, 777} {
			cp := checkpoint("loop", int64(seq+1))
			cp.Path, cp.PathTotal = steps(total), total
			require.NoError(t, s.Save(ctx, "loop", cp))
			saved = append(saved, cp)
		}
		blocks, err := b.List(ctx, runstore.RunPrefix("loop")+"path/")
		require.NoError(t, err)
		// Blocks 1-4 of the first 200 steps, 5 (201-250), and the three the
		// last window holds whole (601-750): each stored once.
		assert.Len(t, blocks, 8)
		for _, want := range saved {
			have, err := s.Get(ctx, "loop", want.Seq)
			require.NoError(t, err)
			assert.Equal(t, want.Path, have.Path, "checkpoint %d reads back its whole path", want.Seq)
			assert.Zero(t, have.PathLost)
		}
		// What is stored holds only the steps of blocks not yet complete.
		raw, err := blob.GetBytes(ctx, b, "runs/loop/checkpoints/00000000000000000007.json")
		require.NoError(t, err)
		plain, err := runstore.Decompress(raw)
		require.NoError(t, err)
		stored, err := runstore.Decode(plain)
		require.NoError(t, err)
		assert.Len(t, stored.Path, 23+27, "of steps 578-777, 578-600 and 751-777 are inline")
		assert.Len(t, stored.PathBlocks, 3)
		// A lost block loses history, never the checkpoint.
		require.NoError(t, b.Delete(ctx, "runs/loop/path/"+stored.PathBlocks[1].Digest))
		have, err := s.Get(ctx, "loop", 7)
		require.NoError(t, err)
		assert.Equal(t, saved[6].Path[200-77:], have.Path, "the path goes on from the block after the lost one")
		assert.Equal(t, 23+50+50, have.PathLost)
		// Saving the same state again, its steps timed anew, still succeeds.
		again := checkpoint("loop", 6)
		again.Path, again.PathTotal = steps(260), 260
		for i := range again.Path {
			again.Path[i].DurationMS++
		}
		require.NoError(t, s.Save(ctx, "loop", again))
		rep, err := s.DeleteRun(ctx, "loop")
		require.NoError(t, err)
		// The second save timed steps 61-260 anew: three blocks more.
		assert.Equal(t, 8-1+3, rep.PathBlocks, "every block left is deleted with the run")
	})
}

// steps is a path of the last 200 of total steps.
func steps(total int) []runstore.Step {
	var path []runstore.Step
	for n := max(total-199, 1); n <= total; n++ {
		path = append(path, runstore.Step{Node: "writer", Visit: n, Status: "ok", StartedAt: fmt.Sprintf("2026-12-02T12:00:%02d.%03dZ", n%60, n%1000), DurationMS: int64(n % 37)})
	}
	return path
}

func TestRunStoreMem(t *testing.T) {
	runStoreSuite(t, func(t *testing.T) blob.Store { return blob.NewMem() })
}

func TestRunStoreFS(t *testing.T) {
	runStoreSuite(t, func(t *testing.T) blob.Store {
		s, err := blob.OpenFS(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestRunStoreEncrypted(t *testing.T) {
	runStoreSuite(t, func(t *testing.T) blob.Store {
		s, err := blob.Encrypted(blob.NewMem(), make([]byte, 32))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// On versitygw the layout also proves that no key nests under another:
// the server refuses nested keys.
func TestRunStoreS3(t *testing.T) {
	srv := testenv.VersityGW(t)
	var n atomic.Int64
	runStoreSuite(t, func(t *testing.T) blob.Store {
		s, err := blob.Open(context.Background(), srv.URL(fmt.Sprintf("rs%d", n.Add(1))), blob.WithCredentials(srv.Credentials()))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// faultyStore fails every operation like a sick disk would.
type faultyStore struct{ blob.Store }

var errDisk = errors.New("input/output error")

func (faultyStore) List(context.Context, string) ([]blob.Info, error) { return nil, errDisk }

func TestFaultIsNotAbsence(t *testing.T) {
	s := runstore.New(faultyStore{blob.NewMem()})
	ctx := context.Background()
	if _, err := s.Latest(ctx, "r1"); err == nil || errors.Is(err, runstore.ErrNoCheckpoint) || !errors.Is(err, errDisk) {
		t.Fatalf("Latest on a failing store = %v, want the fault, not ErrNoCheckpoint", err)
	}
	if _, err := s.DeleteRun(ctx, "r1"); !errors.Is(err, errDisk) {
		t.Fatalf("DeleteRun on a failing store = %v", err)
	}
	if _, err := s.ListRuns(ctx); !errors.Is(err, errDisk) {
		t.Fatalf("ListRuns on a failing store = %v", err)
	}
}
