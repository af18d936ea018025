package blob

import (
	"fmt"
	"strings"
)

// Key limits: S3 caps keys at 1024 bytes and most filesystems cap a name at
// 255 bytes.
const (
	MaxKeyLen     = 1024
	MaxSegmentLen = 255
)

// ValidateKey reports whether key is a valid blob key: non-empty
// '/'-separated segments of [A-Za-z0-9._=+@,-] that do not start with '.'
// (which also rules out "." and ".."), with the limits above. Names starting
// with '.' are reserved for a backend's own temporary files. It does not
// check the no-nesting rule, which depends on what else is stored.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: key is %d bytes, the limit is %d", ErrInvalidKey, len(key), MaxKeyLen)
	}
	for _, seg := range strings.Split(key, "/") {
		if err := validSegment(seg); err != nil {
			return fmt.Errorf("%w: %q: %s", ErrInvalidKey, key, err)
		}
	}
	return nil
}

// validatePrefix checks a List prefix: every complete
// segment must be a valid key segment; the trailing partial segment may be
// empty.
func validatePrefix(prefix string) error {
	if len(prefix) > MaxKeyLen {
		return fmt.Errorf("%w: prefix is %d bytes, the limit is %d", ErrInvalidKey, len(prefix), MaxKeyLen)
	}
	segs := strings.Split(prefix, "/")
	for i, seg := range segs {
		last := i == len(segs)-1
		if last && seg == "" {
			if len(segs) == 1 {
				return nil // "" lists everything
			}
			continue
		}
		if err := validSegment(seg); err != nil {
			return fmt.Errorf("%w: prefix %q: %s", ErrInvalidKey, prefix, err)
		}
	}
	return nil
}

type segErr string

func (e segErr) Error() string { return string(e) }

func validSegment(seg string) error {
	switch {
	case seg == "":
		return segErr("empty segment (leading, trailing or double '/')")
	case len(seg) > MaxSegmentLen:
		return segErr(fmt.Sprintf("segment of %d bytes, the limit is %d", len(seg), MaxSegmentLen))
	case seg[0] == '.':
		return segErr(fmt.Sprintf("segment %q starts with '.'", seg))
	}
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == '-', c == '=', c == '+', c == '@', c == ',':
		default:
			return segErr(fmt.Sprintf("byte %q not allowed", c))
		}
	}
	return nil
}
