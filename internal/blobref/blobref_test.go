package blobref

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestHide: a key is hidden wherever it stands (bare, quoted, in a file
// store's path, an S3 URL, percent-encoded, cut short, several in one
// line), says what it was, and nothing else of the text changes: the
// console's own addresses, words that only contain "runs", plain prose.
func TestHide(t *testing.T) {
	const ulid = "01J00000000000000000000BEN"
	for in, want := range map[string]string{
		// What the store and the packers say.
		"runs/r1/sessions/w/" + ulid + ": packer: archive digest does not match":                     "a session blob of the run: packer: archive digest does not match",
		`read "runs/r1/checkpoints/00000000000000000007.json": not found`:                            `read "a checkpoint of the run": not found`,
		"get runs/r-2/workspace/pack-ab12 (attempt 3): timeout":                                      "get a workspace pack of the run (attempt 3): timeout",
		"blob: put runs/r.1/path/abc: disk full":                                                     "blob: put a path block of the run: disk full",
		"cannot unpack runs/r1/sessions/w/pause/" + ulid + ": bad":                                   "cannot unpack a session blob of the run: bad",
		"key runs/r2/workspace/abc.pack and runs/r1/sessions/w/pause/01J":                            "key a workspace pack of the run and a session blob of the run",
		"open /var/lib/tether/store/runs/r1/sessions/writer/" + ulid + ": EIO":                       "open a session blob of the run: EIO",
		`Get "http://127.0.0.1:9000/bucket/runs/r1/sessions/w/` + ulid + `?x-id=GetObject": refused`: `Get "http://127.0.0.1:a session blob of the run": refused`,
		"s3://bucket/prefix/runs/r1/checkpoints/1.json":                                              "s3:a checkpoint of the run",
		"runs%2Fr1%2Fsessions%2Fw%2F" + ulid:                                                         "a session blob of the run",
		"it failed: read runs/r1/sessions/wri…":                                                      "it failed: read a session blob of the run",
		"[runs/r1/sessions/w/" + ulid + "]":                                                          "[a session blob of the run]",
		// Any path through a sessions folder (an archive's entry names).
		`entry "x/sessions/y/z" escapes`: `entry "a session file" escapes`,
		// Left alone.
		"/runs/r1/visits/w/1 is not a visit's address: /runs/RUN/visits/NODE/N": "/runs/r1/visits/w/1 is not a visit's address: /runs/RUN/visits/NODE/N",
		"/runs/r1/joins/gather/2 and /runs/r1/act/rewind":                       "/runs/r1/joins/gather/2 and /runs/r1/act/rewind",
		"the session's blob is gone from the store":                             "the session's blob is gone from the store",
		"ran 3 reruns/of it; runs/ and sessions":                                "ran 3 reruns/of it; runs/ and sessions",
		"runs/r1/pathology/x":                                                   "runs/r1/pathology/x",
		"":                                                                      "",
	} {
		assert.Equal(t, want, Hide(in), in)
		assert.Equal(t, in != want, In(in), "In(%q)", in)
		assert.False(t, In(Hide(in)), "Hide(%q) leaves nothing to hide", in)
	}
}

func BenchmarkHide(b *testing.B) {
	note := "An earlier attempt of this very turn was interrupted (it failed: read session blob for node \"writer\": blob: get runs/r1/sessions/writer/01J00000000000000000000BEN: connection refused), and this is that turn again"
	for b.Loop() {
		Hide(note)
	}
}
