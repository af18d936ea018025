package telemetry

import (
	"context"
	"fmt"
	"net/http"

	"go.opentelemetry.io/otel/metric"
)

// HealthPath is where the metrics endpoint says whether the worker can
// serve: 200 "ok", or 503 and why not (its store fails).
const HealthPath = "/healthz"

// WorkerHealthyMetric is 1 while the worker can serve and 0 while it
// cannot (its store fails; it takes no visit meanwhile).
const WorkerHealthyMetric = "tether_worker_healthy"

// SetHealth records whether the worker can serve, and why not.
func (t *Telemetry) SetHealth(healthy bool, cause error) {
	if t == nil {
		return
	}
	msg := ""
	if !healthy {
		msg = "unhealthy"
		if cause != nil {
			msg = cause.Error()
		}
	}
	t.unhealthy.Store(msg)
}

func (t *Telemetry) why() string {
	s, _ := t.unhealthy.Load().(string)
	return s
}

func (t *Telemetry) serveHealth(w http.ResponseWriter, _ *http.Request) {
	if why := t.why(); why != "" {
		http.Error(w, "unhealthy: "+why, http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// observeHealth publishes WorkerHealthyMetric from the recorded health.
func (t *Telemetry) observeHealth(m metric.Meter) error {
	_, err := m.Int64ObservableGauge(WorkerHealthyMetric,
		metric.WithDescription("1 while the worker can serve, 0 while its store fails and it takes no visit."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			v := int64(1)
			if t.why() != "" {
				v = 0
			}
			o.Observe(v)
			return nil
		}))
	return err
}
