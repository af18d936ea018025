package console

import (
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunFilterQuery: what the runs page's filters ask Temporal's
// visibility, and that a value which could change the query's meaning
// (a quote, an operator, markup) is refused before it gets there.
func TestRunFilterQuery(t *testing.T) {
	get := func(q url.Values) (runFilter, error) {
		return filterOf(httptest.NewRequest("GET", "/runs?"+q.Encode(), nil))
	}
	f, err := get(url.Values{"status": {"waiting"}, "graph": {" review-loop "}, "node": {"approve"}, "backend": {"claude_code"}, "q": {"demo-2026"}})
	require.NoError(t, err)
	assert.Equal(t, runFilter{Status: "waiting", Graph: "review-loop", Node: "approve", Backend: "claude_code", Q: "demo-2026"}, f)
	assert.Equal(t, `WorkflowType = "GraphRun" AND ExecutionStatus != "ContinuedAsNew" AND TetherStatus = "waiting" AND ExecutionStatus = "Running" AND TetherGraph = "review-loop" AND TetherNode = "approve" AND TetherBackends = "claude_code" AND WorkflowId STARTS_WITH "demo-2026"`, f.visibilityQuery(true))
	assert.Contains(t, f.visibilityQuery(false), `WorkflowId = "demo-2026"`, "the exact id, for a store without STARTS_WITH")

	for status, want := range map[string]string{
		"completed": `TetherStatus = "completed"`, "canceled": `ExecutionStatus = "Canceled"`,
		"terminated": `ExecutionStatus = "Terminated"`, "timed_out": `ExecutionStatus = "TimedOut"`,
	} {
		f, err := get(url.Values{"status": {status}})
		require.NoError(t, err)
		assert.Contains(t, f.visibilityQuery(true), want)
	}
	none, err := get(nil)
	require.NoError(t, err)
	assert.True(t, none.Empty())
	assert.Equal(t, "/runs", none.url(""))
	assert.Equal(t, "/runs?graph=g&page=tok&status=failed", runFilter{Status: "failed", Graph: "g"}.url("tok"))

	for _, bad := range []url.Values{
		{"status": {"bogus"}},
		{"graph": {`x" OR WorkflowId != "`}},
		{"node": {"a b"}},
		{"backend": {"claude_code'"}},
		{"q": {`<img src=x onerror=alert(1)>`}},
	} {
		_, err := get(bad)
		assert.Error(t, err, "%v is refused", bad)
	}
}
