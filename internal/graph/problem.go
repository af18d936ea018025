package graph

import (
	"fmt"
	"sort"
	"strings"
)

// Severity says whether a problem stops a graph from running.
type Severity int

// Severities. An error makes the graph unusable; a warning is something
// that runs but is probably not what the author meant.
const (
	SeverityError Severity = iota
	SeverityWarning
)

func (s Severity) String() string {
	switch s {
	case SeverityError:
		return "error"
	case SeverityWarning:
		return "warning"
	default:
		return fmt.Sprintf("Severity(%d)", int(s))
	}
}

// MarshalText writes the lowercase name, so problems read well as JSON.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Problem codes. A code never changes meaning once published; a retired
// check leaves a gap. docs/graph.md has the table of what each one means and
// how to fix it.
const (
	CodeSyntax       = "G001" // the file is not valid YAML
	CodeUnknownField = "G002" // a key the DSL does not define
	CodeBadValue     = "G003" // a value of the wrong type or form
	CodeDuplicateKey = "G004" // the same key twice in one mapping
	CodeNotAGraph    = "G005" // empty file, several documents, or not a mapping

	CodeMissingStart      = "G010"
	CodeUnknownStart      = "G011"
	CodeMissingID         = "G012"
	CodeDuplicateID       = "G013"
	CodeUnknownKind       = "G014"
	CodeUnknownEdgeFrom   = "G015"
	CodeUnknownEdgeTo     = "G016"
	CodeUnreachable       = "G017"
	CodeNoPathToEnd       = "G018"
	CodeNoEnd             = "G019"
	CodeBadWhen           = "G020"
	CodeBadWith           = "G021"
	CodeBadPrompt         = "G022"
	CodeMissingBackend    = "G023"
	CodeUnknownBackend    = "G024"
	CodeUnknownFallback   = "G025"
	CodeMissingRun        = "G026"
	CodeMissingQuestion   = "G027"
	CodeNegativeMaxVisits = "G028"
	CodeNegativeTimeout   = "G029"
	CodeBadFanout         = "G030"
	CodePersistInBranch   = "G031"
	// CodePersistNoCapability: session: persist on a backend that cannot
	// carry a conversation (grok); resolution strips the inbound session
	// keys and every visit runs fresh (ADR-089, C009).
	CodePersistNoCapability = "G032"
	CodeJoinWithoutFanout   = "G033"
	CodeBranchNoJoin        = "G034"
	CodeEndHasEdges         = "G035"
	CodeIgnoredField        = "G036"
	CodeShadowedEdge        = "G037"
	CodeMissingInputName    = "G038"
	CodeDuplicateInput      = "G039"
	CodeJoinsDiffer         = "G040"
	CodeBadID               = "G041"
	CodeBadPermissions      = "G042"
	CodeBadEnvName          = "G043"
	CodeUnsupported         = "G044"
	CodeBadWorkspace        = "G045"
	CodeNotImplemented      = "G046"
	CodeBadBudget           = "G047"
	CodeCostNotReported     = "G048"
	// Join workspaces (docs/graph.md, "Fan-out and join").
	CodeBadJoinWorkspace  = "G049" // a join's workspace is not trunk, merge or {pick, by}
	CodeMissingPick       = "G050" // the pick form without a pick expression
	CodeBadPick           = "G051" // a pick or by that does not compile
	CodeUnknownPickOutput = "G052" // a pick or by reads outputs.X for no node X
	CodeTooManyBranches   = "G053" // a fan-out with more edges than MaxBranches
	// Confinement (docs/graph.md, "Network and limits").
	CodeBadNetwork = "G054" // network is not model, none or {allow: [...]}, or not for this kind of node
	CodeBadAllow   = "G055" // an allow entry that is not a host:port pattern
	CodeBadLimits  = "G056" // a limit that is not a size, a count or a number of cores
	// Types and inputs (docs/graph.md, "Inputs").
	CodeTypeMismatch      = "G057" // a when or with does not fit the known types of a tool's or human's output
	CodeInputNotDelivered = "G058" // a template reads an input that some way into its node does not deliver
	CodeBadInputType      = "G059" // an input's type is unknown, or its default is not of that type
	// Notices (docs/graph.md, "Notifications").
	CodeBadNotifyEvent = "G060" // a notify route names an event that does not exist
	CodeBadNotifyTo    = "G061" // a notify route's to names something that cannot be an endpoint
	CodeBadOptions     = "G062" // a human node's options: empty, repeated, too many or too long
	// Pull requests (docs/graph.md, "Publish and review").
	CodeBadPublish      = "G063" // a publish without pull_request, or a pull request without a title
	CodeReviewNoPublish = "G064" // a review node in a graph without publish.pull_request
	CodeReviewInBranch  = "G065" // a review node inside a fan-out branch
	// Paths (docs/security.md, "Paths").
	CodeProgramClimbs = "G066" // a tool's program (run[0]) named through ".."
	CodeBadWorkdir    = "G067" // a workdir through "..", or a relative one that leaves the workspace

	CodeUncheckedWhen = "G068" // a when that is a value an agent writes, not a comparison
	CodeScriptedWhen  = "G069" // a when that fails on what a scripted agent's script says
)

// CodeInfo describes one problem code.
type CodeInfo struct {
	Code     string
	Severity Severity
	Summary  string
}

var codeTable = []CodeInfo{
	{CodeSyntax, SeverityError, "the file is not valid YAML"},
	{CodeUnknownField, SeverityError, "a key the graph DSL does not define"},
	{CodeBadValue, SeverityError, "a value of the wrong type or form"},
	{CodeDuplicateKey, SeverityError, "the same key twice in one mapping"},
	{CodeNotAGraph, SeverityError, "the file is empty, holds several documents, or is not a mapping"},
	{CodeMissingStart, SeverityError, "the graph has no start"},
	{CodeUnknownStart, SeverityError, "start names a node that does not exist"},
	{CodeMissingID, SeverityError, "a node has no id"},
	{CodeDuplicateID, SeverityError, "two nodes share an id"},
	{CodeUnknownKind, SeverityError, "a node's kind is missing or unknown"},
	{CodeUnknownEdgeFrom, SeverityError, "an edge leaves a node that does not exist"},
	{CodeUnknownEdgeTo, SeverityError, "an edge enters a node that does not exist"},
	{CodeUnreachable, SeverityError, "no path leads from start to the node"},
	{CodeNoPathToEnd, SeverityError, "no path leads from the node to an end node"},
	{CodeNoEnd, SeverityError, "the graph has no end node"},
	{CodeBadWhen, SeverityError, "an edge's when is not a valid boolean expression"},
	{CodeBadWith, SeverityError, "an expression in an edge's with is not valid"},
	{CodeBadPrompt, SeverityError, "a prompt, question or run argument is not a valid template"},
	{CodeMissingBackend, SeverityError, "an agent node has no backend"},
	{CodeUnknownBackend, SeverityError, "an agent node names an unknown backend"},
	{CodeUnknownFallback, SeverityError, "a fallback names an unknown backend"},
	{CodeMissingRun, SeverityError, "a tool node has no run argv"},
	{CodeMissingQuestion, SeverityError, "a human node has no question"},
	{CodeNegativeMaxVisits, SeverityError, "max_visits is negative"},
	{CodeNegativeTimeout, SeverityError, "timeout is negative"},
	{CodeBadFanout, SeverityError, "fanout has a value other than all"},
	{CodePersistInBranch, SeverityError, "a session: persist node sits inside a fan-out branch"},
	{CodePersistNoCapability, SeverityWarning, "session: persist on a backend that cannot carry a conversation"},
	{CodeJoinWithoutFanout, SeverityError, "a join node can be reached without an open fan-out"},
	{CodeBranchNoJoin, SeverityError, "a fan-out branch reaches an end node without meeting at a join"},
	{CodeEndHasEdges, SeverityError, "an end node has outgoing edges"},
	{CodeIgnoredField, SeverityWarning, "a field that has no effect on this kind of node"},
	{CodeShadowedEdge, SeverityWarning, "an edge that can never be taken"},
	{CodeMissingInputName, SeverityError, "a declared input has no name"},
	{CodeDuplicateInput, SeverityError, "two declared inputs share a name"},
	{CodeJoinsDiffer, SeverityError, "the branches of one fan-out meet at different joins"},
	{CodeBadID, SeverityError, "a node id with characters other than letters, digits, '_' and '-'"},
	{CodeBadPermissions, SeverityError, "permissions has a value other than read-only, edit and full"},
	{CodeBadEnvName, SeverityError, "an env entry that is not an environment variable name"},
	{CodeUnsupported, SeverityError, "an agent setting the node's backend (or a fallback) cannot honour"},
	{CodeBadWorkspace, SeverityError, "workspace has no from"},
	{CodeNotImplemented, SeverityError, "a backend this build cannot run (kimi, grok)"},
	{CodeBadBudget, SeverityError, "a budget with a negative bound, or with none"},
	{CodeCostNotReported, SeverityWarning, "a cost budget over a backend that reports no cost"},
	{CodeBadJoinWorkspace, SeverityError, "a join's workspace is not trunk, merge or a mapping with pick"},
	{CodeMissingPick, SeverityError, "a join's workspace mapping has no pick expression"},
	{CodeBadPick, SeverityError, "a join's pick or by expression does not compile or has the wrong type"},
	{CodeUnknownPickOutput, SeverityWarning, "a join's pick or by reads the output of a node that does not exist"},
	{CodeTooManyBranches, SeverityError, "a fan-out could open more branches than one fan-out may have"},
	{CodeBadNetwork, SeverityError, "a network other than model, none or {allow: [...]}, or one its kind of node cannot use"},
	{CodeBadAllow, SeverityError, "a network allow entry that is not a host:port pattern"},
	{CodeBadLimits, SeverityError, "a limit that is not a size, a count or a number of cores, or is too small to run anything"},

	{CodeTypeMismatch, SeverityError, "a when or with does not fit the types of a tool's or human's output (a number compared with a string, a field it does not have)"},
	{CodeInputNotDelivered, SeverityWarning, "a template reads an input that some way into its node does not deliver"},
	{CodeBadInputType, SeverityError, "an input's type is unknown, or its default is not of that type"},
	{CodeBadNotifyEvent, SeverityError, "a notify route names an unknown event"},
	{CodeBadNotifyTo, SeverityError, "a notify route's to is not an endpoint name"},
	{CodeBadOptions, SeverityError, "a human node's options are empty, repeated, too many or too long"},
	{CodeBadPublish, SeverityError, "a publish without pull_request, or a pull request without a title"},
	{CodeReviewNoPublish, SeverityError, "a review node in a graph that publishes no pull request"},
	{CodeReviewInBranch, SeverityError, "a review node inside a fan-out branch"},
	{CodeProgramClimbs, SeverityError, "a tool's program (the first run argument) is named through \"..\""},
	{CodeBadWorkdir, SeverityError, "a workdir holds \"..\""},
	{CodeUncheckedWhen, SeverityWarning, "a when that is a value an agent writes, not a comparison: the run fails if it is not a boolean"},
	{CodeScriptedWhen, SeverityError, "a when that fails on what a scripted agent's script says it writes"},
}

// Codes lists every problem code, in code order.
func Codes() []CodeInfo { return append([]CodeInfo(nil), codeTable...) }

func severityOf(code string) Severity {
	for _, c := range codeTable {
		if c.Code == code {
			return c.Severity
		}
	}
	return SeverityError
}

// Problem is one thing wrong with a graph.
type Problem struct {
	Code     string   `json:"code"`
	Severity Severity `json:"severity"`
	// File and Pos say where; both may be empty for a graph built in code.
	File string `json:"file,omitempty"`
	Pos  Pos    `json:"pos"`
	// Node is the id of the node the problem is about, if any.
	Node string `json:"node,omitempty"`
	// Message says what is wrong and how to fix it.
	Message string `json:"message"`
}

// String formats the problem as file:line:col: CODE severity: message.
func (p Problem) String() string {
	var b strings.Builder
	file := p.File
	if file == "" {
		file = "graph"
	}
	b.WriteString(file)
	if !p.Pos.IsZero() {
		fmt.Fprintf(&b, ":%d:%d", p.Pos.Line, p.Pos.Column)
	}
	fmt.Fprintf(&b, ": %s %s: %s", p.Code, p.Severity, p.Message)
	return b.String()
}

// Format is String with file in place of the problem's own file name (when
// file is not empty).
func (p Problem) Format(file string) string {
	if file != "" {
		p.File = file
	}
	return p.String()
}

// Problems is every problem found in one graph, in file order.
type Problems []Problem

// HasErrors reports whether any problem is an error rather than a warning.
func (ps Problems) HasErrors() bool {
	for _, p := range ps {
		if p.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Errors returns the problems of error severity.
func (ps Problems) Errors() Problems { return ps.filter(SeverityError) }

// Warnings returns the problems of warning severity.
func (ps Problems) Warnings() Problems { return ps.filter(SeverityWarning) }

func (ps Problems) filter(s Severity) Problems {
	var out Problems
	for _, p := range ps {
		if p.Severity == s {
			out = append(out, p)
		}
	}
	return out
}

// String formats one problem per line.
func (ps Problems) String() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Format writes one problem per line, each ending in a newline, naming
// file in place of the file each problem carries (when file is not empty).
func (ps Problems) Format(file string) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Format(file))
		b.WriteByte('\n')
	}
	return b.String()
}

// Err returns nil when there is no error-severity problem, and otherwise a
// *ValidationError carrying every problem (warnings included).
func (ps Problems) Err() error {
	if !ps.HasErrors() {
		return nil
	}
	return &ValidationError{Problems: ps}
}

// sortByPos orders problems by where they are, keeping detection order for
// problems at the same place (and for graphs without positions).
func (ps Problems) sortByPos() {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i].Pos, ps[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
}

// ValidationError is a graph that has error-severity problems.
type ValidationError struct {
	Problems Problems
}

func (e *ValidationError) Error() string {
	n := len(e.Problems.Errors())
	return fmt.Sprintf("graph: %d problem(s):\n%s", n, e.Problems.String())
}

// ParseError is a graph file that could not be read into a Graph: bad YAML,
// unknown fields, values of the wrong type. It lists every such problem
// found, each with its position; a YAML syntax error stops reading, so it
// comes alone.
type ParseError struct {
	File     string
	Problems Problems
}

func (e *ParseError) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].String()
	}
	return fmt.Sprintf("graph: %d problems reading %s:\n%s", len(e.Problems), e.fileName(), e.Problems.String())
}

func (e *ParseError) fileName() string {
	if e.File == "" {
		return "graph"
	}
	return e.File
}
