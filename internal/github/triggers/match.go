package triggers

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/tether-run/tether/internal/github"
	"github.com/tether-run/tether/internal/graph"
)

// ErrNoTrigger is an event no trigger of the file starts a run for.
var ErrNoTrigger = errors.New("triggers: no trigger")

// ForLabel is the graph an issue of repo labelled label starts, with its
// name and trigger.
func (t *Triggers) ForLabel(repo, label string) (string, *graph.Graph, *Trigger, bool) {
	for i := range t.File.Triggers {
		tr := &t.File.Triggers[i]
		if tr.Label != "" && strings.EqualFold(tr.Repo, repo) && strings.EqualFold(tr.Label, label) {
			return tr.Graph, t.graphs[tr.Graph], tr, t.graphs[tr.Graph] != nil
		}
	}
	return "", nil, nil, false
}

// ForCommand is the graph called name that a `/tether run` comment on
// repo may start, with its trigger; the error says why it may not.
func (t *Triggers) ForCommand(repo, name string) (*graph.Graph, *Trigger, error) {
	var allowed []string
	for i := range t.File.Triggers {
		tr := &t.File.Triggers[i]
		if tr.Command != github.CmdRun || !strings.EqualFold(tr.Repo, repo) {
			continue
		}
		names := tr.Graphs
		if len(names) == 0 {
			names = slices.Sorted(maps.Keys(t.graphs))
		}
		if slices.Contains(names, name) && t.graphs[name] != nil {
			return t.graphs[name], tr, nil
		}
		allowed = append(allowed, names...)
	}
	if allowed == nil {
		return nil, nil, fmt.Errorf("%w: `/tether run` is not enabled on %s; its triggers file has no `command: run` trigger for it", ErrNoTrigger, repo)
	}
	slices.Sort(allowed)
	return nil, nil, fmt.Errorf("%w: no graph %q may be started on %s; the graphs are %s", ErrNoTrigger, name, repo, strings.Join(slices.Compact(allowed), ", "))
}

// Inputs are the inputs of a run of g started from issue by tr: the
// issue's number, title, body, author and url for the inputs g declares
// (all of them when it declares none), then the trigger's inputs, then
// the key=value pairs of a `/tether run` comment, each read by its
// input's type. A name g does not declare, or a required input nothing
// gives, is refused.
func Inputs(g *graph.Graph, tr *Trigger, issue *github.Issue, given map[string]string) (map[string]any, error) {
	out := map[string]any{}
	if issue != nil {
		values := map[string]any{
			github.InputIssue: issue.Number, github.InputTitle: issue.Title, github.InputBody: issue.Body,
			github.InputAuthor: issue.Author, github.InputURL: issue.URL,
		}
		for _, name := range github.IssueInputs() {
			if len(g.Inputs) == 0 || declares(g, name) {
				out[name] = values[name]
			}
		}
		// A number input takes the issue's number as is; a string input
		// its text.
		if i := slices.IndexFunc(g.Inputs, func(in graph.Input) bool { return in.Name == github.InputIssue }); i >= 0 &&
			g.Inputs[i].Type != graph.InputNumber && g.Inputs[i].Type != graph.InputJSON {
			out[github.InputIssue] = strconv.Itoa(issue.Number)
		}
	}
	if tr != nil {
		maps.Copy(out, tr.Inputs)
	}
	var problems []string
	for _, k := range slices.Sorted(maps.Keys(given)) {
		i := slices.IndexFunc(g.Inputs, func(in graph.Input) bool { return in.Name == k })
		switch {
		case i >= 0:
			v, err := g.Inputs[i].ParseValue(given[k])
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			out[k] = v
		case len(g.Inputs) == 0:
			out[k] = given[k]
		default:
			problems = append(problems, fmt.Sprintf("graph %s has no input %s", g.Name, k))
		}
	}
	for _, in := range g.Inputs {
		if _, ok := out[in.Name]; !ok && in.Required && in.Default == nil {
			problems = append(problems, fmt.Sprintf("graph %s needs input %s; give it in the comment as %s=VALUE", g.Name, in.Name, in.Name))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s", graph.ErrInputs, strings.Join(problems, "; "))
	}
	return out, nil
}

func declares(g *graph.Graph, name string) bool {
	return slices.ContainsFunc(g.Inputs, func(in graph.Input) bool { return in.Name == name })
}

// Knows reports whether some trigger names repo.
func (t *Triggers) Knows(repo string) bool {
	return slices.ContainsFunc(t.File.Triggers, func(tr Trigger) bool { return strings.EqualFold(tr.Repo, repo) })
}
