package sessionlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// The one encoding every backend stores: a header or an event as one line
// of compact JSON without a trailing newline. HTML characters are not
// escaped, so logs stay readable.

// EncodeEvent returns the stored form of e.
func EncodeEvent(e Event) ([]byte, error) { return encode(e) }

// EncodeHeader returns the stored form of h.
func EncodeHeader(h Header) ([]byte, error) { return encode(h) }

func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// DecodeEvent parses a stored event. Raw invalid UTF-8 is refused rather
// than silently replaced, since the encoder never writes it.
func DecodeEvent(b []byte) (Event, error) {
	var e Event
	err := decode(b, &e)
	return e, err
}

// DecodeHeader parses a stored header.
func DecodeHeader(b []byte) (Header, error) {
	var h Header
	err := decode(b, &h)
	return h, err
}

func decode(b []byte, v any) error {
	if !utf8.Valid(b) {
		return errors.New("record is not valid UTF-8")
	}
	if len(bytes.TrimSpace(b)) == 0 || b[0] != '{' {
		return errors.New("record is not a JSON object")
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("record does not decode: %v", err)
	}
	return nil
}
