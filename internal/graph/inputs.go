package graph

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Input types. A run's inputs are strings unless the graph says otherwise:
// `--input version=1.10` is the text 1.10, never the number 1.1.
const (
	InputString  = "string"
	InputNumber  = "number"
	InputBoolean = "boolean"
	// InputJSON takes VALUE as a JSON value: an object, a list, a number.
	InputJSON = "json"
)

// InputTypes lists the types an input may declare.
var InputTypes = []string{InputString, InputNumber, InputBoolean, InputJSON}

// ErrInputs reports inputs a run cannot start with.
var ErrInputs = errors.New("graph: inputs")

// ParseValue turns what a person typed for the input into its value.
func (in Input) ParseValue(raw string) (any, error) {
	switch in.Type {
	case "", InputString:
		return raw, nil
	case InputNumber:
		f, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil {
			return nil, fmt.Errorf("input %s is a number, and %q is not one", in.Name, raw)
		}
		return f, nil
	case InputBoolean:
		b, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Errorf("input %s is a boolean (true or false), and %q is not one", in.Name, raw)
		}
		return b, nil
	case InputJSON:
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			return nil, fmt.Errorf("input %s is JSON, and %q is not: %v", in.Name, raw, err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("input %s has type %q, which is not one of %s", in.Name, in.Type, strings.Join(InputTypes, ", "))
}

// fits reports whether v is a value of the input's type.
func (in Input) fits(v any) bool {
	switch in.Type {
	case "", InputString:
		_, ok := v.(string)
		return ok
	case InputNumber:
		switch v.(type) {
		case int, int64, uint64, float64:
			return true
		}
		return false
	case InputBoolean:
		_, ok := v.(bool)
		return ok
	}
	return true
}

// RunInputs checks what a person gave a run before it starts, NAME=VALUE
// each: every value is read by its input's type (a string unless the
// graph declares one); a name the graph does not declare is refused,
// naming those it does (a graph that declares no inputs takes any name,
// and notes says so); a required input not given is refused. It returns
// the inputs to start the run with, without the defaults (the run applies
// those).
func (g *Graph) RunInputs(given []string) (map[string]any, []string, error) {
	out := map[string]any{}
	var notes, problems []string
	for _, kv := range given {
		name, raw, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			problems = append(problems, fmt.Sprintf("%q is not NAME=VALUE", kv))
			continue
		}
		i := slices.IndexFunc(g.Inputs, func(in Input) bool { return in.Name == name })
		if i < 0 {
			if len(g.Inputs) == 0 {
				notes = append(notes, fmt.Sprintf("graph %s declares no inputs, so input %s is not checked; declare it under inputs: to have it checked", g.Name, name))
				out[name] = raw
				continue
			}
			problems = append(problems, fmt.Sprintf("graph %s has no input %s; %sits inputs are %s", g.Name, name, didYouMean(name, inputNames(g.Inputs)), strings.Join(inputNames(g.Inputs), ", ")))
			continue
		}
		v, err := g.Inputs[i].ParseValue(raw)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		out[name] = v
	}
	var missing []string
	for _, in := range g.Inputs {
		if _, ok := out[in.Name]; !ok && in.Required && in.Default == nil {
			missing = append(missing, in.Name)
		}
	}
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("graph %s needs input(s) %s; pass them with --input NAME=VALUE", g.Name, strings.Join(missing, ", ")))
	}
	if len(problems) > 0 {
		return nil, notes, fmt.Errorf("%w: %s", ErrInputs, strings.Join(problems, "; "))
	}
	return out, notes, nil
}

// checkInputTypes checks each input's declared type and its default.
func (v *validator) checkInputTypes() {
	for i, in := range v.g.Inputs {
		path := fmt.Sprintf("inputs[%d]", i)
		if in.Type != "" && !slices.Contains(InputTypes, in.Type) {
			v.add(CodeBadInputType, v.at(path+".type", path), "", "input %s has type %q; %suse one of %s", in.Name, in.Type, didYouMean(in.Type, InputTypes), strings.Join(InputTypes, ", "))
			continue
		}
		if in.Default != nil && !in.fits(in.Default) {
			typ := in.Type
			if typ == "" {
				typ = InputString
			}
			v.add(CodeBadInputType, v.at(path+".default", path), "", "the default of input %s is %v, which is not a %s; quote it (default: \"%v\") or declare the input's type (type: number, boolean or json)", in.Name, in.Default, typ, in.Default)
		}
	}
}
