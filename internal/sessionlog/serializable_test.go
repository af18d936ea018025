package sessionlog

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

type badJSON struct{}

func (badJSON) MarshalJSON() ([]byte, error) { return []byte(`{"a":`), nil }

type badUTF8JSON struct{}

func (badUTF8JSON) MarshalJSON() ([]byte, error) { return []byte("\"\xff\""), nil }

type failingJSON struct{}

func (failingJSON) MarshalJSON() ([]byte, error) { return nil, errors.New("boom") }

type text string

func (t text) MarshalText() ([]byte, error) { return []byte(t), nil }

type tagged struct {
	Hidden func() `json:"-"`
	hidden func() // unexported: skipped, as encoding/json skips it
	Shown  int    `json:"shown,omitempty"`
	Embedded
}

type Embedded struct{ Inner float64 }

func TestCheckSerializable(t *testing.T) {
	good := map[string]any{
		"nil":           nil,
		"time":          time.Unix(0, 0).UTC(),
		"raw":           json.RawMessage(`{"a":[1,2]}`),
		"number":        json.Number("1.5e3"),
		"text":          text("ok"),
		"struct":        tagged{Hidden: func() {}, hidden: func() {}, Shown: 1},
		"nil ptr":       (*badJSON)(nil),
		"array of byte": [3]byte{1, 2, 3},
		"max safe":      uint64(1 << 53),
	}
	for name, v := range good {
		assert.NoError(t, CheckSerializable(v), name)
	}
	bad := map[string]any{
		"invalid json":     badJSON{},
		"invalid utf8":     badUTF8JSON{},
		"failing json":     failingJSON{},
		"bad text":         text("\xff"),
		"number NaN":       json.Number("NaN"),
		"number overflow":  json.Number("1e400"),
		"raw overflow":     json.RawMessage(`1e400`),
		"embedded NaN":     tagged{Embedded: Embedded{Inner: math.NaN()}},
		"too deep":         deep(maxDepth + 5),
		"ptr to chan":      new(chan int),
		"uintptr beyond":   uintptr(1<<53 + 1),
		"int8 fine, c128":  []any{int8(1), complex128(1)},
		"map of []byte":    map[string][]byte{"a": nil, "b": {1}},
		"interface to bad": []any{any(math.Inf(1))},
	}
	for name, v := range bad {
		err := CheckSerializable(v)
		assert.ErrorIs(t, err, ErrNotSerializable, name)
	}
	err := CheckSerializable(map[string]any{"a": []any{1, map[string]any{"b": math.NaN()}}})
	assert.ErrorContains(t, err, "$.a[1].b")
}

func deep(n int) any {
	var v any = 1
	for range n {
		v = []any{v}
	}
	return v
}
