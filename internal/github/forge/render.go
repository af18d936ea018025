package forge

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/tether-run/tether/internal/github"
)

// Markdown of what Tether writes on GitHub. Text an agent, a tool or a
// person wrote (questions, errors) is escaped: it cannot mention anyone,
// add a link, an image or markup, or close a block of its own.

// RunLink is the run's page on the console at base ("" without a base).
func RunLink(base, run string) string {
	if base == "" {
		return ""
	}
	return strings.TrimRight(base, "/") + "/runs/" + url.PathEscape(run)
}

// StatusComment is the comment a run keeps on its issue.
func StatusComment(r github.Report, console string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Tether** run %s of graph `%s` is **%s**", runRef(r.Run, console), code(r.Graph), statusWord(r.Status))
	if r.Node != "" && r.Status != "completed" {
		fmt.Fprintf(&b, " at `%s`", code(r.Node))
	}
	b.WriteString(".\n\n")
	b.WriteString(summary(r))
	if r.PullRequest > 0 {
		fmt.Fprintf(&b, "\n\nPull request: #%d", r.PullRequest)
	}
	for _, q := range r.Questions {
		fmt.Fprintf(&b, "\n\n`%s` asks (`%s`):\n%s\n\nAnswer with a comment `/tether answer %s TEXT`", code(q.Node), code(q.ID), quote(q.Text), code(q.ID))
		if console != "" {
			fmt.Fprintf(&b, ", or on [the console](%s)", RunLink(console, r.Run))
		}
		b.WriteString(".")
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "\n\nWhy it stopped:\n%s", quote(r.Error))
	}
	return b.String()
}

// PullRequestBody is a run's pull request body: the graph's body, "Fixes
// #N", and the run's path, cost and console link.
func PullRequestBody(body string, issue int, fixes bool, r github.Report, console string) string {
	var b strings.Builder
	if body = strings.TrimSpace(body); body != "" {
		b.WriteString(body)
		b.WriteString("\n\n")
	}
	if fixes && issue > 0 {
		fmt.Fprintf(&b, "Fixes #%d\n\n", issue)
	}
	b.WriteString("---\n")
	fmt.Fprintf(&b, "Made by Tether run %s of graph `%s`. ", runRef(r.Run, console), code(r.Graph))
	b.WriteString(summary(r))
	return b.String()
}

func summary(r github.Report) string {
	var steps []string
	for _, s := range r.Path {
		step := fmt.Sprintf("%s %d", s.Node, s.Visit)
		if s.Outcome != "" && s.Outcome != "ok" {
			step += " (" + s.Outcome + ")"
		}
		steps = append(steps, step)
	}
	path := "nothing yet"
	if len(steps) > 0 {
		path = strings.Join(steps, " → ")
		if r.Visits > len(steps) {
			path = "… → " + path
		}
	}
	cost := fmt.Sprintf("%d tokens", r.Tokens)
	if r.CostUSD > 0 {
		cost = fmt.Sprintf("$%.2f, ", r.CostUSD) + cost
	}
	return fmt.Sprintf("Path: `%s` (%d visits). Spent: %s.", code(path), r.Visits, cost)
}

func runRef(run, console string) string {
	if console == "" {
		return "`" + code(run) + "`"
	}
	return fmt.Sprintf("[`%s`](%s)", code(run), RunLink(console, run))
}

func statusWord(s string) string {
	switch s {
	case "waiting":
		return "waiting for an answer"
	case "failed_resumable":
		return "stopped (it can be resumed)"
	case "":
		return "starting"
	}
	return s
}

// code keeps s inside a code span: no backtick, no line break.
func code(s string) string {
	s = strings.NewReplacer("`", "'", "\n", " ", "\r", " ").Replace(s)
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return s
}

// quote is untrusted text as a block quote in which markdown does
// nothing: every character markdown or GitHub reads specially is escaped,
// mentions are broken, and HTML cannot open.
func quote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 4000 {
		s = s[:4000] + "…"
	}
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		b.WriteString("> ")
		b.WriteString(github.Escape(line))
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
