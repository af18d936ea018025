package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/workerhost"
)

// freshWorkers runs every visit on a worker that has never run anything:
// one long-lived worker runs the workflows and their checkpoints, and each
// Visit activity goes to an activity-only worker with empty state, work and
// HOME directories, which is replaced by a new one as soon as that visit is
// over. A visit offered to a worker that already ran one is refused as by
// a pod that is going away, and starts again on the next.
type freshWorkers struct {
	h *harness

	mu      sync.Mutex
	current *workerhost.Host
	// Roots lists the root of every activity worker started, in order.
	Roots []string
	errs  []error
}

func (h *harness) freshWorkerPerVisit() *freshWorkers {
	h.t.Helper()
	f := &freshWorkers{h: h}
	h.startRole(workerhost.RoleWorkflows, nil)
	if err := f.next(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.current != nil {
			f.current.Stop()
		}
		for _, err := range f.errs {
			h.t.Error(err)
		}
	})
	return f
}

// next starts the next activity worker.
func (f *freshWorkers) next() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	retire := &oneVisit{f: f}
	host, root, err := f.h.startHost(workerhost.RoleActivities, retire)
	if err != nil {
		return err
	}
	retire.host = host
	f.current = host
	f.Roots = append(f.Roots, root)
	return nil
}

// Visits counts the activity workers that ran a visit.
func (f *freshWorkers) Visits() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.Roots) - 1
}

// oneVisit lets its worker carry out one Visit activity.
type oneVisit struct {
	interceptor.WorkerInterceptorBase
	f    *freshWorkers
	host *workerhost.Host
	done atomic.Bool
}

func (o *oneVisit) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	i := &oneVisitActivity{o: o}
	i.Next = next
	return i
}

type oneVisitActivity struct {
	interceptor.ActivityInboundInterceptorBase
	o *oneVisit
}

func (a *oneVisitActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	if name := activity.GetInfo(ctx).ActivityType.Name; name != "Visit" && name != "VisitBranch" {
		return a.Next.ExecuteActivity(ctx, in)
	}
	if !a.o.done.CompareAndSwap(false, true) {
		// Refused slowly: the server tries each visit a bounded number of
		// times, and the concurrent visits of a fan-out's branches must
		// not use them all up before the next fresh worker polls.
		time.Sleep(500 * time.Millisecond)
		return nil, temporal.NewApplicationError("this worker ran its visit and is going away", activities.ErrTypeWorkerStopping)
	}
	// The next fresh worker starts now, not when this visit ends, so that
	// the concurrent visits of a fan-out's branches each find one.
	a.o.f.startNext()
	defer func() { go a.o.host.Stop() }()
	return a.Next.ExecuteActivity(ctx, in)
}

// startNext starts the next fresh worker in the background.
func (f *freshWorkers) startNext() {
	go func() {
		if err := f.next(); err != nil {
			f.mu.Lock()
			f.errs = append(f.errs, fmt.Errorf("start the next fresh worker: %w", err))
			f.mu.Unlock()
		}
	}()
}

// startRole starts a worker of one role with empty roots of its own.
func (h *harness) startRole(role workerhost.Role, ic interceptor.WorkerInterceptor) string {
	h.t.Helper()
	host, root, err := h.startHost(role, ic)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(host.Stop)
	return root
}

func (h *harness) startHost(role workerhost.Role, ic interceptor.WorkerInterceptor) (*workerhost.Host, string, error) {
	h.mu.Lock()
	h.n++
	n := h.n
	h.mu.Unlock()
	root := filepath.Join(h.tmp, fmt.Sprintf("worker-%d", n))
	bs, err := backend.New(h.backendConfig(root))
	if err != nil {
		return nil, "", err
	}
	o := workerhost.Options{
		ID: fmt.Sprintf("w%d-%d", n, time.Now().UnixNano()), Blobs: h.workerStore(), Backends: bs,
		StateDir: filepath.Join(root, "state"), WorkDir: filepath.Join(root, "work"),
		Logger: testLogger(), Role: role, Sandbox: h.sandbox, Versioning: e2eVersioning(),
	}
	if ic != nil {
		o.Interceptors = append(o.Interceptors, ic)
	}
	if h.hostOptions != nil {
		h.hostOptions(&o)
	}
	host, err := workerhost.Start(h.c, o)
	return host, root, err
}
