package graph

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"

	"github.com/tether-run/tether/internal/catalogue"
)

// ToolOutput is the output of a tool node's visit, with its types: what a
// when or with on an edge out of a tool node is checked against.
// runapi.ToolOutput is this type with the map the tool activity returns.
type ToolOutput struct {
	ExitCode   int    `expr:"exit_code"`
	TimedOut   bool   `expr:"timed_out"`
	Stdout     string `expr:"stdout"`
	Stderr     string `expr:"stderr"`
	DurationMS int    `expr:"duration_ms"`
}

// HumanOutput is the output of a human node's visit.
type HumanOutput struct {
	Answer     string `expr:"answer"`
	QuestionID string `expr:"question_id"`
}

// ReviewOutput is the output of a review node's visit (publish.go).
type ReviewOutput struct {
	Verdict     string `expr:"verdict"`
	Feedback    string `expr:"feedback"`
	Answer      string `expr:"answer"`
	QuestionID  string `expr:"question_id"`
	PullRequest int    `expr:"pull_request"`
	URL         string `expr:"url"`
}

type reviewEnv struct {
	Output ReviewOutput   `expr:"output"`
	Input  map[string]any `expr:"input"`
	Visits int            `expr:"visits"`
}

type toolEnv struct {
	Output ToolOutput     `expr:"output"`
	Input  map[string]any `expr:"input"`
	Visits int            `expr:"visits"`
}

type humanEnv struct {
	Output HumanOutput    `expr:"output"`
	Input  map[string]any `expr:"input"`
	Visits int            `expr:"visits"`
}

// outputKeys are the keys a node kind's output is known to hold; nil for
// a kind whose output is anyone's guess (an agent's structured output).
func outputKeys(k Kind) []string {
	switch k {
	case KindTool:
		return []string{"duration_ms", "exit_code", "stderr", "stdout", "timed_out"}
	case KindHuman:
		return []string{"answer", "question_id"}
	case KindReview:
		return []string{"answer", "feedback", "pull_request", "question_id", "url", "verdict"}
	}
	return nil
}

// typedEnv is the typed expression environment of an edge out of a node of
// kind k, nil when the kind's output has no known types.
func typedEnv(k Kind) any {
	switch k {
	case KindTool:
		return toolEnv{}
	case KindHuman:
		return humanEnv{}
	case KindReview:
		return reviewEnv{}
	}
	return nil
}

// checkTyped compiles src against the typed environment of an edge out of
// a node of kind k: comparing a tool's exit_code with a string, or reading
// a field a tool's output does not have, is an error here, where at run
// time it would only be false, or nil.
//
//workflowcheck:ignore
func checkTyped(src string, k Kind) error {
	env := typedEnv(k)
	if env == nil || strings.TrimSpace(src) == "" {
		return nil
	}
	_, err := expr.Compile(src, exprOptionsFor(env)...)
	var fe *file.Error
	if errors.As(err, &fe) {
		// Name the output, not the Go type that stands for it.
		fe.Message = strings.NewReplacer("type graph.ToolOutput", "a tool's output", "type graph.HumanOutput", "a human's output", "type graph.ReviewOutput", "a review's output").Replace(fe.Message)
	}
	return err
}

// checkTypes checks each edge's when and with against the known types of
// its from node's output (tool and human nodes), and an agent's when
// against what the agent may write (checkAgentWhen).
func (v *validator) checkTypes() {
	for i, e := range v.g.Edges {
		fromIdx, ok := v.index[e.From]
		if !ok {
			continue
		}
		from := v.g.Nodes[fromIdx]
		if from.Kind == KindAgent {
			v.checkAgentWhen(i, e, &from)
			continue
		}
		if typedEnv(from.Kind) == nil {
			continue
		}
		path := edgePath(i)
		label := fmt.Sprintf("edge %s -> %s", e.From, orQ(e.To))
		hint := fmt.Sprintf("a %s node's output has %s", from.Kind, typesOf(from.Kind))
		if e.When != "" {
			if _, err := CompileWhen(e.When); err == nil {
				if err := checkTyped(e.When, from.Kind); err != nil {
					v.add(CodeTypeMismatch, v.at(path+".when", path), e.From, "the when of %s does not fit the output of %s node %s: %s; %s", label, from.Kind, e.From, exprMessage(err), hint)
				}
			}
		}
		for _, k := range sortedKeys(e.With) {
			src, ok := e.With[k].(string)
			if !ok {
				continue
			}
			if _, err := CompileValue(src); err != nil {
				continue // reported as G021
			}
			if err := checkTyped(src, from.Kind); err != nil {
				v.add(CodeTypeMismatch, v.at(path+".with."+k, path), e.From, "with %s of %s does not fit the output of %s node %s: %s; %s", k, label, from.Kind, e.From, exprMessage(err), hint)
			}
		}
	}
}

func typesOf(k Kind) string {
	switch k {
	case KindTool:
		return "exit_code (a number), timed_out (a boolean), stdout and stderr (strings) and duration_ms (a number): compare exit_code with a number, e.g. output.exit_code == 0"
	case KindHuman:
		return "answer and question_id (strings): compare answer with a string, e.g. output.answer == \"approve\""
	case KindReview:
		return "verdict, feedback, answer, question_id and url (strings) and pull_request (a number): compare verdict with a string, e.g. output.verdict == \"approved\""
	}
	return ""
}

// checkDelivery warns of a template that reads .input.NAME where some way
// into its node does not deliver NAME: the visit would fail there, at run
// time, on a key the map does not have.
func (v *validator) checkDelivery() {
	byRun := v.runDelivers()
	for i := range v.g.Nodes {
		n := &v.g.Nodes[i]
		if n.ID == "" {
			continue
		}
		reads := v.inputsReadBy(n)
		if len(reads) == 0 {
			continue
		}
		for _, name := range reads {
			if missing := v.undelivered(n.ID, name, byRun); missing != "" {
				v.add(CodeInputNotDelivered, v.nodePos(i), n.ID, "node %s reads .input.%s, but %s does not deliver it, so that visit would fail at run time; declare the input with a default (inputs: [{name: %s, default: \"\"}]) or map it on every edge into %s (with: {%s: …})", n.ID, name, missing, name, n.ID, name)
			}
		}
	}
}

// runDelivers is what every visit's input holds from the run itself: the
// inputs a run must be given or has a default for.
func (v *validator) runDelivers() []string {
	var out []string
	for _, in := range v.g.Inputs {
		if in.Name != "" && (in.Required || in.Default != nil) {
			out = append(out, in.Name)
		}
	}
	return out
}

// undelivered names the first way into node that does not deliver name
// ("" when every way does): the run's start, or an edge (an edge without
// with passes its from node's output on, which for an agent or a join may
// hold anything).
func (v *validator) undelivered(node, name string, byRun []string) string {
	if slices.Contains(byRun, name) {
		return ""
	}
	if node == v.g.Start {
		declared := "none"
		if names := inputNames(v.g.Inputs); len(names) > 0 {
			declared = strings.Join(names, ", ")
		}
		return fmt.Sprintf("the run's start (path: start → %s; inputs it always has: %s)", node, orNone(byRun, declared))
	}
	for _, e := range v.g.Edges {
		if e.To != node {
			continue
		}
		if len(e.With) > 0 {
			if _, ok := e.With[name]; !ok {
				return fmt.Sprintf("edge %s -> %s (path: %s → %s; its with maps only %s)", e.From, node, e.From, node, strings.Join(sortedKeys(e.With), ", "))
			}
			continue
		}
		fromIdx, ok := v.index[e.From]
		if !ok {
			continue
		}
		if keys := outputKeys(v.g.Nodes[fromIdx].Kind); keys != nil && !slices.Contains(keys, name) {
			return fmt.Sprintf("edge %s -> %s (path: %s → %s; it passes on %s node %s's output: %s)", e.From, node, e.From, node, v.g.Nodes[fromIdx].Kind, e.From, strings.Join(keys, ", "))
		}
	}
	return ""
}

func orNone(list []string, declared string) string {
	if len(list) == 0 {
		return "none; declared: " + declared
	}
	return strings.Join(list, ", ")
}

func inputNames(ins []Input) []string {
	var out []string
	for _, in := range ins {
		if in.Name != "" {
			out = append(out, in.Name)
		}
	}
	return out
}

// inputsReadBy lists the input names node n's templates read as
// .input.NAME, sorted.
func (v *validator) inputsReadBy(n *Node) []string {
	var srcs []string
	switch n.Kind {
	case KindAgent:
		srcs = []string{n.Prompt}
	case KindHuman, KindReview:
		srcs = []string{n.Question}
	case KindTool:
		srcs = n.Run
	}
	var out []string
	for _, src := range srcs {
		for _, name := range InputsRead(src) {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// checkAgentWhen checks the when of edge i out of agent node from. An
// agent's output has no types, so a when that is a value it writes, not a
// comparison (`output.approved`), fails the run whenever the agent writes
// something other than a boolean ("yes", "true"): a warning. An
// agent whose backend reads its script (the built-in one) has its outputs
// in that script: a when that fails on one of them
// (its JSON: replies without templates) is an error.
func (v *validator) checkAgentWhen(i int, e Edge, from *Node) {
	if e.When == "" {
		return
	}
	p, err := CompileWhen(e.When)
	if err != nil {
		return // reported as G020
	}
	path := edgePath(i)
	label := fmt.Sprintf("edge %s -> %s", e.From, orQ(e.To))
	if catalogue.ReadsScript(from.Backend) && v.checkScriptedWhen(p, path, label, e, from) {
		return
	}
	switch p.prog.Node().(type) {
	case *ast.MemberNode, *ast.IdentifierNode:
		v.add(CodeUncheckedWhen, v.at(path+".when", path), e.From, "the when of %s is %s, a value agent %s writes: the run fails when it is not a boolean (an agent may write \"yes\" or \"true\"); compare it: %s == true", label, e.When, e.From, e.When)
	}
}

// checkScriptedWhen reports the first reply of a scripted agent's script
// on which the when fails; it says whether it reported one.
func (v *validator) checkScriptedWhen(p *Program, path, label string, e Edge, from *Node) bool {
	for n, reply := range from.Script {
		rest, ok := strings.CutPrefix(strings.TrimSpace(reply), "JSON:")
		if !ok || strings.Contains(rest, "{{") {
			continue
		}
		var out map[string]any
		if json.Unmarshal([]byte(rest), &out) != nil {
			continue
		}
		if _, err := p.EvalBool(Env{Output: out, Input: map[string]any{}}); err != nil {
			v.add(CodeScriptedWhen, v.at(path+".when", path), e.From, "the when of %s fails on reply %d of %s's script (%s): %s", label, n+1, e.From, strings.TrimSpace(rest), strings.TrimPrefix(exprMessage(err), "graph: "))
			return true
		}
	}
	return false
}
