package activities

import (
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/tether-run/tether/internal/runapi"
)

// ErrorText is an error as a person reads it: each cause said once (see
// runapi.ErrorText, which `tether` shares).
func ErrorText(err error) string { return runapi.ErrorText(err) }

// ExecutionStatus is a workflow execution status as a word: "running",
// "completed", "failed", …
func ExecutionStatus(s enumspb.WorkflowExecutionStatus) string { return runapi.ExecutionStatus(s) }
