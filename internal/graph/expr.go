package graph

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// Env is what an edge's when and with expressions see: the output of the
// visit that just finished on the edge's from node, the input that visit
// ran with, and how many visits that node has completed (1 after its first).
// Expressions run inside workflow code, so evaluating one is pure and
// deterministic: same Env, same result, on any machine.
type Env struct {
	Output map[string]any `expr:"output"`
	Input  map[string]any `expr:"input"`
	Visits int            `expr:"visits"`
}

// DisabledBuiltins are the expr-lang builtins that graph expressions may not
// use, because their result depends on the clock, the machine's time zone
// database, or Go's random map order. Calling one is a compile error
// ("unknown name"). Sort a list with sort() or sortBy() instead of relying
// on keys() or values().
var DisabledBuiltins = []string{"now", "date", "duration", "timezone", "keys", "values", "toPairs"}

// BranchEnv is what a join's pick and by expressions see about one branch.
type BranchEnv struct {
	Branch  string                    `expr:"branch"`  // the branch's name (the node its fan-out edge led to)
	Outputs map[string]map[string]any `expr:"outputs"` // the output of each node the branch visited, by node id (latest visit)
	Last    map[string]any            `expr:"last"`    // the output of the branch's last node before the join
	Diff    DiffStat                  `expr:"diff"`    // the branch's change against the trunk at the fan-out
}

// DiffStat counts a branch's change against the trunk at the fan-out.
type DiffStat struct {
	Files   int `expr:"files"   json:"files"`
	Added   int `expr:"added"   json:"added"`
	Removed int `expr:"removed" json:"removed"`
	Lines   int `expr:"lines"   json:"lines"` // Added + Removed
}

func exprOptions() []expr.Option { return exprOptionsFor(Env{}) }

func exprOptionsFor(env any) []expr.Option {
	opts := []expr.Option{expr.Env(env)}
	for _, name := range DisabledBuiltins {
		opts = append(opts, expr.DisableBuiltin(name))
	}
	return opts
}

// Program is a compiled when or with expression, or a join's pick or by.
type Program struct {
	src  string
	prog *vm.Program // nil for an empty when, which always matches
	// what is "pick" or "by" for a program over a BranchEnv, "" for one
	// over an Env.
	what string
}

// CompileWhen compiles an edge's when: a boolean expression over output,
// input and visits. The empty string compiles to a program that is always
// true.
//
// Deterministic, though workflowcheck cannot prove it: expr-lang's compiler
// iterates maps without the order reaching the program, its VM reads the
// clock only for profiling (never enabled here), and keys are sorted here.
//
//workflowcheck:ignore
func CompileWhen(src string) (*Program, error) {
	p := &Program{src: src}
	if src == "" {
		return p, nil
	}
	prog, err := expr.Compile(src, exprOptions()...)
	if err != nil {
		return nil, fmt.Errorf("graph: when %q: %w", src, err)
	}
	// A when whose type is known must be a boolean; one that reads a value
	// out of output or input is checked when it runs (EvalBool).
	if t := prog.Node().Type(); t != nil && t.Kind() != reflect.Bool && t.Kind() != reflect.Interface {
		return nil, fmt.Errorf("graph: when %q: %w", src, &file.Error{Message: fmt.Sprintf("a when must be a boolean, and this gives a %s", t), Column: -1})
	}
	p.prog = prog
	return p, nil
}

// CompileValue compiles one expression of an edge's with: any expression
// over output, input and visits.
//
// Deterministic, though workflowcheck cannot prove it: expr-lang's compiler
// iterates maps without the order reaching the program, its VM reads the
// clock only for profiling (never enabled here), and keys are sorted here.
//
//workflowcheck:ignore
func CompileValue(src string) (*Program, error) {
	prog, err := expr.Compile(src, exprOptions()...)
	if err != nil {
		return nil, fmt.Errorf("graph: with expression %q: %w", src, err)
	}
	return &Program{src: src, prog: prog}, nil
}

// Source returns the expression as written.
func (p *Program) Source() string { return p.src }

// Eval runs the program against env. A when program returns a bool.
//
// Deterministic, though workflowcheck cannot prove it: expr-lang's compiler
// iterates maps without the order reaching the program, its VM reads the
// clock only for profiling (never enabled here), and keys are sorted here.
//
//workflowcheck:ignore
func (p *Program) Eval(env Env) (any, error) {
	if p.what != "" {
		return nil, fmt.Errorf("graph: %s %q reads a branch, not an edge's output; evaluate it with EvalPick or EvalBy", p.what, p.src)
	}
	if p.prog == nil {
		return true, nil
	}
	v, err := expr.Run(p.prog, env)
	if err != nil {
		return nil, fmt.Errorf("graph: evaluate %q: %w", p.src, err)
	}
	return v, nil
}

// EvalBool runs a when program.
//
// Deterministic, though workflowcheck cannot prove it: expr-lang's compiler
// iterates maps without the order reaching the program, its VM reads the
// clock only for profiling (never enabled here), and keys are sorted here.
//
//workflowcheck:ignore
func (p *Program) EvalBool(env Env) (bool, error) {
	v, err := p.Eval(env)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	switch {
	case ok:
		return b, nil
	case v == nil:
		return false, fmt.Errorf("graph: when %q gave nil, not a boolean: a key it reads is not there; give a default, e.g. (%s) ?? false, or compare it, e.g. %s == true", p.src, p.src, p.src)
	}
	return false, fmt.Errorf("graph: when %q gave %v (%T), not a boolean; compare it, e.g. %s == true", p.src, v, v, p.src)
}

// EvalWhen compiles and runs an edge's when against env. An empty when is
// true.
//
// Deterministic, though workflowcheck cannot prove it: expr-lang's compiler
// iterates maps without the order reaching the program, its VM reads the
// clock only for profiling (never enabled here), and keys are sorted here.
//
//workflowcheck:ignore
func EvalWhen(src string, env Env) (bool, error) {
	p, err := CompileWhen(src)
	if err != nil {
		return false, err
	}
	return p.EvalBool(env)
}

// EvalWith computes the input an edge hands to its to node. A string value
// is an expression evaluated against env; any other value (number, bool,
// list, mapping) is copied as it is. A literal string is written as an expr
// string literal inside the YAML string: feedback: "'tighten the intro'".
// Keys are evaluated in sorted order and the first failure names its key.
//
// Deterministic, though workflowcheck cannot prove it: expr-lang's compiler
// iterates maps without the order reaching the program, its VM reads the
// clock only for profiling (never enabled here), and keys are sorted here.
//
//workflowcheck:ignore
func EvalWith(with map[string]any, env Env) (map[string]any, error) {
	if len(with) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(with))
	for _, k := range slices.Sorted(maps.Keys(with)) {
		src, ok := with[k].(string)
		if !ok {
			out[k] = copyLiteral(with[k])
			continue
		}
		p, err := CompileValue(src)
		if err != nil {
			return nil, fmt.Errorf("graph: with %s: %w", k, err)
		}
		v, err := p.Eval(env)
		if err != nil {
			return nil, fmt.Errorf("graph: with %s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// copyLiteral copies lists and mappings, so that a run never shares (and
// never mutates) the graph's own values.
//
// Deterministic, though workflowcheck cannot prove it: expr-lang's compiler
// iterates maps without the order reaching the program, its VM reads the
// clock only for profiling (never enabled here), and keys are sorted here.
//
//workflowcheck:ignore
func copyLiteral(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyLiteral(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out[k] = copyLiteral(x[k])
		}
		return out
	}
	return v
}

// CompilePick compiles a join's pick: a boolean expression over one
// branch (BranchEnv: branch, outputs, diff).
//
// Deterministic, though workflowcheck cannot prove it: expr-lang's compiler
// iterates maps without the order reaching the program, its VM reads the
// clock only for profiling (never enabled here), and keys are sorted here.
//
//workflowcheck:ignore
func CompilePick(src string) (*Program, error) {
	return compileBranch("pick", src, func(k reflect.Kind) bool { return k == reflect.Bool }, "a boolean")
}

// CompileBy compiles a join's by: a number expression over one branch
// (BranchEnv: branch, outputs, diff).
//
// Deterministic, though workflowcheck cannot prove it: expr-lang's compiler
// iterates maps without the order reaching the program, its VM reads the
// clock only for profiling (never enabled here), and keys are sorted here.
//
//workflowcheck:ignore
func CompileBy(src string) (*Program, error) {
	return compileBranch("by", src, isNumberKind, "a number")
}

// compileBranch compiles a pick or a by. An expression whose type is known
// must be of the right type; one that reads a value out of outputs is
// checked when it runs.
//
//workflowcheck:ignore
func compileBranch(what, src string, ok func(reflect.Kind) bool, want string) (*Program, error) {
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("graph: %s: %w", what, &file.Error{Message: fmt.Sprintf("the %s expression is empty", what), Column: -1})
	}
	prog, err := expr.Compile(src, exprOptionsFor(BranchEnv{})...)
	if err != nil {
		return nil, fmt.Errorf("graph: %s %q: %w", what, src, err)
	}
	if t := prog.Node().Type(); t != nil && !ok(t.Kind()) && t.Kind() != reflect.Interface {
		return nil, fmt.Errorf("graph: %s %q: %w", what, src, &file.Error{Message: fmt.Sprintf("a %s must be %s, and this gives a %s", what, want, t), Column: -1})
	}
	return &Program{src: src, prog: prog, what: what}, nil
}

func isNumberKind(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// evalBranch runs a pick or by program against one branch.
//
//workflowcheck:ignore
func (p *Program) evalBranch(what string, env BranchEnv) (any, error) {
	if p.what != what {
		return nil, fmt.Errorf("graph: %q was not compiled as a %s (CompilePick, CompileBy)", p.src, what)
	}
	v, err := expr.Run(p.prog, env)
	if err != nil {
		return nil, fmt.Errorf("graph: evaluate %s %q for branch %s: %w", what, p.src, env.Branch, err)
	}
	return v, nil
}

// EvalPick runs a program from CompilePick against one branch.
//
// Deterministic, though workflowcheck cannot prove it: expr-lang's compiler
// iterates maps without the order reaching the program, its VM reads the
// clock only for profiling (never enabled here), and keys are sorted here.
//
//workflowcheck:ignore
func (p *Program) EvalPick(env BranchEnv) (bool, error) {
	v, err := p.evalBranch("pick", env)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("graph: pick %q gave %v (%T) for branch %s, not a boolean; compare it, e.g. %s == true", p.src, v, v, env.Branch, p.src)
	}
	return b, nil
}

// EvalBy runs a program from CompileBy against one branch. Any integer or
// float result is returned as a float64; anything else (nil for a missing
// output, a string, a bool) is an error.
//
// Deterministic, though workflowcheck cannot prove it: expr-lang's compiler
// iterates maps without the order reaching the program, its VM reads the
// clock only for profiling (never enabled here), and keys are sorted here.
//
//workflowcheck:ignore
func (p *Program) EvalBy(env BranchEnv) (float64, error) {
	v, err := p.evalBranch("by", env)
	if err != nil {
		return 0, err
	}
	if v == nil {
		return 0, fmt.Errorf("graph: by %q gave nil for branch %s (a key the branch's outputs do not have), not a number; give a default, e.g. (%s) ?? 0", p.src, env.Branch, p.src)
	}
	rv := reflect.ValueOf(v)
	switch {
	case rv.CanInt():
		return float64(rv.Int()), nil
	case rv.CanUint():
		return float64(rv.Uint()), nil
	case rv.CanFloat():
		return rv.Float(), nil
	}
	return 0, fmt.Errorf("graph: by %q gave %v (%T) for branch %s, not a number; write an expression that gives an integer or a float, e.g. diff.lines", p.src, v, v, env.Branch)
}

// EvalPick compiles and runs a join's pick against one branch: whether the
// branch may be kept. A key the branch's outputs do not have reads as nil,
// so outputs.tests.exit_code == 0 is false for a branch that never visited
// tests; write (outputs.tests.exit_code ?? 1) == 0 to say so outright.
//
// Deterministic, though workflowcheck cannot prove it: expr-lang's compiler
// iterates maps without the order reaching the program, its VM reads the
// clock only for profiling (never enabled here), and keys are sorted here.
//
//workflowcheck:ignore
func EvalPick(src string, env BranchEnv) (bool, error) {
	p, err := CompilePick(src)
	if err != nil {
		return false, err
	}
	return p.EvalPick(env)
}

// EvalBy compiles and runs a join's by against one branch: the value by
// which the branches whose pick is true are ranked (smallest kept).
//
// Deterministic, though workflowcheck cannot prove it: expr-lang's compiler
// iterates maps without the order reaching the program, its VM reads the
// clock only for profiling (never enabled here), and keys are sorted here.
//
//workflowcheck:ignore
func EvalBy(src string, env BranchEnv) (float64, error) {
	p, err := CompileBy(src)
	if err != nil {
		return 0, err
	}
	return p.EvalBy(env)
}

// outputsRead lists the node ids a pick or by reads as outputs.ID or
// outputs["ID"], in the order written, each once.
func (p *Program) outputsRead() []string {
	if p == nil || p.prog == nil {
		return nil
	}
	v := &outputsVisitor{}
	root := p.prog.Node()
	ast.Walk(&root, v)
	return v.ids
}

type outputsVisitor struct{ ids []string }

func (v *outputsVisitor) Visit(n *ast.Node) {
	m, ok := (*n).(*ast.MemberNode)
	if !ok {
		return
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok || id.Value != "outputs" {
		return
	}
	if s, ok := m.Property.(*ast.StringNode); ok && !slices.Contains(v.ids, s.Value) {
		v.ids = append(v.ids, s.Value)
	}
}
