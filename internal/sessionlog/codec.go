package sessionlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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

// DecodeHeader parses a stored header. Its errors are typed: a header of
// another format version is ErrVersion, checked before anything else in it
// is read, since a log of another version may be laid out differently
// throughout; a header that does not decode is ErrCorrupt.
func DecodeHeader(b []byte) (Header, error) {
	var probe struct {
		FormatVersion json.RawMessage `json:"format_version"`
	}
	if err := decode(b, &probe); err != nil {
		return Header{}, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	if v := string(probe.FormatVersion); v != strconv.Itoa(FormatVersion) {
		if v == "" {
			v = "none (written before format versions)"
		}
		return Header{}, fmt.Errorf("%w: the log is format %s, this build reads only format %d; open it with the build that wrote it, or move it aside",
			ErrVersion, v, FormatVersion)
	}
	var h Header
	if err := decode(b, &h); err != nil {
		return Header{}, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	return h, nil
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
