package notify

import (
	"fmt"
	"strings"

	"github.com/tether-run/tether/internal/excerpt"
	"github.com/tether-run/tether/internal/github"
)

// FormatGitHub is a comment on the GitHub issue or pull request the run
// started from, posted with the workers' GitHub credentials (the worker's
// Notify activity; internal/github/forge), not an HTTP request: such an
// endpoint has no URL. A run that did not start from GitHub has nowhere
// to post it, and its notice is refused.
const FormatGitHub = "github"

// Thread is the issue or pull request a GitHub notice is posted on.
type Thread struct {
	Repo         string `json:"repo"`
	Number       int    `json:"number"`
	Installation int64  `json:"installation,omitempty"`
}

// githubBody is the comment of notice n, in GitHub's markdown: what a
// person or an agent wrote is escaped (github.Escape), so it can mention
// no one and link nowhere.
func githubBody(n Notice, l Links) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**", github.Escape(headline(n)))
	if q := n.Question; q != nil {
		fmt.Fprintf(&b, "\n\n`%s` asks (`%s`):\n", code(n.Node), code(q.ID))
		for _, line := range strings.Split(strings.TrimSpace(excerpt.Head(q.Text, 4000)), "\n") {
			b.WriteString("> " + github.Escape(line) + "\n")
		}
		fmt.Fprintf(&b, "\nAnswer with a comment `/tether answer %s TEXT`", code(q.ID))
		if len(q.Options) > 0 {
			var opts []string
			for _, o := range q.Options {
				opts = append(opts, "`"+code(o)+"`")
			}
			fmt.Fprintf(&b, " (%s)", strings.Join(opts, ", "))
		}
		b.WriteString(".")
		for _, a := range l.Answers {
			fmt.Fprintf(&b, "\n- [%s](%s)", github.Escape(a.Answer), a.URL)
		}
	}
	if w := what(n); w != "" {
		b.WriteString("\n\n")
		for _, line := range strings.Split(w, "\n") {
			b.WriteString(github.Escape(line) + "\n")
		}
	}
	if l.Console != "" {
		fmt.Fprintf(&b, "\n\n[The run on the console](%s)", l.Console)
	}
	return strings.TrimSpace(b.String())
}

// code keeps s inside a code span.
func code(s string) string {
	return strings.NewReplacer("`", "'", "\n", " ", "\r", " ").Replace(excerpt.Head(s, 200))
}
