package runlist

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunFilterQuery: what the runs page's filters ask Temporal's
// visibility, and that a value which could change the query's meaning
// (a quote, an operator, markup) is refused before it gets there.
func TestRunFilterQuery(t *testing.T) {
	get := Parse
	f, err := get(url.Values{"status": {"waiting"}, "graph": {" review-loop "}, "node": {"approve"}, "backend": {"claude_code"}, "q": {"demo-2026"}})
	require.NoError(t, err)
	assert.Equal(t, Filter{Status: "waiting", Graph: "review-loop", Node: "approve", Backend: "claude_code", Q: "demo-2026"}, f)
	assert.Equal(t, `WorkflowType = "GraphRun" AND ExecutionStatus != "ContinuedAsNew" AND TetherStatus = "waiting" AND ExecutionStatus = "Running" AND TetherGraph = "review-loop" AND TetherNode = "approve" AND TetherBackends = "claude_code" AND WorkflowId STARTS_WITH "demo-2026"`, f.Query(true))
	assert.Contains(t, f.Query(false), `WorkflowId = "demo-2026"`, "the exact id, for a store without STARTS_WITH")

	for status, want := range map[string]string{
		"completed": `TetherStatus = "completed"`, "canceled": `ExecutionStatus = "Canceled"`,
		"terminated": `ExecutionStatus = "Terminated"`, "timed_out": `ExecutionStatus = "TimedOut"`,
	} {
		f, err := get(url.Values{"status": {status}})
		require.NoError(t, err)
		assert.Contains(t, f.Query(true), want)
	}
	none, err := get(nil)
	require.NoError(t, err)
	assert.True(t, none.Empty())
	assert.Empty(t, none.Values(""))
	assert.Equal(t, "graph=g&page=tok&status=failed", Filter{Status: "failed", Graph: "g"}.Values("tok").Encode())

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
