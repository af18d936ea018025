package console

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/runlist"
	"github.com/tether-run/tether/internal/runstore"
)

// Live pages follow a run, or the list of runs, through server-sent
// events. One poller per thing watched asks Temporal for news every
// Poll, however many pages watch it, and stops when the last one leaves:
//
//   - "progress": the visits in flight, as their heartbeats last said
//     (a JSON list of {line, text, url}); within Poll of the heartbeat
//     reaching Temporal;
//   - "changed": something happened (a visit ended, a question came or
//     was answered, the run ended): the page fetches itself again and
//     puts in the parts that changed.

// event is one server-sent event.
type event struct {
	name string
	data string
}

type hub struct {
	s    *Server
	poll time.Duration

	mu      sync.Mutex
	watches map[string]*watch
	closed  bool
	done    chan struct{}
}

// watch is one thing watched and the pages watching it.
type watch struct {
	subs map[chan event]bool
	stop context.CancelFunc
	// last are the latest events sent, by name: a page that joins late
	// gets them first.
	last map[string]event
}

func newHub(s *Server, poll time.Duration) *hub {
	return &hub{s: s, poll: poll, watches: map[string]*watch{}, done: make(chan struct{})}
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	close(h.done)
	for _, w := range h.watches {
		w.stop()
	}
}

// subscribe adds a page to key's watch, starting its poller if it is the
// first; the returned function takes it off again.
func (h *hub) subscribe(key string, poll func(ctx context.Context, emit func(event))) (chan event, func()) {
	ch := make(chan event, 16)
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.watches[key]
	if w == nil {
		ctx, cancel := context.WithCancel(context.Background())
		w = &watch{subs: map[chan event]bool{}, stop: cancel, last: map[string]event{}}
		h.watches[key] = w
		go poll(ctx, func(e event) { h.emit(key, e) })
	}
	w.subs[ch] = true
	for _, e := range w.last {
		ch <- e
	}
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(w.subs, ch)
		if len(w.subs) == 0 {
			w.stop()
			delete(h.watches, key)
		}
	}
}

func (h *hub) emit(key string, e event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.watches[key]
	if w == nil {
		return
	}
	if e.name == "progress" {
		w.last[e.name] = e
	}
	for ch := range w.subs {
		select {
		case ch <- e:
		default: // a page that does not keep up misses a beat, not the run
		}
	}
}

// stream sends a watch's events to one page until it leaves.
func (h *hub) stream(w http.ResponseWriter, r *http.Request, key string, poll func(ctx context.Context, emit func(event))) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("X-Accel-Buffering", "no")
	ch, leave := h.subscribe(key, poll)
	defer leave()
	fmt.Fprint(w, "retry: 2000\n: live\n\n")
	fl.Flush()
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		case <-ping.C:
			fmt.Fprint(w, ": ping\n\n")
		case e := <-ch:
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, strings.ReplaceAll(e.data, "\n", "\ndata: "))
		}
		fl.Flush()
	}
}

// runEvents follows one run.
func (h *hub) runEvents(w http.ResponseWriter, r *http.Request) {
	run := r.PathValue("run")
	if err := runstore.ValidateRunID(run); err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	h.stream(w, r, "run/"+run, func(ctx context.Context, emit func(event)) { h.pollRun(ctx, run, emit) })
}

func (h *hub) pollRun(ctx context.Context, run string, emit func(event)) {
	var lastEvents int64 = -1
	lastStatus, lastProgress := "", ""
	t := time.NewTicker(h.poll)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		live, err := h.s.opts.Actions.Live(cctx, run)
		cancel()
		if err == nil {
			if lastEvents >= 0 && (live.Events != lastEvents || live.Temporal != lastStatus) {
				emit(event{name: "changed", data: live.Temporal})
			}
			lastEvents, lastStatus = live.Events, live.Temporal
			views := make([]progressView, 0, len(live.Running))
			for _, p := range live.Running {
				views = append(views, progressOf(run, p))
			}
			b, _ := json.Marshal(views)
			if string(b) != lastProgress {
				lastProgress = string(b)
				emit(event{name: "progress", data: lastProgress})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// runsEvents follows the list of runs: any run that starts, ends, or
// changes its status or node.
func (h *hub) runsEvents(w http.ResponseWriter, r *http.Request) {
	h.stream(w, r, "runs", h.pollRuns)
}

func (h *hub) pollRuns(ctx context.Context, emit func(event)) {
	var last uint64
	t := time.NewTicker(max(h.poll, 2*time.Second))
	defer t.Stop()
	for {
		if sum, err := h.runsDigest(ctx); err == nil {
			if last != 0 && sum != last {
				emit(event{name: "changed", data: "runs"})
			}
			last = sum
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// runsDigest sums what the first page of runs and the waiting ones show.
func (h *hub) runsDigest(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	d := fnv.New64a()
	for _, f := range []runlist.Filter{{}, {Status: runstore.StatusWaiting}} {
		pg, err := runlist.List(ctx, h.s.opts.Temporal, f, nil, runsPerPage)
		if err != nil {
			return 0, err
		}
		for _, row := range pg.Rows {
			fmt.Fprintf(d, "%s\x00%s\x00%s\x00%s\x00%s\n", row.ID, row.Execution, row.Status, row.Node, row.Closed)
		}
	}
	return d.Sum64() | 1, nil
}
