package telemetry_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/telemetry"
)

// TestMetricsThroughDevServer serves /metrics on a free port, runs the
// probe on a real dev server and scrapes the endpoint over HTTP: the SDK's
// metrics and Tether's are there with the values the run produced, and
// the stops counted in workflow code are counted once although every
// workflow task replayed them.
func TestMetricsThroughDevServer(t *testing.T) {
	tel, err := telemetry.Setup(t.Context(), telemetry.Options{MetricsAddr: "127.0.0.1:0", Logger: testLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tel.Shutdown(t.Context()) })
	require.NotEmpty(t, tel.MetricsAddr())

	runProbe(t, tel, "metrics-run")

	var fams map[string]*dto.MetricFamily
	// The worker counts a completed workflow after it reports it, so the
	// client may hear of the completion first.
	require.Eventually(t, func() bool {
		fams = scrape(t, "http://"+tel.MetricsAddr()+telemetry.MetricsPath)
		return value(fams, "temporal_workflow_completed", map[string]string{"workflow_type": "probe"}) == 1
	}, time.Minute, 50*time.Millisecond, "temporal_workflow_completed{workflow_type=probe} never reached 1")

	// The SDK's own metrics, under the names its reference gives them.
	assert.Equal(t, 1.0, value(fams, "temporal_activity_execution_failed", map[string]string{"activity_type": "ProbeVisit"}))
	assert.Equal(t, dto.MetricType_COUNTER, fams["temporal_workflow_completed"].GetType())
	latency := metric(fams, "temporal_activity_execution_latency", map[string]string{"activity_type": "ProbeVisit"})
	require.NotNil(t, latency, "temporal_activity_execution_latency")
	assert.Equal(t, uint64(2), latency.GetHistogram().GetSampleCount())
	assert.Equal(t, 0.001, latency.GetHistogram().GetBucket()[0].GetUpperBound(), "SDK latencies have buckets in seconds")

	// Tether's.
	assert.Equal(t, 1.0, value(fams, telemetry.VisitsMetric, map[string]string{"backend": "scripted", "kind": "agent", "outcome": "ok"}))
	assert.Equal(t, 1.0, value(fams, telemetry.VisitsMetric, map[string]string{"backend": "scripted", "kind": "agent", "outcome": "failed"}))
	duration := metric(fams, telemetry.VisitDurationMetric, map[string]string{"backend": "scripted", "kind": "agent"})
	require.NotNil(t, duration, telemetry.VisitDurationMetric)
	assert.Equal(t, uint64(2), duration.GetHistogram().GetSampleCount())
	assert.Equal(t, 0.1, duration.GetHistogram().GetBucket()[0].GetUpperBound())
	assert.Equal(t, 1234.0, value(fams, telemetry.RestoreBytesMetric, map[string]string{"what": "session"}))
	assert.Equal(t, 567.0, value(fams, telemetry.PackBytesMetric, map[string]string{"what": "workspace"}))
	assert.Equal(t, 1.0, value(fams, telemetry.FailStopsMetric, map[string]string{"workflow_type": "probe"}), "a replay counts no fail-stop")
	assert.Equal(t, 1.0, value(fams, telemetry.BudgetStopsMetric, map[string]string{"workflow_type": "probe"}), "a replay counts no budget stop")
	for _, name := range []string{telemetry.VisitsMetric, telemetry.RestoreBytesMetric, telemetry.PackBytesMetric, telemetry.FailStopsMetric, telemetry.BudgetStopsMetric} {
		assert.Equal(t, dto.MetricType_COUNTER, fams[name].GetType(), name)
	}
	assert.Equal(t, dto.MetricType_HISTOGRAM, fams[telemetry.VisitDurationMetric].GetType())
}

// scrape GETs a Prometheus endpoint and parses its text format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err, "%s", body)
	return fams
}

// metric finds the series of name whose labels include want.
func metric(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	for _, m := range fams[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if match {
			return m
		}
	}
	return nil
}

// value is a counter's value, or -1 when there is no such series.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	m := metric(fams, name, want)
	if m == nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// TestProfilesOnlyWhenAskedFor: with Profiling on, the metrics endpoint
// also serves Go's runtime profiles (a heap profile and a goroutine dump
// here); without it, nothing is served at /debug/pprof/.
func TestProfilesOnlyWhenAskedFor(t *testing.T) {
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	for _, on := range []bool{true, false} {
		tel, err := telemetry.Setup(t.Context(), telemetry.Options{MetricsAddr: "127.0.0.1:0", Profiling: on, Logger: testLogger()})
		require.NoError(t, err)
		base := "http://" + tel.MetricsAddr()
		code, body := get(base + telemetry.ProfilesPath + "heap?debug=1")
		if on {
			assert.Equal(t, http.StatusOK, code)
			assert.Contains(t, body, "heap profile:")
			code, body = get(base + telemetry.ProfilesPath + "goroutine?debug=1")
			assert.Equal(t, http.StatusOK, code)
			assert.Contains(t, body, "goroutine profile:")
		} else {
			assert.Equal(t, http.StatusNotFound, code, body)
		}
		code, _ = get(base + telemetry.MetricsPath)
		assert.Equal(t, http.StatusOK, code, "metrics are served either way")
		require.NoError(t, tel.Shutdown(t.Context()))
	}
}
