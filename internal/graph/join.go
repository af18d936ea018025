package graph

import (
	"encoding/json"
	"strings"
)

// Join workspace modes: what a join node makes of its branches' files.
const (
	// JoinTrunk keeps the trunk's files, as they were at the fan-out; every
	// branch's changes are dropped (they stay in the run's history). The
	// default.
	JoinTrunk = "trunk"
	// JoinPick keeps the files of one branch: the first, in branch order,
	// whose Pick expression is true, or, with By, the one of those with the
	// smallest By value.
	JoinPick = "pick"
	// JoinMerge merges every branch into the trunk, in branch order.
	JoinMerge = "merge"
)

// JoinModes lists every join workspace mode, in documentation order.
func JoinModes() []string { return []string{JoinTrunk, JoinPick, JoinMerge} }

// JoinWorkspace is a join node's workspace: field. In a graph file it is
// the string trunk or merge, or a mapping {pick: EXPR, by: EXPR} (by
// optional). JSON (how a graph travels in Temporal histories and
// checkpoints) uses the same forms: "trunk", "merge", or
// {"pick": "...", "by": "..."} with by left out when empty.
type JoinWorkspace struct {
	// Mode is JoinTrunk, JoinPick or JoinMerge.
	Mode string `json:"-" yaml:"-"`
	// Pick, in pick mode, is a boolean expression over one branch
	// (BranchEnv): the branches for which it is true may be kept.
	Pick string `json:"pick,omitempty" yaml:"pick"`
	// By, in pick mode and optional, is a number expression over one
	// branch: of the branches whose Pick is true, the one with the
	// smallest value is kept (ties: branch order). Without By, the first
	// such branch in branch order is kept.
	By string `json:"by,omitempty" yaml:"by,omitempty"`
}

// ModeOrTrunk is w's mode, JoinTrunk for a nil w or one without a mode.
func (w *JoinWorkspace) ModeOrTrunk() string {
	if w == nil || w.Mode == "" {
		return JoinTrunk
	}
	return w.Mode
}

// joinPickForm is the mapping form of a pick workspace, in DSL order.
type joinPickForm struct {
	Pick string `json:"pick" yaml:"pick"`
	By   string `json:"by,omitempty" yaml:"by,omitempty"`
}

// dslValue is what w is written as: its mode as a plain string, or the
// pick mapping.
func (w JoinWorkspace) dslValue() any {
	if w.Mode == JoinPick {
		return joinPickForm{Pick: w.Pick, By: w.By}
	}
	return w.Mode
}

// MarshalJSON writes "trunk", "merge" (any mode other than pick as its
// string), or {"pick": "...", "by": "..."}.
func (w JoinWorkspace) MarshalJSON() ([]byte, error) {
	return json.Marshal(w.dslValue())
}

// UnmarshalJSON reads what MarshalJSON writes. A JSON object is the pick
// form, and may hold only pick and by.
func (w *JoinWorkspace) UnmarshalJSON(b []byte) error { return joinCodec.readJSON(w, b) }

// MarshalYAML writes the same forms as MarshalJSON, for the YAML library's
// own encoder (Encode writes them itself).
func (w JoinWorkspace) MarshalYAML() (any, error) { return w.dslValue(), nil }

// UnmarshalYAML reads the forms MarshalYAML writes, for the YAML library's
// own decoder (Parse reads them itself, with positions).
func (w *JoinWorkspace) UnmarshalYAML(unmarshal func(any) error) error {
	return joinCodec.readYAML(w, unmarshal)
}

// joinCodec reads a join's workspace.
var joinCodec = modeOrForm[joinPickForm, JoinWorkspace]{
	what: "join workspace", forms: joinForms,
	mode: func(m string) JoinWorkspace { return JoinWorkspace{Mode: m} },
	form: func(f joinPickForm) JoinWorkspace { return JoinWorkspace{Mode: JoinPick, Pick: f.Pick, By: f.By} },
}

// joinForms says how a join's workspace is written, for messages.
var joinForms = strings.Join([]string{JoinTrunk, JoinMerge, "a mapping {pick: EXPR, by: EXPR} (by optional)"}, ", ")
