package soak

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/notify"
	"github.com/tether-run/tether/internal/notify/notifytest"
	"github.com/tether-run/tether/internal/runstore"
)

// With Options.Notify the soak runs a notice receiver (notifytest, a real
// HTTP server on loopback that checks each signature) and restarts every
// worker with TETHER_NOTIFY naming it, so that each question its runs ask
// and each run's end are sent there while workers are killed and servers
// restarted. Afterwards it counts the notices against the questions: the
// receiver keeps notices by idempotency key, as a receiver should, so a
// request sent again after a lost worker is one notice, and two keys for
// one question would be a question notified twice.

// noticeEndpoint is the endpoint's name in the workers' TETHER_NOTIFY.
const noticeEndpoint = "soak"

// Notices is what the receiver got for the soak's runs, against what
// they asked.
type Notices struct {
	// Questions are the questions the soak's runs asked (and the soak
	// answered); Notified those with exactly one notice.
	Questions, Notified int
	// Unnotified and Twice name the questions with no notice and with
	// more than one (run/question).
	Unnotified, Twice []string
	// Completed counts the runs that completed, EndNotices their
	// completion notices.
	Completed, EndNotices int
	// Requests is every request the receiver got for the soak's runs;
	// Repeats those that sent a notice it already had (same key and
	// body: its sender could not know it had arrived).
	Requests, Repeats int
	// BadSignatures counts requests whose signature did not check, and
	// Changed the repeats whose body differed from the first.
	BadSignatures, Changed int
	// ByEvent counts notices per event.
	ByEvent map[string]int
}

// startNotices starts the receiver and restarts every worker with
// TETHER_NOTIFY naming it.
func (s *Soak) startNotices(ctx context.Context) error {
	secret := make([]byte, 24)
	_, _ = rand.Read(secret)
	key := []byte(hex.EncodeToString(secret))
	rcv, err := notifytest.Start(key)
	if err != nil {
		return fmt.Errorf("start the notice receiver: %w", err)
	}
	s.receiver = rcv
	s.notifyEnv = []string{
		notify.Env + "=" + noticeEndpoint + "=" + rcv.URL(),
		notify.SecretEnv + "=" + string(key),
	}
	s.logf("notice receiver on %s; restarting the workers with %s", rcv.Addr(), notify.Env)
	return s.restartWorkers(ctx)
}

// stopNotices restarts the workers without the receiver, which it then
// stops: the cluster is left as the soak found it.
func (s *Soak) stopNotices(ctx context.Context) error {
	if s.receiver == nil {
		return nil
	}
	s.notifyEnv = nil
	err := s.restartWorkers(ctx)
	s.receiver.Close()
	return err
}

// restartWorkers stops each worker (SIGTERM: it finishes or hands back
// what it runs) and starts it again with the soak's environment.
func (s *Soak) restartWorkers(ctx context.Context) error {
	for _, i := range s.liveWorkers() {
		w := strconv.Itoa(i)
		if err := s.cluster(ctx, "worker", "stop", w); err != nil {
			return err
		}
		if err := s.cluster(ctx, "worker", "start", w); err != nil {
			return err
		}
	}
	return nil
}

// question is one question a run asked.
type question struct{ run, id string }

func (q question) String() string { return q.run + "/" + q.id }

// asked are the questions the soak's runs asked: each persist run asks
// ask-1 once, and the soak answered it.
func asked(runs []*run) []question {
	var out []question
	for _, r := range runs {
		if (r.kind == "persist" || r.kind == "cli") && r.asked {
			out = append(out, question{r.id, "ask-1"})
		}
	}
	return out
}

// countNotices waits (up to patience) until every question asked and
// every completed run has its notice, then counts what the receiver got
// for the soak's runs.
func (s *Soak) countNotices(ctx context.Context, runs []*run, patience time.Duration) *Notices {
	qs := asked(runs)
	completed := 0
	for _, r := range runs {
		if r.err == nil && r.result != nil && r.result.Status == runstore.StatusCompleted {
			completed++
		}
	}
	deadline := time.Now().Add(patience)
	for {
		n := s.tally(qs, completed)
		if (len(n.Unnotified) == 0 && n.EndNotices >= completed) || time.Now().After(deadline) || ctx.Err() != nil {
			return n
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// tally counts the receiver's notices of the soak's runs.
func (s *Soak) tally(qs []question, completed int) *Notices {
	n := &Notices{Questions: len(qs), Completed: completed, ByEvent: map[string]int{}}
	keys := map[question][]string{}
	for key, ds := range s.receiver.Notices() {
		first := ds[0].Notice
		if !strings.HasPrefix(first.Run, s.prefix) {
			continue
		}
		n.Requests += len(ds)
		n.Repeats += len(ds) - 1
		for _, d := range ds {
			if d.SignatureErr != nil {
				n.BadSignatures++
			}
			if string(d.Body) != string(ds[0].Body) {
				n.Changed++
			}
		}
		n.ByEvent[first.Event]++
		switch first.Event {
		case graph.NotifyWaiting:
			if first.Question != nil {
				q := question{first.Run, first.Question.ID}
				keys[q] = append(keys[q], key)
			}
		case graph.NotifyCompleted:
			n.EndNotices++
		}
	}
	for _, q := range qs {
		switch len(keys[q]) {
		case 0:
			n.Unnotified = append(n.Unnotified, q.String())
		case 1:
			n.Notified++
		}
	}
	for q, ks := range keys {
		if len(ks) > 1 {
			n.Twice = append(n.Twice, fmt.Sprintf("%s (%d notices)", q, len(ks)))
		}
	}
	slices.Sort(n.Unnotified)
	slices.Sort(n.Twice)
	return n
}

// problems are what the counts say is wrong.
func (n *Notices) problems() []string {
	var out []string
	if len(n.Unnotified) > 0 {
		out = append(out, fmt.Sprintf("%d questions were never notified: %s", len(n.Unnotified), strings.Join(first(n.Unnotified, 10), ", ")))
	}
	if len(n.Twice) > 0 {
		out = append(out, fmt.Sprintf("%d questions were notified more than once: %s", len(n.Twice), strings.Join(first(n.Twice, 10), ", ")))
	}
	if n.EndNotices != n.Completed {
		out = append(out, fmt.Sprintf("%d runs completed but the receiver has %d completion notices", n.Completed, n.EndNotices))
	}
	if n.BadSignatures > 0 {
		out = append(out, fmt.Sprintf("%d notice requests did not carry a valid signature", n.BadSignatures))
	}
	if n.Changed > 0 {
		out = append(out, fmt.Sprintf("%d notices were sent again with a different body under the same key", n.Changed))
	}
	return out
}

func first(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
}
