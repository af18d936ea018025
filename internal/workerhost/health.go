package workerhost

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/tether-run/tether/activities"
	"github.com/tether-run/tether/internal/blob"
)

// startProbeTimeout bounds the store probe a worker makes before it
// starts: a store that cannot take a small write, read and delete in that
// time is one the worker must not serve runs with.
const startProbeTimeout = 30 * time.Second

// reprobeEvery is how often an unhealthy worker probes its store again.
const reprobeEvery = 5 * time.Second

// probeStore is the start-up check: write, read back and delete an
// object under the worker's own prefix of the store.
func probeStore(store blob.Store, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), startProbeTimeout)
	defer cancel()
	if err := blob.Probe(ctx, store, blob.ProbePrefix(id)); err != nil {
		return fmt.Errorf("the blob store (TETHER_BLOB_URL) fails a write, read and delete probe: %s; fix the URL, its credentials or the store, then start the worker again", activities.ErrorText(err))
	}
	return nil
}

// gatedSlots hands out task slots only while the worker is healthy: an
// unhealthy worker's pollers wait, so the tasks it would have taken go to
// other workers. Slots already handed out (visits running) are not taken
// back.
type gatedSlots struct {
	worker.SlotSupplier
	health *activities.Health
}

func (g gatedSlots) ReserveSlot(ctx context.Context, info worker.SlotReservationInfo) (*worker.SlotPermit, error) {
	if err := g.health.Wait(ctx); err != nil {
		return nil, err
	}
	return g.SlotSupplier.ReserveSlot(ctx, info)
}

func (g gatedSlots) TryReserveSlot(info worker.SlotReservationInfo) *worker.SlotPermit {
	if g.health.Err() != nil {
		return nil
	}
	return g.SlotSupplier.TryReserveSlot(info)
}

// defaultSlots is the SDK's own number of slots per kind of task.
const defaultSlots = 1000

// gatedTuner is a worker's slots: activities bounded by maxVisits, and
// workflow tasks and activities both gated on the worker's health. Local
// activities (checkpoints) are not gated: a workflow task already running
// must finish.
func gatedTuner(health *activities.Health, maxVisits int) (worker.WorkerTuner, error) {
	fixed := func(n int) worker.SlotSupplier {
		s, err := worker.NewFixedSizeSlotSupplier(n)
		if err != nil {
			panic(err) // only for n < 1
		}
		return s
	}
	return worker.NewCompositeTuner(worker.CompositeTunerOptions{
		WorkflowSlotSupplier:        gatedSlots{fixed(defaultSlots), health},
		ActivitySlotSupplier:        gatedSlots{fixed(maxVisits), health},
		LocalActivitySlotSupplier:   fixed(defaultSlots),
		NexusSlotSupplier:           fixed(defaultSlots),
		SessionActivitySlotSupplier: fixed(defaultSlots),
	})
}
