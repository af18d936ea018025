package contracttest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/sessionlog"
)

// A log written in another format version, newer or older, is refused
// with ErrVersion by every call that reads it, even when this build cannot
// decode its records, and is left byte for byte as it was: it is neither
// repaired nor reported corrupt.
func testOtherVersion(t *testing.T, h *Harness) {
	for _, tc := range []struct {
		name, id, header string
		events           []string
	}{
		{"Newer", "v-newer",
			`{"id":"v-newer","cwd":"/w","backend":"test","format_version":2,"compression":"none"}`,
			[]string{`{"seq":1,"kind":"turn/start"}`, `{"seq":2,"kind":"message","role":"user","text":{"parts":["a layout this build does not know"]}}`}},
		{"NewerHeaderLayout", "v-newer-header",
			`{"id":"v-newer-header","cwd":"/w","backend":{"name":"test"},"format_version":2}`,
			[]string{`{"seq":1,"kind":"turn/start"}`}},
		{"Older", "v-older",
			`{"id":"v-older","cwd":"/w","backend":"test","format_version":0}`,
			[]string{`{"seq":1,"kind":"turn/start"}`, `{"seq":2,"kind":"message","role":"user","text":"an open turn"}`}},
		{"Unversioned", "v-unversioned",
			`{"id":"v-unversioned","cwd":"/w","backend":"test"}`,
			[]string{`{"seq":1,"kind":"turn/start"}`, `{"seq":2,"kind":"step/start"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := make([][]byte, len(tc.events))
			for i, e := range tc.events {
				events[i] = []byte(e)
			}
			h.PutRaw(t, tc.id, "/w", []byte(tc.header), events)
			before := h.Snapshot(t)

			c := open(t, h)
			refused := func(err error, what string) {
				t.Helper()
				require.ErrorIs(t, err, sessionlog.ErrVersion, what)
				require.NotErrorIs(t, err, sessionlog.ErrCorrupt, what)
				require.NotErrorIs(t, err, sessionlog.ErrNotFound, what)
			}
			log, err := c.Load(ctx, tc.id)
			require.Nil(t, log)
			refused(err, "Load")
			refused(c.Append(ctx, tc.id, sessionlog.TurnEnd(sessionlog.ReasonCompleted, "")), "Append")
			refused(c.Create(ctx, header(tc.id, "/w")), "Create with this build's header")
			_, err = c.Has(ctx, tc.id)
			refused(err, "Has")
			_, err = c.List(ctx)
			refused(err, "List")
			_, err = c.Load(ctx, tc.id)
			refused(err, "a second Load")
			require.NoError(t, c.Close())

			require.Equal(t, string(before), string(h.Snapshot(t)), "the log of another version must be left untouched")
		})
	}
}
