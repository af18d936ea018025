package graph

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const notifyGraph = `name: n
start: ask
notify:
  - {to: [ops], events: [waiting, failed]}
  - {to: [audit]}
nodes:
  - {id: ask, kind: human, question: "Ship it?", options: [approve, revise]}
  - {id: done, kind: end}
edges:
  - {from: ask, to: done}
`

// Routes say which event goes to which endpoint; no notify: sends all,
// notify: [] none, and each form survives JSON and Encode.
func TestNotifyRoutes(t *testing.T) {
	g := mustParse(t, notifyGraph)
	require.Empty(t, Validate(g))
	assert.Equal(t, []string{"approve", "revise"}, g.Nodes[0].Options)
	assert.True(t, g.Notify.Sends(NotifyWaiting, "ops"))
	assert.False(t, g.Notify.Sends(NotifyCompleted, "ops"))
	assert.True(t, g.Notify.Sends(NotifyCompleted, "audit"))
	assert.False(t, g.Notify.Sends(NotifyWaiting, "pager"))

	for _, tc := range []struct {
		name, notify string
		sends        bool
	}{
		{"absent", "", true},
		{"empty", "notify: []\n", false},
		{"all", "notify: [{to: [all], events: [budget]}]\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := mustParse(t, strings.Replace(notifyGraph, notifyGraph[strings.Index(notifyGraph, "notify:"):strings.Index(notifyGraph, "nodes:")], tc.notify, 1))
			assert.Equal(t, tc.sends, g.Notify.Sends(NotifyBudget, "pager"))
			b, err := json.Marshal(g)
			require.NoError(t, err)
			var back Graph
			require.NoError(t, json.Unmarshal(b, &back))
			assert.Equal(t, g.Notify, back.Notify, "JSON keeps the form: %s", b)
			y, err := Encode(g)
			require.NoError(t, err)
			again := mustParse(t, string(y))
			assert.Equal(t, g.Notify, again.Notify, "Encode keeps the form:\n%s", y)
		})
	}
}

func TestNotifyProblems(t *testing.T) {
	bad := strings.Replace(notifyGraph, "{to: [ops], events: [waiting, failed]}", "{to: [ops, 'no spaces'], events: [waiting, approved]}", 1)
	assert.Equal(t, []string{CodeBadNotifyTo, CodeBadNotifyEvent}, codes(Validate(mustParse(t, bad))))

	many := make([]string, MaxOptions+1)
	for i := range many {
		many[i] = fmt.Sprintf("o%d", i)
	}
	for name, opts := range map[string]string{
		"empty":    `[approve, ""]`,
		"repeated": `[approve, approve]`,
		"too many": "[" + strings.Join(many, ", ") + "]",
		"too long": "[" + strings.Repeat("x", MaxOptionBytes+1) + "]",
	} {
		src := strings.Replace(notifyGraph, "[approve, revise]", opts, 1)
		assert.Equal(t, []string{CodeBadOptions}, codes(Validate(mustParse(t, src))), name)
	}
	onAgent := `name: o
start: a
nodes:
  - {id: a, kind: agent, backend: scripted, options: [x]}
  - {id: done, kind: end}
edges:
  - {from: a, to: done}
`
	assert.Equal(t, []string{CodeIgnoredField}, codes(Validate(mustParse(t, onAgent))))
}
