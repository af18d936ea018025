package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// modeOrForm is the codec of a field T that a graph file writes either
// as a plain string (a mode: a join's "trunk", a network's "none") or as
// one mapping form F ({pick: ..., by: ...}, {allow: [...]}), in YAML and
// in JSON alike (how a graph travels in Temporal histories and
// checkpoints). A mapping holds F's fields and no other.
type modeOrForm[F, T any] struct {
	// what names the field in errors ("join workspace", "network");
	// forms says how it is written.
	what, forms string
	// mode and form make the field of a mode and of a mapping.
	mode func(string) T
	form func(F) T
}

// readJSON sets *dst from b: a JSON string is a mode; anything else must
// be the form.
func (c modeOrForm[F, T]) readJSON(dst *T, b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var mode string
		if err := json.Unmarshal(b, &mode); err != nil {
			return err
		}
		*dst = c.mode(mode)
		return nil
	}
	var f F
	if err := strictJSON(b, &f); err != nil {
		return fmt.Errorf("graph: %s %s: want %s: %w", c.what, b, c.forms, err)
	}
	*dst = c.form(f)
	return nil
}

// readYAML sets *dst from the same forms, for the YAML library's own
// decoder (Parse reads them itself, with positions).
func (c modeOrForm[F, T]) readYAML(dst *T, unmarshal func(any) error) error {
	var mode string
	if err := unmarshal(&mode); err == nil {
		*dst = c.mode(mode)
		return nil
	}
	var m map[string]any
	if err := unmarshal(&m); err != nil {
		return fmt.Errorf("graph: %s: want %s", c.what, c.forms)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	var f F
	if err := strictJSON(b, &f); err != nil {
		return fmt.Errorf("graph: %s: want %s: %w", c.what, c.forms, err)
	}
	*dst = c.form(f)
	return nil
}

// strictJSON decodes b into v, refusing a field v does not have.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
