package graph

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
)

// Encode writes g as a graph file. Fields appear in the order the DSL
// documents them, unset optional fields are left out, multi-line strings
// (prompts) are written as literal blocks, and mapping keys are sorted, so
// the same graph always encodes to the same bytes. Parse(Encode(g)) gives
// back g, positions aside.
//
// Encode writes the YAML itself rather than through the YAML library's
// encoder, which in the version Tether uses writes some strings (tabs,
// multi-line mapping keys, carriage returns) in forms its own parser reads
// back differently. Every scalar is written in the plainest form that this
// package's parser provably reads back as the same value.
func Encode(g *Graph) ([]byte, error) {
	e := &emitter{}
	if err := e.mapping(reflect.ValueOf(g).Elem(), 0, false); err != nil {
		return nil, fmt.Errorf("graph: encode %q: %w", g.Name, err)
	}
	return []byte(e.b.String()), nil
}

type emitter struct{ b strings.Builder }

type entry struct {
	key string
	val reflect.Value
}

// entries lists what a struct or map value writes: struct fields in
// declaration order (omitempty fields only when set), map keys sorted.
func entries(v reflect.Value) ([]entry, error) {
	var out []entry
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for _, f := range fieldsOf(t) {
			fv := v.Field(f.index)
			if strings.Contains(t.Field(f.index).Tag.Get("yaml"), ",omitempty") && isEmpty(fv) {
				continue
			}
			out = append(out, entry{f.name, fv})
		}
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return nil, fmt.Errorf("mapping with %s keys", v.Type().Key())
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for _, k := range keys {
			out = append(out, entry{k.String(), v.MapIndex(k)})
		}
	}
	return out, nil
}

func isEmpty(v reflect.Value) bool {
	if z, ok := v.Interface().(interface{ IsZero() bool }); ok {
		return z.IsZero()
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.String:
		return v.Len() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return v.IsZero()
}

// deref looks through interfaces and pointers.
func deref(v reflect.Value) reflect.Value {
	for (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) && !v.IsNil() {
		v = v.Elem()
	}
	return v
}

// kindOf says how v is written: as a mapping, a sequence, or a scalar.
func kindOf(v reflect.Value) reflect.Kind {
	v = deref(v)
	if _, ok := textOf(v); ok {
		return reflect.String
	}
	switch v.Kind() {
	case reflect.Struct, reflect.Map:
		return reflect.Map
	case reflect.Slice, reflect.Array:
		return reflect.Slice
	}
	return reflect.String
}

func textOf(v reflect.Value) (encoding.TextMarshaler, bool) {
	if !v.IsValid() || !v.CanInterface() {
		return nil, false
	}
	tm, ok := v.Interface().(encoding.TextMarshaler)
	return tm, ok
}

// mapping writes the entries of v at indent. With inline, the first entry
// goes on the current line (after "- ").
func (e *emitter) mapping(v reflect.Value, indent int, inline bool) error {
	es, err := entries(deref(v))
	if err != nil {
		return err
	}
	for i, en := range es {
		if i > 0 || !inline {
			e.b.WriteString(strings.Repeat(" ", indent))
		}
		e.b.WriteString(keyText(en.key))
		e.b.WriteString(":")
		if err := e.value(en.val, indent); err != nil {
			return fmt.Errorf("%s: %w", en.key, err)
		}
	}
	return nil
}

// value writes what follows "key:" or "-": a space and a scalar, or a
// nested block on the following lines.
func (e *emitter) value(v reflect.Value, indent int) error {
	v = deref(v)
	if w, ok := valueOf[JoinWorkspace](v); ok {
		v = reflect.ValueOf(w.dslValue()) // a string or the pick mapping
	}
	if n, ok := valueOf[Network](v); ok {
		v = reflect.ValueOf(n.dslValue()) // a string or the allow mapping
	}
	switch kindOf(v) {
	case reflect.Map:
		es, err := entries(v)
		if err != nil {
			return err
		}
		if len(es) == 0 {
			e.b.WriteString(" {}\n")
			return nil
		}
		e.b.WriteString("\n")
		return e.mapping(v, indent+2, false)
	case reflect.Slice:
		if v.Len() == 0 {
			e.b.WriteString(" []\n")
			return nil
		}
		e.b.WriteString("\n")
		return e.sequence(v, indent+2)
	}
	s, err := e.scalar(v, indent+2)
	if err != nil {
		return err
	}
	e.b.WriteString(" ")
	e.b.WriteString(s)
	e.b.WriteString("\n")
	return nil
}

func (e *emitter) sequence(v reflect.Value, indent int) error {
	for i := range v.Len() {
		item := deref(v.Index(i))
		e.b.WriteString(strings.Repeat(" ", indent))
		e.b.WriteString("-")
		switch kindOf(item) {
		case reflect.Map:
			if es, err := entries(item); err == nil && len(es) > 0 {
				e.b.WriteString(" ")
				if err := e.mapping(item, indent+2, true); err != nil {
					return err
				}
				continue
			}
		case reflect.Slice:
			if item.Len() > 0 {
				e.b.WriteString("\n")
				if err := e.sequence(item, indent+2); err != nil {
					return err
				}
				continue
			}
		}
		if err := e.value(item, indent); err != nil {
			return err
		}
	}
	return nil
}

// scalar formats a scalar value; indent is where a literal block's lines go.
func (e *emitter) scalar(v reflect.Value, indent int) (string, error) {
	if !v.IsValid() || ((v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) && v.IsNil()) {
		return "null", nil
	}
	if tm, ok := textOf(v); ok {
		b, err := tm.MarshalText()
		if err != nil {
			return "", err
		}
		return scalarText(string(b), indent)
	}
	switch v.Kind() {
	case reflect.String:
		return scalarText(v.String(), indent)
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		return formatFloat(v.Float()), nil
	}
	// Anything else is written as the JSON value it stands for.
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return "", err
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		return "", err
	}
	if _, isScalar := generic.(map[string]any); !isScalar {
		if _, isList := generic.([]any); !isList {
			return e.scalar(reflect.ValueOf(generic), indent)
		}
	}
	return "", fmt.Errorf("cannot write a %s as a scalar", v.Type())
}

func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return ".inf"
	case math.IsInf(f, -1):
		return "-.inf"
	case math.IsNaN(f):
		return ".nan"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0" // keep it a float when read back
	}
	return s
}

// scalarText writes a string plain when that reads back as the same
// string, as a literal block when it has several lines that a block keeps
// exactly, and double-quoted otherwise.
func scalarText(s string, indent int) (string, error) {
	if plainOK(s) && readsBack("k: "+s+"\n", s) {
		return s, nil
	}
	if lit, ok := literal(s, indent); ok {
		return lit, nil
	}
	if sq := "'" + strings.ReplaceAll(s, "'", "''") + "'"; printable(s) && readsBack("k: "+sq+"\n", s) {
		return sq, nil
	}
	return quoted(s), nil
}

// printable reports whether s is one line of printable text that a
// single-quoted scalar can hold as it is.
func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == 0xfeff || r == '\u2028' || r == '\u2029' || r == 0x85 {
			return false
		}
	}
	return strings.TrimSpace(s) == s
}

// keyText writes a mapping key: plain, or double-quoted.
func keyText(s string) string {
	if plainOK(s) {
		var m map[string]any
		if yaml.Unmarshal([]byte(s+": x\n"), &m) == nil && len(m) == 1 && m[s] == "x" {
			return s
		}
	}
	return quoted(s)
}

func plainOK(s string) bool {
	if s == "" || strings.TrimSpace(s) != s || strings.ContainsAny(s[:1], "-?:,[]{}#&*!|>'\"%@`") ||
		strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") || strings.ContainsAny(s, "\n\r\t") {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == 0xfeff {
			return false
		}
	}
	return true
}

func literal(s string, indent int) (string, bool) {
	if !strings.Contains(strings.TrimRight(s, "\n"), "\n") || strings.HasPrefix(s, " ") || strings.HasPrefix(s, "\n") {
		return "", false
	}
	body := strings.TrimRight(s, "\n")
	for _, line := range strings.Split(body, "\n") {
		if strings.TrimRight(line, " \t") != line {
			return "", false // trailing blanks would be kept, but are easy to lose
		}
		for _, r := range line {
			if (r < 0x20 && r != '\t') || r == 0x7f || r == 0xfeff || r == '\u2028' || r == '\u2029' || r == 0x85 {
				return "", false
			}
		}
	}
	// The header's chomping indicator says what follows the last line:
	// no newline (|-), one (|), or several, kept as empty lines (|+).
	header, content := "|-", body
	switch trailing := len(s) - len(body); {
	case trailing == 1:
		header = "|"
	case trailing > 1:
		header, content = "|+", s[:len(s)-1]
	}
	pad := strings.Repeat(" ", indent)
	var b strings.Builder
	b.WriteString(header)
	for _, line := range strings.Split(content, "\n") {
		b.WriteString("\n")
		if line != "" {
			b.WriteString(pad)
			b.WriteString(line)
		}
	}
	out := b.String()
	if !readsBack("k: "+strings.ReplaceAll(out, "\n"+pad, "\n  ")+"\n", s) {
		return "", false
	}
	return out, true
}

// quoted writes s double-quoted. Go's escapes are a subset of YAML's.
func quoted(s string) string { return strconv.Quote(s) }

// readsBack reports whether doc, a one-key mapping, holds s under k.
func readsBack(doc, s string) bool {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		return false
	}
	got, ok := m["k"].(string)
	return ok && got == s && len(m) == 1
}

// valueOf returns v's value as a T, when it holds one.
func valueOf[T any](v reflect.Value) (T, bool) {
	var zero T
	if !v.IsValid() || !v.CanInterface() {
		return zero, false
	}
	t, ok := v.Interface().(T)
	return t, ok
}
