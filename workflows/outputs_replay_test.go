package workflows

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/runapi"
)

// TestReplaySendsTheSameOutputs: replaying every history, each activity
// is sent the very bytes of nodes' outputs the recorded run sent it (a
// visit's input and its node's previous output), and the run ends with
// the very output it recorded. A visit after a join is sent the join's
// output as its input, and a run's result carries its last output, so
// the tool's and the join's outputs (runapi.ToolOutput, JoinOutput) are
// what the workflow wrote before they had types. A replay compares
// commands, not their inputs; this compares the outputs in them. (The
// rest of a request or a result may have gained fields since a history
// was recorded.)
func TestReplaySendsTheSameOutputs(t *testing.T) {
	joins := 0
	for _, f := range histories(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s := replay(t, f)

			inputs, result := sentByTheRun(t, f)
			require.Len(t, s.inputs, len(inputs))
			for i := range inputs {
				assert.Equal(t, outputsIn(t, inputs[i]), outputsIn(t, s.inputs[i]), "activity %d's input", i)
				if joined(t, inputs[i]) {
					joins++
				}
			}
			if result != nil {
				assert.Equal(t, outputsIn(t, result), outputsIn(t, s.result), "the run's result")
			}
		})
	}
	assert.Positive(t, joins, "some history sends a join's output on")
}

// sentByTheRun are the inputs of the activities a history scheduled, in
// order, and its result if it completed, as the payloads' bytes.
func sentByTheRun(t *testing.T, file string) (inputs [][]byte, result []byte) {
	t.Helper()
	for _, e := range readHistory(t, file).Events {
		switch {
		case e.EventType == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED" && e.Scheduled != nil:
			inputs = append(inputs, e.Scheduled.Input.raw(t))
		case e.EventType == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED" && e.Completed != nil:
			result = e.Completed.Result.raw(t)
		}
	}
	return inputs, result
}

// joined says an activity's input carries a join's output that reads
// back as one.
func joined(t *testing.T, input []byte) bool {
	var req struct {
		Input map[string]any `json:"input"`
	}
	if json.Unmarshal(input, &req) != nil {
		return false
	}
	ws, ok := req.Input[runapi.JoinOutputKey].(map[string]any)
	if !ok {
		return false
	}
	j, err := runapi.JoinOutputOf(ws)
	require.False(t, errors.Is(err, runapi.ErrMalformedOutput), "a recorded join's output reads back: %v", err)
	return j.Mode != ""
}

// outputsIn are the fields of an activity's request or a run's result
// that carry nodes' outputs, as the bytes they were sent as.
func outputsIn(t *testing.T, payload []byte) map[string]string {
	t.Helper()
	var fields map[string]json.RawMessage
	if len(payload) == 0 || json.Unmarshal(payload, &fields) != nil {
		return nil
	}
	out := map[string]string{}
	for _, k := range []string{"input", "prev_output", "output", "outputs"} {
		if v, ok := fields[k]; ok {
			out[k] = string(v)
		}
	}
	return out
}
