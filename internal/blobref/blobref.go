// Package blobref keeps blob store refs out of text. A ref (runs/RUN/
// sessions/NODE/ULID, and the run's checkpoint, workspace pack and path
// block keys) lives in a checkpoint and nowhere else: ADR-089 forbids it
// on outputs, loop snapshots and events, which outlive the blob, and a
// page, a prompt or a person has no use for one. Yet text that Tether did
// not write reaches those places through the notes it writes (a store's
// error quoting the key it failed on, an inbound _session_id an edge
// delivered, an untrusted archive's entry names, an agent's tool calls),
// and an error page quotes a store's error. Hide is the one filter all of
// them go through: the worker's notes (activities, workflows) and the
// console's pages.
//
// It recognises a key by its shape, wherever it stands in a word (a file
// store's path, an S3 URL, a quoted name, a percent-encoded path): a
// "runs/RUN/" followed by one of the store's folders (checkpoints,
// sessions, workspace, path), and any path through a sessions folder.
// It errs on the side of hiding: a workspace path shaped like a key is
// hidden too. The console's own addresses (/runs/RUN/visits/…) are not
// keys and stay. internal/runstore's tests hold every key it mints to
// this filter.
//
// The package imports nothing of Tether's, so the worker, the workflow
// code (it is deterministic) and the console share it.
package blobref

import (
	"regexp"
	"strings"
)

// word is what a key can be part of: anything but space, quotes,
// brackets and the separators that end a name in an error message.
const word = "[^\\s\"'`<>()\\[\\]{},;:|\\\\]*"

// sep is a path separator, as text or percent-encoded.
const sep = `(?:/|%2[Ff])`

// runKey is a run's key: its group names the store's folder.
const runKey = `runs` + sep + `[A-Za-z0-9._-]+` + sep + `(checkpoints|sessions|workspace|path)\b`

var (
	// key matches a word holding a blob key: a run's key, or a path
	// through a sessions folder.
	key = regexp.MustCompile(word + `(?:` + runKey + `|` + sep + `sessions` + sep + `)` + word)
	// folder finds the folder of a run's key in a match of key.
	folder = regexp.MustCompile(runKey)
)

// what says what a key of each folder is.
var what = map[string]string{
	"checkpoints": "a checkpoint of the run",
	"sessions":    "a session blob of the run",
	"workspace":   "a workspace pack of the run",
	"path":        "a path block of the run",
	"":            "a session file",
}

// Hide is s with every blob key in it replaced by what it is ("a session
// blob of the run"), so a note or a page says what happened to which
// kind of blob without naming it.
func Hide(s string) string {
	if !maybe(s) {
		return s
	}
	return key.ReplaceAllStringFunc(s, func(m string) string {
		if sub := folder.FindStringSubmatch(m); sub != nil {
			return what[sub[1]]
		}
		return what[""]
	})
}

// In reports whether s holds anything Hide would replace.
func In(s string) bool { return maybe(s) && key.MatchString(s) }

// maybe is a cheap first look: no key without "sessions" or "runs".
func maybe(s string) bool {
	return strings.Contains(s, "runs") || strings.Contains(s, "sessions")
}
