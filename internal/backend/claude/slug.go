package claude

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// slugMax is where Claude Code cuts a long project slug.
const slugMax = 200

// projectSlug returns the name of the directory under
// CLAUDE_CONFIG_DIR/projects where Claude Code keeps the sessions of
// working directory dir, computed as Claude Code 2.1.332 computes it:
//
//	slug = dir.replace(/[^a-zA-Z0-9]/g, "-")
//	if slug.length > 200: slug = slug.slice(0, 200) + "-" + Math.abs(hash(dir)).toString(36)
//
// where hash is Java's String.hashCode over UTF-16 code units
// (h = h*31 + unit, in 32-bit two's complement). Lengths count UTF-16 code
// units, so a character outside the BMP becomes two dashes. dir must be the
// directory as the CLI sees it (see workdirOf).
func projectSlug(dir string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(dir); {
		r, size := utf8.DecodeRuneInString(dir[i:])
		i += size
		switch {
		case r < utf8.RuneSelf && isAlnum(byte(r)):
			b.WriteByte(byte(r))
			n++
		case r >= 0x10000 && r <= utf8.MaxRune && size == 4:
			b.WriteString("--")
			n += 2
		default:
			b.WriteByte('-')
			n++
		}
	}
	if n <= slugMax {
		return b.String()
	}
	// The slug is ASCII, so bytes are code units.
	return b.String()[:slugMax] + "-" + strconv.FormatInt(abs64(int64(javaHash(dir))), 36)
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// javaHash is JavaScript's `h = (h << 5) - h + s.charCodeAt(i) | 0` over
// the UTF-16 code units of s (invalid UTF-8 bytes count as U+FFFD, as
// Node decodes them).
func javaHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = h*31 + int32(hi)
			h = h*31 + int32(lo)
			continue
		}
		h = h*31 + int32(r)
	}
	return h
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
