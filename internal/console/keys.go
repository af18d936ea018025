package console

import "regexp"

// storeKey is a run store's blob key as errors of the store and the
// packers name it (runs/RUN/...): a page says which blob of the run, never
// its key.
var storeKey = regexp.MustCompile(`(^|[\s("'=])runs/[A-Za-z0-9._:@+-]+/[^\s"',;:)]+`)

// hideKeys is an error message for a page: every blob key in it replaced
// by what it is. The console's own addresses (/runs/...) are left alone.
func hideKeys(msg string) string {
	return storeKey.ReplaceAllString(msg, "${1}a blob of the run")
}
