package console

import "strings"

// hooksPrefix is where webhooks are served (Options.Hooks): GitHub's at
// /hooks/github. A webhook carries its own credential (GitHub signs each
// delivery with the webhook's secret, which its handler checks), so these
// paths need no session and no CSRF token, and answer on any host name:
// they only start work, never show anything.
const hooksPrefix = "/hooks/"

// hookPath reports whether path is a webhook's.
func hookPath(path string) bool { return strings.HasPrefix(path, hooksPrefix) }
