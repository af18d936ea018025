// Package transcripts is the registration of every backend's transcript
// reader, the reader of the conversations its session packages keep
// (internal/backend/<name>/session), by backend name: what the console
// hands internal/conversation. The registration is generated from the
// backend folders with the catalogue's (readers_gen.go, `go generate
// ./internal/backend`); it is apart from the catalogue's facts so that
// what reads only the facts, graph validation first, links no reader.
package transcripts

import "github.com/tether-run/tether/internal/transcript"

// Reader returns the reader of backend's conversations, for a person to
// read them; false for a backend that keeps no session or is unknown.
func Reader(backend string) (transcript.Reader, bool) {
	r, ok := readers[backend]
	if !ok {
		return transcript.Reader{}, false
	}
	return *r, true
}
