package sessionlog

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxSafeInt is the largest integer a JSON number decoded into a float64
// (how every reader of the log sees numbers) keeps exactly.
const maxSafeInt = 1 << 53

// maxDepth bounds nesting so a deep value is refused rather than overflowing
// the stack of a reader.
const maxDepth = 1000

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	numberType        = reflect.TypeFor[json.Number]()
)

// CheckSerializable reports, wrapping ErrNotSerializable, why v would not
// come back from a JSON round trip unchanged, or nil when it would.
func CheckSerializable(v any) error {
	w := walker{onPath: map[visit]bool{}}
	return w.walk(reflect.ValueOf(v), "$", 0)
}

func checkEvent(i int, e *Event) error {
	if err := CheckSerializable(e); err != nil {
		return fmt.Errorf("event %d (%s): %w", i, e.Kind, err)
	}
	return nil
}

// visit identifies a reference on the current path, so a value reachable
// twice (a DAG) is fine while one that contains itself is a cycle.
type visit struct {
	ptr uintptr
	len int
	typ reflect.Type
}

type walker struct{ onPath map[visit]bool }

func refuse(path, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrNotSerializable, path, fmt.Sprintf(format, args...))
}

func (w *walker) walk(v reflect.Value, path string, depth int) error {
	if !v.IsValid() {
		return nil
	}
	if depth > maxDepth {
		return refuse(path, "nested deeper than %d levels", maxDepth)
	}
	t := v.Type()
	if t == numberType {
		f, err := strconv.ParseFloat(v.String(), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return refuse(path, "json.Number %q is not a finite number", v.String())
		}
		return nil
	}
	if done, err := w.marshaler(v, path); done {
		return err
	}
	switch v.Kind() {
	case reflect.Interface:
		return w.walk(v.Elem(), path, depth+1)
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return w.enter(visit{ptr: v.Pointer(), typ: t}, path, func() error {
			return w.walk(v.Elem(), path, depth+1)
		})
	case reflect.Bool:
		return nil
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return refuse(path, "string is not valid UTF-8")
		}
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n := v.Int(); n > maxSafeInt || n < -maxSafeInt {
			return refuse(path, "integer %d is beyond ±2^53 and would lose precision", n)
		}
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if n := v.Uint(); n > maxSafeInt {
			return refuse(path, "integer %d is beyond 2^53 and would lose precision", n)
		}
		return nil
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return refuse(path, "%v has no JSON form", f)
		}
		return nil
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		if t.Elem().Kind() == reflect.Uint8 {
			return refuse(path, "%s would be stored as base64 text; store a string", t)
		}
		return w.enter(visit{ptr: v.Pointer(), len: v.Len(), typ: t}, path, func() error {
			return w.elems(v, path, depth)
		})
	case reflect.Array:
		return w.elems(v, path, depth)
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		if t.Key().Kind() != reflect.String {
			return refuse(path, "map key type %s is not a string", t.Key())
		}
		return w.enter(visit{ptr: v.Pointer(), typ: t}, path, func() error {
			keys := v.MapKeys()
			sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
			for _, k := range keys {
				if !utf8.ValidString(k.String()) {
					return refuse(path, "map key %q is not valid UTF-8", k.String())
				}
				if err := w.walk(v.MapIndex(k), path+"."+k.String(), depth+1); err != nil {
					return err
				}
			}
			return nil
		})
	case reflect.Struct:
		return w.fields(v, path, depth)
	default: // Complex64, Complex128, Chan, Func, UnsafePointer
		return refuse(path, "%s has no JSON form", t)
	}
}

// marshaler handles a value that chooses its own encoding. Its output must be
// valid UTF-8 and decode again.
func (w *walker) marshaler(v reflect.Value, path string) (bool, error) {
	if !v.CanInterface() {
		return false, nil
	}
	t := v.Type()
	if v.Kind() == reflect.Pointer && v.IsNil() && (t.Implements(marshalerType) || t.Implements(textMarshalerType)) {
		return true, nil // encoded as null
	}
	var m any
	switch {
	case t.Implements(marshalerType) || t.Implements(textMarshalerType):
		m = v.Interface()
	case v.CanAddr() && (reflect.PointerTo(t).Implements(marshalerType) || reflect.PointerTo(t).Implements(textMarshalerType)):
		m = v.Addr().Interface()
	default:
		return false, nil
	}
	if jm, ok := m.(json.Marshaler); ok {
		b, err := jm.MarshalJSON()
		if err != nil {
			return true, refuse(path, "MarshalJSON: %v", err)
		}
		if !utf8.Valid(b) {
			return true, refuse(path, "MarshalJSON output is not valid UTF-8")
		}
		var back any
		if err := json.Unmarshal(b, &back); err != nil {
			return true, refuse(path, "MarshalJSON output does not decode: %v", err)
		}
		return true, nil
	}
	b, err := m.(encoding.TextMarshaler).MarshalText()
	if err != nil {
		return true, refuse(path, "MarshalText: %v", err)
	}
	if !utf8.Valid(b) {
		return true, refuse(path, "MarshalText output is not valid UTF-8")
	}
	return true, nil
}

func (w *walker) enter(k visit, path string, f func() error) error {
	if w.onPath[k] {
		return refuse(path, "value contains itself (a cycle)")
	}
	w.onPath[k] = true
	defer delete(w.onPath, k)
	return f()
}

func (w *walker) elems(v reflect.Value, path string, depth int) error {
	for i := 0; i < v.Len(); i++ {
		if err := w.walk(v.Index(i), path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
			return err
		}
	}
	return nil
}

// fields walks what encoding/json would encode: exported fields and the
// fields promoted from embedded structs, minus those tagged "-".
func (w *walker) fields(v reflect.Value, path string, depth int) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		if err := w.walk(v.Field(i), path+"."+name, depth+1); err != nil {
			return err
		}
	}
	return nil
}
