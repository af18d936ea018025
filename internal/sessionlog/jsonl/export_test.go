package jsonl

import "github.com/tether-run/tether/internal/sessionlog"

// Intercept installs before as st's test hook (see Store.before); st must
// be a *Store. It is contracttest.Harness.Intercept for this backend.
func Intercept(st sessionlog.Storage, before func(op string) error) {
	st.(*Store).before = before
}
