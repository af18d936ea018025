package agent

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Each typed failure, wrapped or carried by an ExitError, keeps the name
// the workflow branches on; any other error has none.
func TestErrorTypeNamesEachFailure(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{ErrNoSession, "NoSession"},
		{ErrNotInstalled, "NotInstalled"},
		{&ExitError{Backend: "b", Code: 2}, "ExitError"},
		{fmt.Errorf("visit: %w", ErrTimeout), "Timeout"},
		{ErrScript, "ScriptedFailure"},
		{fmt.Errorf("read: %w", ErrUnsafeFile), "UnsafeFile"},
		{fmt.Errorf("run: %w", ErrPathRefused), "PathRefused"},
		{errors.New("backend: something else"), ""},
		{nil, ""},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, ErrorType(c.err), "%v", c.err)
	}
}
