package runapi

import (
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
)

// ErrorText is an error as a person reads it: each cause said once.
// Temporal's errors repeat their causes in Error() and add envelopes
// ("activity error (type: Visit, scheduledEventID: 5, …)", "(type:
// wrapError, retryable: true)"); an error built from another's Error() at
// each of a few layers grew to kilobytes of one chain said over and over.
// ErrorText keeps each layer's own message, drops the envelopes, and
// leaves out a cause whose message an earlier layer already said.
func ErrorText(err error) string {
	var parts []string
	said := func(msg string) bool {
		for _, p := range parts {
			if strings.Contains(p, msg) {
				return true
			}
		}
		return false
	}
	for err != nil {
		var msg string
		next := errors.Unwrap(err)
		switch e := err.(type) {
		case *temporal.ApplicationError:
			msg = e.Message()
		case *temporal.TimeoutError:
			msg = fmt.Sprintf("%s (%s)", e.Message(), strings.ToLower(strings.TrimPrefix(e.TimeoutType().String(), "TIMEOUT_TYPE_")))
			if e.Message() == "" {
				msg = "timed out (" + strings.ToLower(strings.TrimPrefix(e.TimeoutType().String(), "TIMEOUT_TYPE_")) + ")"
			}
		case *temporal.ServerError:
			msg = e.Message()
		case *temporal.ActivityError, *temporal.WorkflowExecutionError, *temporal.ChildWorkflowExecutionError:
			// An envelope: its cause says what happened.
		default:
			// A Go error's message already holds what it wraps.
			msg, next = err.Error(), nil
		}
		if msg = strings.TrimSpace(msg); msg != "" && !said(msg) {
			parts = append(parts, msg)
		}
		err = next
	}
	return strings.Join(parts, ": ")
}

// ExecutionStatus is a Temporal execution status as a word: running,
// completed, failed, canceled, terminated, continued_as_new, timed_out.
func ExecutionStatus(s enumspb.WorkflowExecutionStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_"))
}
