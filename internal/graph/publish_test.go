package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const reviewGraph = `
name: issue
start: writer
inputs: [{name: issue}, {name: title}]
publish:
  pull_request: {title: "Fix #{{.input.issue}}: {{.input.title}}", body: "As asked.", draft: true}
nodes:
  - {id: writer, kind: agent, backend: scripted, session: persist, prompt: "fix {{.input.issue}}"}
  - {id: review, kind: review}
  - {id: done, kind: end}
  - {id: gave_up, kind: end, publish: {pull_request: {title: "Could not fix #{{.input.issue}}"}}}
edges:
  - {from: writer, to: review}
  - {from: review, to: done, when: 'output.verdict == "approved" || output.verdict == "merged"'}
  - {from: review, to: gave_up, when: 'visits >= 3'}
  - {from: review, to: writer, with: {feedback: output.feedback}}
`

func TestReviewGraphIsValid(t *testing.T) {
	g, err := Parse([]byte(reviewGraph), "issue.yaml")
	require.NoError(t, err)
	ps := Validate(g)
	require.False(t, ps.HasErrors(), ps.String())
	require.NotNil(t, g.Publish)
	assert.True(t, g.Publish.PullRequest.Draft)
	done, _ := g.Node("done")
	gaveUp, _ := g.Node("gave_up")
	assert.Equal(t, g.Publish.PullRequest, g.PublishAt(done), "an end without its own publish publishes the graph's")
	assert.Equal(t, "Could not fix #{{.input.issue}}", g.PublishAt(gaveUp).Title)
	title, body, err := g.PublishAt(done).Render(map[string]any{"issue": 12, "title": "Sum panics"})
	require.NoError(t, err)
	assert.Equal(t, "Fix #12: Sum panics", title)
	assert.Equal(t, "As asked.", body)

	// Parse → Encode → Parse keeps publish and the review kind.
	out, err := Encode(g)
	require.NoError(t, err)
	g2, err := Parse(out, "again.yaml")
	require.NoError(t, err)
	assert.Equal(t, g.Publish, g2.Publish)
	r, _ := g2.Node("review")
	assert.Equal(t, KindReview, r.Kind)
}

func TestPublishProblems(t *testing.T) {
	for _, tc := range []struct{ name, src, code string }{
		{"no pull request", `
name: x
start: a
publish: {}
nodes: [{id: a, kind: end}]`, CodeBadPublish},
		{"no title", `
name: x
start: a
publish: {pull_request: {body: hi}}
nodes: [{id: a, kind: end}]`, CodeBadPublish},
		{"bad template", `
name: x
start: a
publish: {pull_request: {title: "{{.nope}}"}}
nodes: [{id: a, kind: end}]`, CodeBadPrompt},
		{"review without publish", `
name: x
start: r
nodes: [{id: r, kind: review}, {id: a, kind: end}]
edges: [{from: r, to: a}]`, CodeReviewNoPublish},
		{"review in a branch", `
name: x
start: f
publish: {pull_request: {title: t}}
nodes:
  - {id: f, kind: agent, backend: scripted, prompt: p, fanout: all}
  - {id: r, kind: review}
  - {id: s, kind: agent, backend: scripted, prompt: p}
  - {id: j, kind: join}
  - {id: a, kind: end}
edges: [{from: f, to: r}, {from: f, to: s}, {from: r, to: j}, {from: s, to: j}, {from: j, to: a}]`, CodeReviewInBranch},
		{"publish on an agent", `
name: x
start: w
nodes:
  - {id: w, kind: agent, backend: scripted, prompt: p, publish: {pull_request: {title: t}}}
  - {id: a, kind: end}
edges: [{from: w, to: a}]`, CodeIgnoredField},
		{"a verdict compared with a number", `
name: x
start: r
publish: {pull_request: {title: t}}
nodes: [{id: r, kind: review}, {id: a, kind: end}]
edges: [{from: r, to: a, when: 'output.verdict == 1'}]`, CodeTypeMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Parse([]byte(tc.src), "x.yaml")
			require.NoError(t, err)
			var codes []string
			for _, p := range Validate(g) {
				codes = append(codes, p.Code)
				if p.Code == tc.code {
					assert.False(t, p.Pos.IsZero(), "%s has a position", p)
				}
			}
			assert.Contains(t, codes, tc.code, Validate(g).String())
		})
	}
}

func TestParseReview(t *testing.T) {
	for in, want := range map[string][2]string{
		"approved":      {VerdictApproved, ""},
		"LGTM":          {VerdictApproved, ""},
		"Approve: nice": {VerdictApproved, "nice"},
		"changes_requested: add a test for the empty slice": {VerdictChangesRequested, "add a test for the empty slice"},
		"Changes requested\n\nadd a test\n\nsum.go:3: why?": {VerdictChangesRequested, "add a test\n\nsum.go:3: why?"},
		"request-changes: x":         {VerdictChangesRequested, "x"},
		"commented: what about nil?": {VerdictCommented, "what about nil?"},
		"merged":                     {VerdictMerged, ""},
	} {
		v, f, err := ParseReview(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, [2]string{v, f}, in)
	}
	for _, bad := range []string{"", "ok", "please add a test", "approvedish: x"} {
		_, _, err := ParseReview(bad)
		assert.ErrorIs(t, err, ErrBadVerdict, bad)
	}
}
