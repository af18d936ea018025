package graph

import (
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/expr-lang/expr"
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

func exprOptions() []expr.Option {
	opts := []expr.Option{expr.Env(Env{})}
	for _, name := range DisabledBuiltins {
		opts = append(opts, expr.DisableBuiltin(name))
	}
	return opts
}

// Program is a compiled when or with expression.
type Program struct {
	src  string
	prog *vm.Program // nil for an empty when, which always matches
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
	if !ok {
		return false, fmt.Errorf("graph: when %q gave %v (%T), not a boolean; compare it, e.g. %s == true", p.src, v, v, p.src)
	}
	return b, nil
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
