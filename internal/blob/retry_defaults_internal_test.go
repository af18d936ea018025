package blob

import "testing"

// A zero (or negative) backoff means the default, never a retry loop that
// does not wait.
func TestRetryPolicyDefaults(t *testing.T) {
	for _, p := range []RetryPolicy{{}, {InitialBackoff: -1, MaxBackoff: -1}} {
		got := p.withDefaults()
		if got.InitialBackoff != DefaultRetryInitialBackoff || got.MaxBackoff != DefaultRetryMaxBackoff || got.MaxElapsed != DefaultRetryMaxElapsed {
			t.Errorf("%+v with defaults = %+v", p, got)
		}
	}
}
