package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// modeOrForm is the codec of a field that a graph file writes either as
// a plain string (a mode: a join's "trunk", a network's "none") or as one
// mapping form F ({pick: ..., by: ...}, {allow: [...]}), in YAML and in
// JSON alike (how a graph travels in Temporal histories and
// checkpoints). A mapping holds F's fields and no other.
type modeOrForm[F any] struct {
	// what names the field in errors ("join workspace", "network");
	// forms says how it is written.
	what, forms string
}

// decodeJSON reads b: a JSON string is a mode; anything else must be the
// form.
func (c modeOrForm[F]) decodeJSON(b []byte) (mode string, form *F, err error) {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		err = json.Unmarshal(b, &mode)
		return mode, nil, err
	}
	form = new(F)
	if err := strictJSON(b, form); err != nil {
		return "", nil, fmt.Errorf("graph: %s %s: want %s: %w", c.what, b, c.forms, err)
	}
	return "", form, nil
}

// decodeYAML reads the same forms for the YAML library's own decoder
// (Parse reads them itself, with positions).
func (c modeOrForm[F]) decodeYAML(unmarshal func(any) error) (mode string, form *F, err error) {
	if err := unmarshal(&mode); err == nil {
		return mode, nil, nil
	}
	var m map[string]any
	if err := unmarshal(&m); err != nil {
		return "", nil, fmt.Errorf("graph: %s: want %s", c.what, c.forms)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", nil, err
	}
	form = new(F)
	if err := strictJSON(b, form); err != nil {
		return "", nil, fmt.Errorf("graph: %s: want %s: %w", c.what, c.forms, err)
	}
	return "", form, nil
}

// strictJSON decodes b into v, refusing a field v does not have.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
