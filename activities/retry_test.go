package activities

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
)

// The first attempt of a visit, run as an activity, lost nothing before
// it: no note, no TETHER_RETRY_OF.
func TestFirstAttemptIsToldNothing(t *testing.T) {
	var env testsuite.WorkflowTestSuite
	aenv := env.NewTestActivityEnvironment()
	a := newActs(t, blob.NewMem())
	aenv.RegisterActivity(a)
	tool := graph.Node{ID: "check", Kind: graph.KindTool, Run: []string{"sh", "-c", `printf '[%s]' "$` + agent.RetryOfEnv + `"`}}
	v, err := aenv.ExecuteActivity(a.Visit, &VisitRequest{RunID: "r1", NodeID: "check", Visit: 1, Node: tool})
	require.NoError(t, err)
	var res VisitResult
	require.NoError(t, v.Get(&res))
	assert.Equal(t, "[]", res.Output["stdout"])
	assert.NotContains(t, res.Output, agent.RetryNoteKey)
}

// A failure that may pass, or a worker that stops, carries what its
// attempt did (its last heartbeat) for the next attempt; a failure that
// already carries details, another kind of failure, or one without
// details is returned as it is.
func TestFailuresCarryTheAttemptsProgress(t *testing.T) {
	p := agent.Progress{Node: "writer", Visit: 2, ToolCalls: 1, Calls: []string{"Bash git push"}}
	cause := errors.New("the CLI crashed")
	for _, e := range []error{
		temporal.NewNonRetryableApplicationError("crashed", ErrTypeMayPass, cause),
		temporal.NewApplicationError("worker w stopped", ErrTypeWorkerStopping),
	} {
		var err *temporal.ApplicationError
		require.True(t, errors.As(e, &err))
		// As the workflow reads it: over the wire.
		fc := temporal.GetDefaultFailureConverter()
		got := fc.FailureToError(fc.ErrorToFailure(withProgress(err, []any{p})))
		var appErr *temporal.ApplicationError
		require.True(t, errors.As(got, &appErr))
		require.True(t, appErr.HasDetails(), "%s", err.Type())
		var back agent.Progress
		require.NoError(t, appErr.Details(&back))
		assert.Equal(t, p.Calls, back.Calls)
		assert.Equal(t, err.Message(), appErr.Message())
		assert.Equal(t, err.NonRetryable(), appErr.NonRetryable())
		assert.Same(t, err, withProgress(err, nil), "no details: as it is")
	}
	other := temporal.NewNonRetryableApplicationError("bad request", ErrTypeBadRequest, nil)
	assert.Same(t, other, withProgress(other, []any{p}))
	had := temporal.NewNonRetryableApplicationError("crashed", ErrTypeMayPass, nil, "earlier")
	assert.Same(t, had, withProgress(had, []any{p}))
	plain := errors.New("plain")
	assert.Same(t, plain, withProgress(plain, []any{p}))
}
