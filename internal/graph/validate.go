package graph

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr/file"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/catalogue"
)

// Validate checks that g makes sense as a workflow and returns every
// problem found, in file order; it never stops at the first. A graph with
// no error-severity problem (Problems.HasErrors is false) can be run.
// Positions come from g.Source, so a graph built in code gets problems
// without positions.
func Validate(g *Graph) Problems {
	if g == nil {
		return Problems{{Code: CodeNotAGraph, Severity: severityOf(CodeNotAGraph), Message: "there is no graph (nil); parse a graph file first"}}
	}
	v := &validator{g: g, src: g.Source, index: map[string]int{}}
	v.checkInputs()
	v.checkInputTypes()
	v.checkWorkspace()
	v.checkBudgets()
	v.checkNotify()
	v.checkPublish()
	v.checkNodes()
	v.checkStart()
	v.checkEdges()
	v.checkTypes()
	v.checkDelivery()
	v.checkFlow()
	v.probs.sortByPos()
	return v.probs
}

type validator struct {
	g     *Graph
	src   *Source
	index map[string]int // node id -> index of its first declaration
	ids   []string       // distinct node ids, in declaration order
	probs Problems
}

func (v *validator) add(code string, pos Pos, node, format string, args ...any) {
	v.probs = append(v.probs, Problem{
		Code:     code,
		Severity: severityOf(code),
		File:     v.src.file(),
		Pos:      pos,
		Node:     node,
		Message:  fmt.Sprintf(format, args...),
	})
}

// at returns the position of path, or of fallback when path was not
// written (a missing field is reported where its owner is).
func (v *validator) at(path, fallback string) Pos {
	if p := v.src.At(path); !p.IsZero() {
		return p
	}
	return v.src.At(fallback)
}

func (v *validator) nodePos(i int) Pos {
	if p := v.g.Nodes[i].Pos; !p.IsZero() {
		return p
	}
	return v.src.At(nodePath(i))
}

func (v *validator) checkInputs() {
	seen := map[string]int{}
	for i, in := range v.g.Inputs {
		path := fmt.Sprintf("inputs[%d]", i)
		if in.Name == "" {
			v.add(CodeMissingInputName, v.at(path+".name", path), "", "input #%d has no name; give it a name that prompts and expressions use as input.NAME", i+1)
			continue
		}
		if first, dup := seen[in.Name]; dup {
			v.add(CodeDuplicateInput, v.at(path+".name", path), "", "input %q is declared twice (first as input #%d); remove or rename one", in.Name, first+1)
			continue
		}
		seen[in.Name] = i
	}
}

var kindNames = func() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = string(k)
	}
	return out
}()

func knownKind(k Kind) bool {
	for _, known := range Kinds {
		if k == known {
			return true
		}
	}
	return false
}

func (v *validator) checkNodes() {
	for i := range v.g.Nodes {
		n := &v.g.Nodes[i]
		path := nodePath(i)
		name := n.ID
		switch {
		case n.ID == "":
			v.add(CodeMissingID, v.nodePos(i), "", "node #%d has no id; give it an id that edges and start can name", i+1)
			name = fmt.Sprintf("#%d", i+1)
		default:
			if !validID(n.ID) {
				v.add(CodeBadID, v.at(path+".id", path), n.ID, "node id %q may hold only letters, digits, '_' and '-' (at most 128): it names the node's session blobs and questions; rename it, e.g. %q", n.ID, suggestID(n.ID))
			}
			if first, dup := v.index[n.ID]; dup {
				v.add(CodeDuplicateID, v.at(path+".id", path), n.ID, "node id %q is used twice (first at %s); node ids must be unique, so rename one", n.ID, v.nodePos(first))
			} else {
				v.index[n.ID] = i
				v.ids = append(v.ids, n.ID)
			}
		}

		switch {
		case n.Kind == "":
			v.add(CodeUnknownKind, v.nodePos(i), n.ID, "node %s has no kind; set kind to one of %s", name, strings.Join(kindNames, ", "))
		case !knownKind(n.Kind):
			v.add(CodeUnknownKind, v.at(path+".kind", path), n.ID, "node %s has unknown kind %q; %suse one of %s", name, n.Kind, didYouMean(string(n.Kind), kindNames), strings.Join(kindNames, ", "))
		}
		if n.MaxVisits < 0 {
			v.add(CodeNegativeMaxVisits, v.at(path+".max_visits", path), n.ID, "node %s has max_visits %d; use a positive limit, or leave it out for no per-node limit", name, n.MaxVisits)
		}
		if n.Timeout < 0 {
			v.add(CodeNegativeTimeout, v.at(path+".timeout", path), n.ID, "node %s has a negative timeout %s; use a positive duration such as 5m, or leave it out", name, durationString(n.Timeout))
		}
		if n.Fanout != "" && n.Fanout != FanoutAll {
			v.add(CodeBadFanout, v.at(path+".fanout", path), n.ID, "node %s has fanout %q; the only fan-out is %q (take every matching edge at once); leave fanout out to take the first matching edge", name, n.Fanout, FanoutAll)
		}
		if out := len(v.g.EdgesFrom(n.ID)); n.Fanout == FanoutAll && out > MaxBranches {
			v.add(CodeTooManyBranches, v.at(path+".fanout", path), n.ID, "node %s fans out on %d edges, but one fan-out may open at most %d branches (each holds a working directory and a line of the run's history); split it into fan-outs of at most %d", name, out, MaxBranches, MaxBranches)
		}

		switch n.Kind {
		case KindAgent, KindTool:
			v.checkNetwork(i, name)
			v.checkLimits(i, name)
		}
		switch n.Kind {
		case KindAgent:
			v.checkAgent(i, name)
		case KindTool:
			v.checkEnv(i, name)
			if len(n.Run) == 0 || n.Run[0] == "" {
				v.add(CodeMissingRun, v.at(path+".run", path), n.ID, "tool node %s has no run; give the command as a list, e.g. run: [go, test, ./...]", name)
			}
			for j, arg := range n.Run {
				v.checkTemplate(arg, fmt.Sprintf("run argument %d of node %s", j+1, name), v.at(path+".run", path), n.ID)
			}
		case KindHuman:
			if strings.TrimSpace(n.Question) == "" {
				v.add(CodeMissingQuestion, v.at(path+".question", path), n.ID, "human node %s has no question; write what the person should answer, e.g. question: Publish the draft?", name)
			}
			v.checkTemplate(n.Question, "the question of node "+name, v.at(path+".question", path), n.ID)
			v.checkOptions(i, name)
		case KindReview:
			v.checkTemplate(n.Question, "the question of node "+name, v.at(path+".question", path), n.ID)
		}
		v.checkNodePublish(i, name)
		v.checkPaths(i, name)
		v.checkIgnoredFields(i, name)
	}
	// After the loop, so that every node id is known to the outputs check.
	for i := range v.g.Nodes {
		v.checkJoinWorkspace(i)
	}
}

// checkJoinWorkspace checks a join's workspace: its form, and its pick and
// by expressions.
func (v *validator) checkJoinWorkspace(i int) {
	n := &v.g.Nodes[i]
	w := n.Workspace
	if w == nil {
		return
	}
	name := n.ID
	if name == "" {
		name = fmt.Sprintf("#%d", i+1)
	}
	path := nodePath(i) + ".workspace"
	pos := v.at(path, nodePath(i))
	switch w.Mode {
	case JoinTrunk, JoinMerge:
		if w.Pick != "" || w.By != "" {
			v.add(CodeBadJoinWorkspace, pos, n.ID, "the workspace of node %s is %s, which reads no pick or by; write workspace: {pick: EXPR, by: EXPR} to keep one branch's files, or leave pick and by out", name, w.Mode)
		}
		return
	case JoinPick:
	case "":
		v.add(CodeBadJoinWorkspace, pos, n.ID, "the workspace of node %s is empty; write one of %s, or leave workspace out to keep the trunk's files", name, joinForms)
		return
	default:
		v.add(CodeBadJoinWorkspace, pos, n.ID, "the workspace of node %s is %q; %swrite one of %s", name, w.Mode, didYouMean(w.Mode, []string{JoinTrunk, JoinMerge, JoinPick}), joinForms)
		return
	}
	if strings.TrimSpace(w.Pick) == "" {
		msg := "the workspace of node %s has no pick; write the boolean that a branch must meet to be kept, e.g. workspace: {pick: outputs.tests.exit_code == 0}"
		if w.By != "" {
			msg = "the workspace of node %s has by but no pick; by only ranks the branches that pick keeps, so add a pick, e.g. workspace: {pick: outputs.tests.exit_code == 0, by: diff.lines}"
		}
		v.add(CodeMissingPick, v.at(path+".pick", path), n.ID, msg, name)
	} else {
		p, err := CompilePick(w.Pick)
		if err != nil {
			v.add(CodeBadPick, v.at(path+".pick", path), n.ID, "the pick of node %s does not compile: %s; write a boolean over branch, outputs and diff, e.g. outputs.tests.exit_code == 0", name, exprMessage(err))
		}
		v.checkOutputsRead(p, "pick", v.at(path+".pick", path), name, n.ID)
	}
	if w.By != "" {
		p, err := CompileBy(w.By)
		if err != nil {
			v.add(CodeBadPick, v.at(path+".by", path), n.ID, "the by of node %s does not compile: %s; write a number over branch, outputs and diff, e.g. diff.lines", name, exprMessage(err))
		}
		v.checkOutputsRead(p, "by", v.at(path+".by", path), name, n.ID)
	}
}

// checkOutputsRead warns about outputs.X in a pick or by when no node is X:
// a branch never has that output, so the expression reads nil.
func (v *validator) checkOutputsRead(p *Program, what string, pos Pos, name, node string) {
	for _, id := range p.outputsRead() {
		if _, ok := v.index[id]; ok {
			continue
		}
		v.add(CodeUnknownPickOutput, pos, node, "the %s of node %s reads outputs.%s, but no node has id %q, so it is always nil; %suse the id of a node in the branches", what, name, id, id, didYouMean(id, v.ids))
	}
}

func (v *validator) checkAgent(i int, name string) {
	n := &v.g.Nodes[i]
	path := nodePath(i)
	known := catalogue.Implemented()
	switch {
	case n.Backend == "":
		v.add(CodeMissingBackend, v.nodePos(i), n.ID, "agent node %s has no backend; set backend to one of %s", name, strings.Join(known, ", "))
	default:
		if info, ok := catalogue.Lookup(n.Backend); !ok {
			v.add(CodeUnknownBackend, v.at(path+".backend", path), n.ID, "agent node %s has unknown backend %q; %suse one of %s", name, n.Backend, didYouMean(n.Backend, known), strings.Join(known, ", "))
		} else if !info.Implemented {
			v.add(CodeNotImplemented, v.at(path+".backend", path), n.ID, "agent node %s has backend %s, which this build of Tether cannot run (it is known, but has no executor); use one of %s", name, n.Backend, strings.Join(known, ", "))
		}
	}
	for j, fb := range n.Fallback {
		if info, ok := catalogue.Lookup(fb); !ok {
			v.add(CodeUnknownFallback, v.at(path+".fallback", path), n.ID, "agent node %s has unknown fallback backend %q (entry %d); %suse names from %s", name, fb, j+1, didYouMean(fb, known), strings.Join(known, ", "))
		} else if !info.Implemented {
			v.add(CodeNotImplemented, v.at(path+".fallback", path), n.ID, "agent node %s has fallback backend %s (entry %d), which this build of Tether cannot run; use names from %s", name, fb, j+1, strings.Join(known, ", "))
		}
	}
	if n.Session == SessionPersist {
		for _, b := range append([]string{n.Backend}, n.Fallback...) {
			if info, ok := catalogue.Lookup(b); ok && info.Implemented && !info.Persist {
				v.add(CodePersistNoCapability, v.at(path+".session", path), n.ID, "agent node %s uses session: persist, but backend %s cannot carry a conversation: its every visit runs fresh, with the inbound session keys stripped; use session: fresh on it, or a backend with persist (%s)", name, b, strings.Join(persistBackends(), ", "))
			}
		}
	}
	v.checkTemplate(n.Prompt, "the prompt of node "+name, v.at(path+".prompt", path), n.ID)
	if n.Permissions != "" && !slices.Contains(catalogue.Permissions(), n.Permissions) {
		v.add(CodeBadPermissions, v.at(path+".permissions", path), n.ID, "agent node %s has permissions %q; %suse one of %s, or leave it out for the worker's default", name, n.Permissions, didYouMean(n.Permissions, catalogue.Permissions()), strings.Join(catalogue.Permissions(), ", "))
	}
	v.checkEnv(i, name)
	v.checkSupported(i, name)
}

// settingsOf lists the agent settings node n sets that not every backend
// honours, by their DSL names.
func settingsOf(n *Node) []string {
	var out []string
	for _, s := range []struct {
		name string
		set  bool
	}{
		{agent.SettingPermissions, n.Permissions != ""},
		{agent.SettingTools, n.Tools != nil},
		{agent.SettingDisallowedTools, n.DisallowedTools != nil},
		{agent.SettingSystemPrompt, n.SystemPrompt != ""},
		{agent.SettingAppendSystemPrompt, n.AppendSystemPrompt != ""},
	} {
		if s.set {
			out = append(out, s.name)
		}
	}
	return out
}

// checkSupported refuses a setting that the node's backend or one of its
// fallbacks cannot honour: the visit would run with more (or other) power
// than the graph says.
func (v *validator) checkSupported(i int, name string) {
	n := &v.g.Nodes[i]
	path := nodePath(i)
	backends := append([]string{n.Backend}, n.Fallback...)
	for _, setting := range settingsOf(n) {
		for j, b := range backends {
			if _, known := catalogue.Lookup(b); !known || catalogue.Honours(b, setting) {
				continue
			}
			var can []string
			for _, k := range catalogue.Known() {
				if catalogue.Honours(k, setting) {
					can = append(can, k)
				}
			}
			role := "backend"
			if j > 0 {
				role = "fallback backend"
			}
			v.add(CodeUnsupported, v.at(path+"."+setting, path), n.ID, "agent node %s sets %s, but its %s %s cannot honour it (see docs/backends.md); remove %s, or run the node on a backend that can: %s", name, setting, role, b, setting, strings.Join(can, ", "))
		}
	}
}

// checkEnv checks that every env entry names a variable: env passes the
// worker's values of the variables named, never values written in the graph.
func (v *validator) checkEnv(i int, name string) {
	n := &v.g.Nodes[i]
	path := nodePath(i)
	for j, e := range n.Env {
		if !validEnvName(e) {
			hint := "write only the variable's name"
			if k, _, ok := strings.Cut(e, "="); ok && validEnvName(k) {
				hint = fmt.Sprintf("write only the name %q: the value is the worker's own, never written in the graph", k)
			}
			v.add(CodeBadEnvName, v.at(path+".env", path), n.ID, "env entry %d of node %s, %q, is not an environment variable name (letters, digits and '_', not starting with a digit); %s", j+1, name, e, hint)
		}
	}
}

func validEnvName(s string) bool {
	if s == "" || '0' <= s[0] && s[0] <= '9' {
		return false
	}
	for _, c := range s {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// checkBudgets checks the run's budget and each agent node's.
func (v *validator) checkBudgets() {
	v.checkBudget(v.g.Budget, "budget", "the run's budget", "")
	var uncosted []string
	for i := range v.g.Nodes {
		n := &v.g.Nodes[i]
		path := nodePath(i) + ".budget"
		v.checkBudget(n.Budget, path, "the budget of node "+n.ID, n.ID)
		for _, b := range append([]string{n.Backend}, n.Fallback...) {
			if n.Kind == KindAgent && !catalogue.ReportsCost(b) && !slices.Contains(uncosted, b) && b != "" {
				uncosted = append(uncosted, b)
			}
		}
		if n.Budget != nil && n.Budget.MaxCostUSD > 0 && n.Kind == KindAgent && !catalogue.ReportsCost(n.Backend) {
			v.add(CodeCostNotReported, v.at(path+".max_cost_usd", path), n.ID, "node %s has a cost budget, but backend %s reports no cost, so only max_tokens bounds it; add max_tokens", n.ID, n.Backend)
		}
	}
	if b := v.g.Budget; b != nil && b.MaxCostUSD > 0 && len(uncosted) > 0 {
		v.add(CodeCostNotReported, v.at("budget.max_cost_usd", "budget"), "", "the run has a cost budget, but backend(s) %s report no cost, so their visits count only against max_tokens; add max_tokens", strings.Join(uncosted, ", "))
	}
}

func (v *validator) checkBudget(b *Budget, path, what, node string) {
	switch {
	case b == nil:
	case b.MaxCostUSD < 0 || b.MaxTokens < 0:
		v.add(CodeBadBudget, v.at(path, path), node, "%s has a negative bound; use positive numbers, or leave the field out for no bound", what)
	case b.MaxCostUSD == 0 && b.MaxTokens == 0:
		v.add(CodeBadBudget, v.at(path, path), node, "%s sets neither max_cost_usd nor max_tokens; set one, or remove the budget", what)
	}
}

// checkWorkspace checks the graph's workspace source, when it has one.
func (v *validator) checkWorkspace() {
	w := v.g.Workspace
	if w == nil {
		return
	}
	if strings.TrimSpace(w.From) == "" {
		v.add(CodeBadWorkspace, v.at("workspace.from", "workspace"), "", "workspace has no from; set from to a directory or a git repository (path or URL) the run's workspace starts from, e.g. from: \"{{.input.repo}}\", or remove workspace")
	}
	v.checkTemplate(w.From, "workspace from", v.at("workspace.from", "workspace"), "")
	v.checkTemplate(w.Ref, "workspace ref", v.at("workspace.ref", "workspace"), "")
}

// checkTemplate checks a prompt, a question or a run argument: all three
// are templates over the same data.
func (v *validator) checkTemplate(src, what string, pos Pos, node string) {
	if !strings.Contains(src, "{{") {
		return
	}
	if err := CheckPrompt(src); err != nil {
		v.add(CodeBadPrompt, pos, node, "%s is not a valid template: %s; see \"Templates\" in docs/graph.md", what, templateMessage(err))
	}
}

// checkIgnoredFields warns about fields that the node's kind never reads.
func (v *validator) checkIgnoredFields(i int, name string) {
	n := &v.g.Nodes[i]
	if !knownKind(n.Kind) {
		return
	}
	fields := []struct {
		key   string
		set   bool
		kinds []Kind
	}{
		{"backend", n.Backend != "", []Kind{KindAgent}},
		{"fallback", len(n.Fallback) > 0, []Kind{KindAgent}},
		{"session", n.Session != SessionFresh, []Kind{KindAgent}},
		{"prompt", n.Prompt != "", []Kind{KindAgent}},
		{"script", len(n.Script) > 0, []Kind{KindAgent}},
		{"model", n.Model != "", []Kind{KindAgent}},
		{"workdir", n.Workdir != "", []Kind{KindAgent}},
		{"question", n.Question != "", []Kind{KindHuman, KindReview}},
		{"allow_empty", n.AllowEmpty, []Kind{KindHuman}},
		{"options", len(n.Options) > 0, []Kind{KindHuman}},
		{"permissions", n.Permissions != "", []Kind{KindAgent}},
		{"tools", n.Tools != nil, []Kind{KindAgent}},
		{"disallowed_tools", n.DisallowedTools != nil, []Kind{KindAgent}},
		{"system_prompt", n.SystemPrompt != "", []Kind{KindAgent}},
		{"append_system_prompt", n.AppendSystemPrompt != "", []Kind{KindAgent}},
		{"ask_user", n.AskUser != nil, []Kind{KindAgent}},
		{"run", len(n.Run) > 0, []Kind{KindTool}},
		{"env", len(n.Env) > 0, []Kind{KindAgent, KindTool}},
		{"timeout", n.Timeout != 0, []Kind{KindAgent, KindTool}},
		{"network", n.Network != nil, []Kind{KindAgent, KindTool}},
		{"limits", n.Limits != nil, []Kind{KindAgent, KindTool}},
		{"budget", n.Budget != nil, []Kind{KindAgent}},
		{"fanout", n.Fanout != "", []Kind{KindAgent, KindHuman, KindTool, KindJoin}},
		{"workspace", n.Workspace != nil, []Kind{KindJoin}},
		{"publish", n.Publish != nil, []Kind{KindEnd}},
	}
	path := nodePath(i)
	for _, f := range fields {
		if !f.set || containsKind(f.kinds, n.Kind) {
			continue
		}
		v.add(CodeIgnoredField, v.at(path+"."+f.key, path), n.ID, "%s has no effect on %s node %s (it belongs to %s nodes); remove it or change the kind", f.key, n.Kind, name, kindList(f.kinds))
	}
	if n.Kind == KindAgent && len(n.Script) > 0 && n.Backend != "" && !catalogue.ReadsScript(n.Backend) {
		v.add(CodeIgnoredField, v.at(path+".script", path), n.ID, "script has no effect on node %s: only the %s backend reads it, and this node runs on %s; remove it or switch the backend", name, strings.Join(scriptReaders(), ", "), n.Backend)
	}
}

func containsKind(ks []Kind, k Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

func kindList(ks []Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, "/")
}

func (v *validator) checkStart() {
	switch {
	case v.g.Start == "":
		v.add(CodeMissingStart, v.src.At(""), "", "the graph has no start; add start: with the id of the first node to visit")
	default:
		if _, ok := v.index[v.g.Start]; !ok {
			v.add(CodeUnknownStart, v.at("start", ""), "", "start names node %q, which does not exist; %suse the id of one of the nodes", v.g.Start, didYouMean(v.g.Start, v.ids))
		}
	}
}

func (v *validator) checkEdges() {
	unconditional := map[string]int{} // from id -> index of its first edge without when
	for i, e := range v.g.Edges {
		path := edgePath(i)
		label := fmt.Sprintf("edge %s -> %s", orQ(e.From), orQ(e.To))
		fromIdx, fromOK := v.index[e.From]
		switch {
		case e.From == "":
			v.add(CodeUnknownEdgeFrom, v.at(path+".from", path), "", "%s has no from; set from to the id of the node it leaves", label)
		case !fromOK:
			v.add(CodeUnknownEdgeFrom, v.at(path+".from", path), e.From, "%s leaves node %q, which does not exist; %suse the id of one of the nodes", label, e.From, didYouMean(e.From, v.ids))
		}
		switch _, ok := v.index[e.To]; {
		case e.To == "":
			v.add(CodeUnknownEdgeTo, v.at(path+".to", path), "", "%s has no to; set to to the id of the node it enters", label)
		case !ok:
			v.add(CodeUnknownEdgeTo, v.at(path+".to", path), e.To, "%s enters node %q, which does not exist; %suse the id of one of the nodes", label, e.To, didYouMean(e.To, v.ids))
		}
		if fromOK && v.g.Nodes[fromIdx].Kind == KindEnd {
			v.add(CodeEndHasEdges, v.at(path, path), e.From, "%s leaves end node %s, and a run stops at an end node; remove the edge, or change %s's kind", label, e.From, e.From)
		}

		if e.When != "" {
			if _, err := CompileWhen(e.When); err != nil {
				v.add(CodeBadWhen, v.at(path+".when", path), e.From, "the when of %s does not compile: %s; write a boolean over output, input and visits, e.g. output.approved == true", label, exprMessage(err))
			}
		}
		for _, k := range sortedKeys(e.With) {
			src, ok := e.With[k].(string)
			if !ok {
				continue
			}
			if _, err := CompileValue(src); err != nil {
				v.add(CodeBadWith, v.at(path+".with."+k, path), e.From, "with %s of %s does not compile: %s; write an expression over output, input and visits, or a string literal in quotes such as \"'text'\"", k, label, exprMessage(err))
			}
		}

		if !fromOK || v.g.Nodes[fromIdx].Fanout == FanoutAll {
			continue
		}
		if first, ok := unconditional[e.From]; ok {
			prev := v.g.Edges[first]
			v.add(CodeShadowedEdge, v.at(path, path), e.From, "%s is never taken: the earlier edge %s -> %s (edge #%d) has no when, so it always matches first; move this edge above it, or give that edge a when", label, prev.From, orQ(prev.To), first+1)
		} else if e.When == "" {
			unconditional[e.From] = i
		}
	}
}

// exprMessage turns an expr-lang compile error into one line.
func exprMessage(err error) string {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return err.Error()
	}
	msg := fe.Message
	for _, b := range DisabledBuiltins {
		if msg == "unknown name "+b {
			return fmt.Sprintf("%s() is not available in graph expressions, because its result is not the same on every replay of a run", b)
		}
	}
	if fe.Column < 0 {
		return msg
	}
	return fmt.Sprintf("%s (at column %d of the expression)", msg, fe.Column+1)
}

// templateMessage drops text/template's "template: prompt:" prefix.
func templateMessage(err error) string {
	return strings.TrimPrefix(err.Error(), "template: prompt:")
}

func didYouMean(s string, candidates []string) string {
	if c := closest(s, candidates); c != "" {
		return fmt.Sprintf("did you mean %q? ", c)
	}
	return ""
}

func durationString(d Duration) string {
	b, _ := d.MarshalText()
	return string(b)
}

// validID reports whether id can name a node: it becomes part of blob keys
// (runstore.SessionKey) and question ids, so it is kept to a safe alphabet.
func validID(id string) bool {
	if len(id) > 128 {
		return false
	}
	for _, c := range id {
		if !(c == '_' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

func suggestID(id string) string {
	b := []rune(id)
	for i, c := range b {
		if !(c == '_' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	if len(b) > 128 {
		b = b[:128]
	}
	return string(b)
}

// persistBackends lists the backends this build runs that have persist.
func persistBackends() []string {
	var out []string
	for _, b := range catalogue.Implemented() {
		if catalogue.HasPersist(b) {
			out = append(out, b)
		}
	}
	return out
}

// scriptReaders names the backends that read a node's script.
func scriptReaders() []string {
	var out []string
	for _, b := range catalogue.All() {
		if b.Script {
			out = append(out, b.Name)
		}
	}
	return out
}
