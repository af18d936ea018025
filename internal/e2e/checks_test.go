package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/cli"
)

// Item 7: type and template mistakes are caught by validation, and what
// only shows at run time says node, edge, expression and the values seen.
func TestTypeAndTemplateMistakes(t *testing.T) {
	h, dir := cliHarness(t)

	// A number compared with a string: an error, never a silent false.
	mismatch := graphFile(t, "mismatch")
	code, out := tetherCode(t, "validate", mismatch)
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Regexp(t, `mismatch\.yaml:9:\d+: G057 error: the when of edge check -> passed does not fit the output of tool node check: invalid operation: == \(mismatched types int and string\)`, out)
	code, out = tetherCode(t, "run", mismatch)
	assert.Equal(t, cli.ExitUsage, code, "refused before it starts: %s", out)

	// A template reading an input its first visit is not given: a warning
	// with the way in, and at run time a failure that names the keys.
	feedback := graphFile(t, "feedback")
	code, out = tetherCode(t, "validate", feedback)
	assert.Equal(t, cli.ExitOK, code, out)
	assert.Contains(t, out, "G058 warning: node writer reads .input.feedback, but the run's start (path: start → writer; inputs it always has: topic) does not deliver it")
	code, out = tetherCode(t, "run", feedback, "--id", "fb-1", "--input", "topic=otters", "--follow")
	assert.Equal(t, cli.ExitFailed, code, out)
	assert.Contains(t, out, "G058 warning", "run prints the warning before it starts")
	assert.Regexp(t, `node "writer".*map has no entry for key "feedback".*the input it was given has keys topic`, out)

	// A when that fails on what a scripted agent's script writes is
	// caught before the run starts.
	scripted := graphFile(t, "approved-scripted")
	code, out = tetherCode(t, "run", scripted, "--id", "ap-0")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, `G069 error: the when of edge judge -> done fails on reply 1 of judge's script ({"approved": "yes"}): when "output.approved" gave yes (string), not a boolean`)
	assert.Equal(t, 0, h.executions("ap-0"), "nothing started")

	// A when that is not a boolean at run time (a reply validation cannot
	// foresee) names node, edge, expression and the values it saw.
	approved := graphFile(t, "approved")
	code, out = tetherCode(t, "run", approved, "--id", "ap-1", "--follow")
	assert.Equal(t, cli.ExitFailed, code, out)
	st := h.tether(t, dir, "status", "ap-1")
	t.Logf("run:\n%s\nstatus:\n%s", out, st)
	assert.Regexp(t, `error: +node judge, edge judge -> done: when "output.approved" gave nil, not a boolean.*the values it saw: output \{.*verdict="yes, turn 1".*\}, input \{\}, visits 1`, st)
}

// Item 8: inputs are checked before a run starts, and are strings unless
// the graph declares a type.
func TestInputsAreCheckedBeforeTheRunStarts(t *testing.T) {
	h, dir := cliHarness(t)
	file := graphFile(t, "inputs")
	h.tether(t, dir, "validate", file)

	code, out := tetherCode(t, "run", file, "--id", "in-1")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, "graph inputs needs input(s) topic; pass them with --input NAME=VALUE")
	assert.Equal(t, 0, h.executions("in-1"), "nothing started")

	code, out = tetherCode(t, "run", file, "--id", "in-1", "--input", "topic=x", "--input", "topci=y")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, `graph inputs has no input topci; did you mean "topic"? its inputs are topic, version, rounds`)
	code, out = tetherCode(t, "run", file, "--id", "in-1", "--input", "topic=x", "--input", "rounds=many")
	assert.Equal(t, cli.ExitUsage, code, out)
	assert.Contains(t, out, `input rounds is a number, and "many" is not one`)
	assert.Equal(t, 0, h.executions("in-1"), "nothing started")

	out = h.tether(t, dir, "run", file, "--id", "in-1", "--input", "topic=1.10", "--input", "version=1.10", "--input", "rounds=3", "--follow")
	assert.Contains(t, out, "run in-1 completed")
	cp, err := h.runs.Latest(context.Background(), "in-1")
	require.NoError(t, err)
	assert.Equal(t, "1.10", cp.Inputs["topic"], "a string stays as typed")
	assert.Equal(t, "1.10", cp.Inputs["version"])
	assert.Equal(t, 3.0, cp.Inputs["rounds"])
	assert.Equal(t, "1.10 1.10 3\n", cp.Outputs["done"]["said"])
}
