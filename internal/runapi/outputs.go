package runapi

import (
	"errors"
	"fmt"
	"iter"

	"github.com/tether-run/tether/internal/graph"
)

// A node's output is a map[string]any: an edge's expression reads it as
// output.exit_code, output.workspace.kept, and the checkpoint stores it
// as JSON. The outputs whose shape Tether itself writes (a tool's, a
// join's) are built as the types below and turned into that map by
// their Map method, and read back by ToolOutputOf and JoinOutputOf,
// never by string keys elsewhere. A map read back is untrusted (a
// checkpoint from the bucket, an output an older build wrote): a
// reader returns what it could read, zero values for the rest, and an
// error, never a panic.

// The keys of a join's output: each branch's last output, by that node
// ("branches"), and, for a fan-out whose branches had workspaces, the
// JoinOutput ("workspace").
const (
	JoinBranchesKey = "branches"
	JoinOutputKey   = "workspace"
)

// ErrMalformedOutput is the cause of every *OutputError.
var ErrMalformedOutput = errors.New("runapi: malformed output")

// ErrNotToolOutput says a map is not a tool's output: it has no
// exit_code.
var ErrNotToolOutput = errors.New("runapi: not a tool's output (it has no exit_code)")

// OutputError says which field of an output read back is not what
// Tether writes there. The checkpoint holding it was written by
// something else than a Tether worker, or changed since; the field
// reads as its zero value.
type OutputError struct {
	// Output is the kind of output ("tool", "join"), Field the path of
	// the field in it (branches[1].kept), Want what it should be, Got
	// the JSON kind of what it is.
	Output, Field, Want, Got string
}

func (e *OutputError) Error() string {
	return fmt.Sprintf("runapi: the %s output's %s is %s, not %s (the checkpoint was not written by a Tether worker, or was changed since)", e.Output, e.Field, e.Got, e.Want)
}

func (e *OutputError) Unwrap() error { return ErrMalformedOutput }

// ToolOutput is the output of a tool node's visit: graph.ToolOutput,
// whose fields an edge out of a tool node is type-checked against, with
// the map it is kept as.
type ToolOutput graph.ToolOutput

// Map is t as its node's output: exit_code, timed_out, stdout, stderr,
// duration_ms (graph.ToolOutput's expr names).
func (t ToolOutput) Map() map[string]any {
	return map[string]any{
		"exit_code":   t.ExitCode,
		"stdout":      t.Stdout,
		"stderr":      t.Stderr,
		"timed_out":   t.TimedOut,
		"duration_ms": t.DurationMS,
	}
}

// ToolOutputOf reads a tool's output back from m: ErrNotToolOutput for
// a map without exit_code (an agent's output, or none), an *OutputError
// for the first field of the wrong type (it and the others read as
// their zero values).
func ToolOutputOf(m map[string]any) (ToolOutput, error) {
	var t ToolOutput
	if _, ok := m["exit_code"]; !ok {
		return t, ErrNotToolOutput
	}
	r := reader{output: "tool"}
	t.ExitCode = r.int(m, "", "exit_code")
	t.TimedOut = r.bool(m, "", "timed_out")
	t.Stdout = r.string(m, "", "stdout")
	t.Stderr = r.string(m, "", "stderr")
	t.DurationMS = r.int(m, "", "duration_ms")
	return t, r.err
}

// JoinOutput is what a join of branches with workspaces did with them,
// kept under its output's "workspace" (JoinOutputKey).
type JoinOutput struct {
	// Mode is the join's graph.JoinTrunk, JoinPick or JoinMerge; Kept
	// the branch a pick kept ("" for none and for the other modes).
	Mode string
	Kept string
	// Branches are every branch, in branch order.
	Branches []JoinBranch
	// Conflicts are a merge's conflicts.
	Conflicts []JoinConflict
	// Explained says the join recorded its pick and by expressions
	// (Pick, By) and each branch's values of them; a join recorded
	// before joins did has neither.
	Explained bool
	Pick      string
	By        string
}

// JoinBranch is one branch of a join: its workspace's head, its change
// against the fan-out, whether the join kept its files, and, for an
// explained join, what its pick and by gave (nil: not evaluated) and
// the error one of them gave.
type JoinBranch struct {
	Name      string
	Head      string
	Kept      bool
	Change    graph.DiffStat
	PickValue *bool
	ByValue   *float64
	Why       string
}

// JoinConflict is a path a merge found changed by more than one branch.
type JoinConflict struct {
	Path     string
	Branches []string
	Ours     string
	Theirs   string
}

// Map is j as its join's output keeps it under JoinOutputKey: mode,
// kept, branches (name, head, kept, files, added, removed, lines, and
// pick_value, by_value and why when explained), conflicts (path,
// branches, ours, theirs), and pick and by when explained.
func (j JoinOutput) Map() map[string]any {
	var list []any
	for _, b := range j.Branches {
		entry := map[string]any{
			"name": b.Name, "head": b.Head, "kept": b.Kept,
			"files": b.Change.Files, "added": b.Change.Added, "removed": b.Change.Removed, "lines": b.Change.Lines,
		}
		if j.Explained {
			entry["pick_value"], entry["by_value"], entry["why"] = nil, nil, b.Why
			if b.PickValue != nil {
				entry["pick_value"] = *b.PickValue
			}
			if b.ByValue != nil {
				entry["by_value"] = *b.ByValue
			}
		}
		list = append(list, entry)
	}
	conflicts := []any{}
	for _, c := range j.Conflicts {
		branches := make([]any, len(c.Branches))
		for i, s := range c.Branches {
			branches[i] = s
		}
		conflicts = append(conflicts, map[string]any{"path": c.Path, "branches": branches, "ours": c.Ours, "theirs": c.Theirs})
	}
	out := map[string]any{"mode": j.Mode, "kept": j.Kept, "branches": list, "conflicts": conflicts}
	if j.Explained {
		out["pick"], out["by"] = j.Pick, j.By
	}
	return out
}

// JoinOutputOf reads a join's output back from m, the map Map made (nil:
// none recorded, the zero JoinOutput). The branches' pick_value,
// by_value and why are read only from an explained join's (one with a
// pick), which is the only one that has them. An entry of the wrong
// type reads as its zero value (a branch or conflict that is not an
// object, as none) and the first such gives an *OutputError.
func JoinOutputOf(m map[string]any) (JoinOutput, error) {
	var j JoinOutput
	r := reader{output: "join"}
	j.Mode = r.string(m, "", "mode")
	j.Kept = r.string(m, "", "kept")
	if _, j.Explained = m["pick"]; j.Explained {
		j.Pick = r.string(m, "", "pick")
		j.By = r.string(m, "", "by")
	}
	for at, b := range r.objects(m, "branches") {
		jb := JoinBranch{
			Name: r.string(b, at, "name"),
			Head: r.string(b, at, "head"),
			Kept: r.bool(b, at, "kept"),
			Change: graph.DiffStat{
				Files:   r.int(b, at, "files"),
				Added:   r.int(b, at, "added"),
				Removed: r.int(b, at, "removed"),
				Lines:   r.int(b, at, "lines"),
			},
		}
		if !j.Explained {
			j.Branches = append(j.Branches, jb)
			continue
		}
		jb.Why = r.string(b, at, "why")
		if v, ok := b["pick_value"]; ok && v != nil {
			if p, ok := v.(bool); ok {
				jb.PickValue = &p
			} else {
				r.fail(at+"pick_value", "a boolean", v)
			}
		}
		if v, ok := b["by_value"]; ok && v != nil {
			if f, ok := float(v); ok {
				jb.ByValue = &f
			} else {
				r.fail(at+"by_value", "a number", v)
			}
		}
		j.Branches = append(j.Branches, jb)
	}
	for at, c := range r.objects(m, "conflicts") {
		jc := JoinConflict{Path: r.string(c, at, "path"), Ours: r.string(c, at, "ours"), Theirs: r.string(c, at, "theirs")}
		for k, s := range r.list(c, at, "branches") {
			if name, ok := s.(string); ok {
				jc.Branches = append(jc.Branches, name)
			} else {
				r.fail(fmt.Sprintf("%sbranches[%d]", at, k), "a string", s)
			}
		}
		j.Conflicts = append(j.Conflicts, jc)
	}
	return j, r.err
}

// reader reads an output's fields, each missing one as its zero value,
// and keeps the first field of the wrong type as err.
type reader struct {
	output string
	err    error
}

func (r *reader) fail(field, want string, got any) {
	if r.err == nil {
		r.err = &OutputError{Output: r.output, Field: field, Want: want, Got: kindOf(got)}
	}
}

// field reads m[key] as a T: absent or null is T's zero value, a value of
// another type is r's error (want names T's kind) and T's zero value.
func field[T any](r *reader, m map[string]any, at, key, want string) T {
	v, ok := m[key]
	if !ok || v == nil {
		var zero T
		return zero
	}
	t, ok := v.(T)
	if !ok {
		r.fail(at+key, want, v)
	}
	return t
}

func (r *reader) string(m map[string]any, at, key string) string {
	return field[string](r, m, at, key, "a string")
}

func (r *reader) bool(m map[string]any, at, key string) bool {
	return field[bool](r, m, at, key, "a boolean")
}

func (r *reader) list(m map[string]any, at, key string) []any {
	return field[[]any](r, m, at, key, "a list")
}

// objects yields each object of m's list key, with "key[i]." (the path
// its fields are read at); an entry that is not an object is r's error,
// and skipped.
func (r *reader) objects(m map[string]any, key string) iter.Seq2[string, map[string]any] {
	return func(yield func(string, map[string]any) bool) {
		for i, e := range r.list(m, "", key) {
			at := fmt.Sprintf("%s[%d].", key, i)
			o, ok := e.(map[string]any)
			if !ok {
				r.fail(at[:len(at)-1], "an object", e)
				continue
			}
			if !yield(at, o) {
				return
			}
		}
	}
}

// int reads a number as the workflow has always read one (Number).
func (r *reader) int(m map[string]any, at, key string) int {
	v, ok := m[key]
	if !ok || v == nil {
		return 0
	}
	n, ok := Number(v)
	if !ok {
		r.fail(at+key, "a number", v)
	}
	return n
}

// Number is v, a number in an output, as an int: an int or int64 as
// written, a float64 (JSON's number; what an activity's result decodes
// as) cut to an int. ok is false, and n 0, for anything else.
func Number(v any) (n int, ok bool) {
	return numberAs[int](v)
}

// float is v as a float64, for a number written by the workflow (a
// float64) or read back from JSON.
func float(v any) (float64, bool) {
	return numberAs[float64](v)
}

// numberAs is v, an int, int64 or float64, converted to T; ok is false,
// and the number 0, for anything else.
func numberAs[T int | float64](v any) (T, bool) {
	switch n := v.(type) {
	case int:
		return T(n), true
	case int64:
		return T(n), true
	case float64:
		return T(n), true
	}
	return 0, false
}

// kindOf names v's JSON kind, for an error: never its value, which may
// be anything the checkpoint held.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}
