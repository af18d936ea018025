package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/converter"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/cli"
	"github.com/tether-run/tether/internal/testenv"
)

// A Claude Code visit writes a file, then the fake model takes 30 s over
// its final reply. While it waits, the Visit activity's heartbeat details,
// read with DescribeWorkflowExecution as `tether status` reads them, name
// the node, the visit, the tool call and the tokens so far; `tether status`
// and `tether run --follow` print that line. When the run ends, the
// writer's output carries the visit's usage: exactly what the fake model
// counted.
func TestProgressWhileAVisitRuns(t *testing.T) {
	h, _, fake := cliBackendsHarness(t)
	file := graphFile(t, "progress")

	const id = "progress-1"
	var follow testenv.SyncBuffer
	done := make(chan int, 1)
	go func() { done <- cli.Main([]string{"run", file, "--id", id, "--follow"}, &follow, &follow) }()

	// The heartbeat reaches the server while the model sleeps.
	var seen agent.Progress
	deadline := time.After(2 * time.Minute)
	for seen.Activity != "Write notes.txt" {
		select {
		case code := <-done:
			t.Fatalf("the run ended (exit %d) before a heartbeat showed the Write call; last progress %+v\n%s", code, seen, follow.String())
		case <-deadline:
			t.Fatalf("no heartbeat showed the Write call within 2 minutes; last progress %+v", seen)
		case <-time.After(200 * time.Millisecond):
		}
		if p, ok := visitHeartbeat(t, h, id); ok {
			seen = p
		}
	}
	assert.Equal(t, "writer", seen.Node)
	assert.Equal(t, 1, seen.Visit)
	assert.Equal(t, "claude_code", seen.Backend)
	assert.Positive(t, seen.Usage.Tokens(), "tokens so far")
	assert.GreaterOrEqual(t, seen.ToolCalls, 1)

	code, out := tetherCode(t, "status", id)
	require.Equal(t, cli.ExitOK, code, out)
	assert.Regexp(t, `running: +writer visit 1 · Write notes\.txt · [0-9.]+k? tokens · \d+ s`, out)

	select {
	case code = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the run did not end:\n%s", follow.String())
	}
	followed := follow.String()
	t.Logf("tether run --follow:\n%s", followed)
	require.Equal(t, cli.ExitOK, code, followed)
	assert.Regexp(t, `(?m)^… writer visit 1 · Write notes\.txt · [0-9.]+k? tokens · \d+ s$`, followed)
	assert.Regexp(t, `(?m)^✓ writer +visit 1 +ok .* [0-9.]+k? tokens`, followed, "the step line says what the visit used")
	assert.Contains(t, followed, "usage: writer (1 visit): ")

	// The visit's usage is the sum of the model's requests.
	st := h.state(id)
	raw, err := json.Marshal(st.Outputs["writer"][agent.UsageKey])
	require.NoError(t, err)
	var u agent.Usage
	require.NoError(t, json.Unmarshal(raw, &u))
	assert.Equal(t, clitest.Expect(agent.WireAnthropic, fake.Usage()), u)
	assert.Greater(t, len(fake.Turns()), 2, "Read, Write, then the final reply")

	code, out = tetherCode(t, "status", id)
	require.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, "usage:      writer (1 visit): ")
	assert.NotContains(t, out, "running:", "nothing runs once the run is done")
}

// visitHeartbeat is the progress in the heartbeat details of the run's
// pending Visit activity, if it has any.
func visitHeartbeat(t *testing.T, h *harness, id string) (agent.Progress, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := h.c.DescribeWorkflow(ctx, id, "")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return agent.Progress{}, false // `tether run` checks the server and the workers before it starts the run
	}
	require.NoError(t, err)
	for _, pa := range d.RawResponse.GetPendingActivities() {
		payloads := pa.GetHeartbeatDetails().GetPayloads()
		if pa.GetActivityType().GetName() != "Visit" || len(payloads) == 0 {
			continue
		}
		var p agent.Progress
		require.NoError(t, converter.GetDefaultDataConverter().FromPayload(payloads[0], &p))
		assert.Less(t, len(payloads[0].GetData()), 2048, "heartbeat details stay small")
		return p, true
	}
	return agent.Progress{}, false
}
