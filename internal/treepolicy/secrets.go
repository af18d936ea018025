package treepolicy

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// RedactEnv names the worker's environment variable that sets the
// RedactMode of its session packers and workspace snapshots: "detect" (or
// empty) or "refuse". The worker's configuration reads it; messages name
// it so a user knows what to change.
const RedactEnv = "TETHER_REDACT"

// RedactMode says what a packer or a snapshot does with a file that holds
// something shaped like an API key or token.
type RedactMode int

const (
	// RedactDetect keeps going: a session is packed with a warning per
	// finding; a workspace file is left out of the snapshot, with a note.
	RedactDetect RedactMode = iota
	// RedactRefuse fails the pack or the snapshot, naming the file and
	// line, never the value.
	RedactRefuse
)

func (m RedactMode) String() string {
	if m == RedactRefuse {
		return "refuse"
	}
	return "detect"
}

// ParseRedactMode reads a TETHER_REDACT value; empty means detect. Any
// other value is ErrRedactMode.
func ParseRedactMode(s string) (RedactMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "detect":
		return RedactDetect, nil
	case "refuse":
		return RedactRefuse, nil
	}
	return 0, fmt.Errorf("%w: %s=%q; use detect or refuse", ErrRedactMode, RedactEnv, s)
}

// ErrRedactMode: TETHER_REDACT holds something other than detect or
// refuse.
var ErrRedactMode = errors.New("packer: unknown redact mode")

// Kinds of key the scanner knows. A finding names its kind, never its value.
const (
	KindAnthropic     = "Anthropic API key"
	KindOpenAIProject = "OpenAI project key"
	KindOpenAI        = "OpenAI-style API key (sk-)"
	KindAWSKeyID      = "AWS access key id"
	KindAWSSecret     = "AWS secret access key"
	KindGitHub        = "GitHub token"
	KindSlack         = "Slack token"
	KindGoogle        = "Google API key"
	KindStripe        = "Stripe secret key"
	KindPrivateKey    = "private key block"
)

// Finding is one secret-looking token: where, and what kind. It never
// holds the token.
type Finding struct {
	Line int
	Kind string
}

// A secretRule is found by one byte of its anchor that is rare in
// transcripts (bytes.IndexByte is vectorised, so each rule costs one fast
// pass), then confirmed by check around that byte. check looks at most
// scanBack bytes before the byte and scanReach bytes after it.
type secretRule struct {
	b     byte
	check func(b []byte, i int) string // the kind, or "" for no match
}

const (
	// scanChunk is how much the scanner takes in per pass.
	scanChunk = 256 << 10
	// scanReach bounds how far a check looks past its byte, scanBack how
	// far before it; the scanner keeps that much of the previous chunk so
	// that no token is cut.
	scanReach = 512
	scanBack  = 32
)

var secretRules = []secretRule{
	{'k', func(b []byte, i int) string { return checkSK(b, anchorAt(b, i, "sk-", 1)) }},
	{'I', func(b []byte, i int) string {
		return checkAWSKeyID(b, max(anchorAt(b, i, "AKIA", 2), anchorAt(b, i, "ASIA", 2)))
	}},
	{'K', func(b []byte, i int) string { return awsLabel(b, anchorAt(b, i, "ecretAccessKey", 11), 14) }},
	{'_', checkUnderscore},
	{'x', func(b []byte, i int) string { return checkSlack(b, anchorAt(b, i, "xox", 0)) }},
	{'z', func(b []byte, i int) string {
		return tokenAfter(b, anchorAt(b, i, "AIza", 2), 4, urlSet, 35, KindGoogle)
	}},
	{'V', func(b []byte, i int) string {
		if anchorAt(b, i, "PRIVATE KEY-----", 3) < 0 {
			return ""
		}
		return KindPrivateKey
	}},
}

// anchorAt returns where anchor starts if b[i] is its byte at offset off,
// or -1.
func anchorAt(b []byte, i int, anchor string, off int) int {
	s := i - off
	if s < 0 || s+len(anchor) > len(b) || string(b[s:s+len(anchor)]) != anchor {
		return -1
	}
	return s
}

// checkUnderscore confirms the anchors found by their '_': GitHub tokens,
// Stripe keys and AWS secret-access-key labels.
func checkUnderscore(b []byte, i int) string {
	for _, gh := range []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"} {
		if k := tokenAfter(b, anchorAt(b, i, gh, 3), 4, alnumSet, 30, KindGitHub); k != "" {
			return k
		}
	}
	if k := tokenAfter(b, anchorAt(b, i, "github_pat_", 6), 11, wordSet, 40, KindGitHub); k != "" {
		return k
	}
	for _, label := range []string{"_secret_access_key", "_SECRET_ACCESS_KEY"} {
		if k := awsLabel(b, anchorAt(b, i, label, 0), len(label)); k != "" {
			return k
		}
	}
	for _, sk := range []string{"sk_live_", "rk_live_"} {
		if k := tokenAfter(b, anchorAt(b, i, sk, 2), 8, alnumSet, 20, KindStripe); k != "" {
			return k
		}
	}
	return ""
}

// Byte classes of key alphabets.
type byteSet [256]bool

func newSet(s string) *byteSet {
	var b byteSet
	for i := range len(s) {
		b[s[i]] = true
	}
	return &b
}

var (
	alnumSet = newSet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
	wordSet  = newSet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
	urlSet   = newSet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
	b64Set   = newSet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
	awsIDSet = newSet("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
	// labelGap is what may stand between a label and its value:
	// quotes (escaped, in JSON), colons, equals signs, blanks.
	labelGap = newSet(" \t\"'\\:=")
)

// run returns the length of the run of bytes of set starting at i.
func run(b []byte, i int, set *byteSet) int {
	n := 0
	for i+n < len(b) && n < scanReach && set[b[i+n]] {
		n++
	}
	return n
}

// boundary reports whether b[i-1] does not continue a token of set.
func boundary(b []byte, i int, set *byteSet) bool {
	return i == 0 || !set[b[i-1]]
}

// mixed reports whether b has an upper-case letter, a lower-case letter
// and a digit, as random keys do and words, hex digests and UUIDs do not.
func mixed(b []byte) bool {
	var u, l, d bool
	for _, c := range b {
		switch {
		case 'A' <= c && c <= 'Z':
			u = true
		case 'a' <= c && c <= 'z':
			l = true
		case '0' <= c && c <= '9':
			d = true
		}
	}
	return u && l && d
}

// tokenAfter matches an anchor at s (-1: none) of n bytes followed by at
// least min bytes of set, at a token boundary.
func tokenAfter(b []byte, s, n int, set *byteSet, min int, kind string) string {
	if s < 0 || !boundary(b, s, set) || run(b, s+n, set) < min {
		return ""
	}
	return kind
}

// checkSK tells Anthropic (sk-ant-…) and OpenAI project (sk-proj-…) keys
// from other sk- keys (OpenAI's classic and service-account keys), which
// must look random to count.
func checkSK(b []byte, s int) string {
	if s < 0 || !boundary(b, s, urlSet) {
		return ""
	}
	n := run(b, s+3, urlSet)
	body := b[s+3 : s+3+n]
	switch {
	case bytes.HasPrefix(body, []byte("ant-")) && n >= 4+32:
		return KindAnthropic
	case bytes.HasPrefix(body, []byte("proj-")) && n >= 5+32:
		return KindOpenAIProject
	case n >= 32 && mixed(body):
		return KindOpenAI
	}
	return ""
}

// checkAWSKeyID matches AKIA/ASIA at s plus exactly 16 upper-case letters
// and digits. It also finds a secret access key written near the id: a
// token of exactly 40 base64 characters, random-looking, within 256 bytes.
func checkAWSKeyID(b []byte, s int) string {
	if s < 0 || !boundary(b, s, alnumSet) || run(b, s+4, alnumSet) != 16 || run(b, s+4, awsIDSet) != 16 {
		return ""
	}
	end := min(len(b), s+20+256)
	for i := s + 20; i < end; {
		n := run(b, i, b64Set)
		if n == 40 && boundary(b, i, b64Set) && mixed(b[i:i+n]) {
			return KindAWSSecret
		}
		i += max(n, 1)
	}
	return KindAWSKeyID
}

// awsLabel matches a secret-access-key label at s (-1: none) of n bytes,
// followed by a 40-byte base64 value.
func awsLabel(b []byte, s, n int) string {
	if s < 0 {
		return ""
	}
	i := s + n
	for gap := 0; i < len(b) && gap < 12 && labelGap[b[i]]; gap++ {
		i++
	}
	if run(b, i, b64Set) == 40 && (i+40 == len(b) || b[i+40] != '=') {
		return KindAWSSecret
	}
	return ""
}

// checkSlack matches xox[bpars]- at s and 20 token bytes.
func checkSlack(b []byte, s int) string {
	if s < 0 || s+4 >= len(b) || !strings.ContainsRune("bpars", rune(b[s+3])) || b[s+4] != '-' {
		return ""
	}
	return tokenAfter(b, s, 5, urlSet, 20, KindSlack)
}

// Scanner looks for tokens shaped like API keys and private key blocks in
// a stream of bytes, written to it in pieces of any size, and remembers
// where it found what. One scanner serves many files: Reset between them
// keeps its buffer.
type Scanner struct {
	buf   []byte // carry from the previous pass, then new bytes
	skip  int    // buf[:skip] was owned by the previous pass
	line  int    // line number of buf[0]
	keep  int    // findings to remember (<= 0: all)
	found []Finding
	total int
}

// NewScanner returns a scanner that remembers the first keep findings
// (keep <= 0: all) and counts the rest.
func NewScanner(keep int) *Scanner {
	return &Scanner{buf: make([]byte, 0, scanBack+scanReach+scanChunk), line: 1, keep: keep}
}

// Reset readies the scanner for the next file, keeping its buffer: a
// tree of many small files would otherwise allocate ~256 KiB for each.
func (s *Scanner) Reset() {
	s.buf, s.skip, s.line, s.found, s.total = s.buf[:0], 0, 1, nil, 0
}

func (s *Scanner) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), cap(s.buf)-len(s.buf))
		s.buf = append(s.buf, p[:k]...)
		p = p[k:]
		if len(s.buf) == cap(s.buf) {
			s.pass(false)
		}
	}
	return n, nil
}

// Finish scans what is left and returns the findings, by line.
func (s *Scanner) Finish() []Finding {
	s.pass(true)
	sort.SliceStable(s.found, func(i, j int) bool { return s.found[i].Line < s.found[j].Line })
	return s.found
}

// pass scans buf. A rule byte found in the last scanReach bytes belongs to
// the next pass, which will see what follows it, unless this is the last.
func (s *Scanner) pass(final bool) {
	own := len(s.buf)
	if !final {
		own -= scanReach
	}
	for _, r := range secretRules {
		for i := s.skip; i < own; {
			j := bytes.IndexByte(s.buf[i:own], r.b)
			if j < 0 {
				break
			}
			if kind := r.check(s.buf, i+j); kind != "" {
				s.add(i+j, kind)
			}
			i += j + 1
		}
	}
	if final {
		return
	}
	// Keep scanReach bytes, and scanBack before them for the checks that
	// look back.
	from := own - scanBack
	s.line += bytes.Count(s.buf[:from], []byte{'\n'})
	s.buf = append(s.buf[:0], s.buf[from:]...)
	s.skip = scanBack
}

func (s *Scanner) add(at int, kind string) {
	s.total++
	if s.keep > 0 && len(s.found) >= s.keep {
		return
	}
	s.found = append(s.found, Finding{Line: s.line + bytes.Count(s.buf[:at], []byte{'\n'}), Kind: kind})
}

// Total is how many findings the scanner made, remembered or not.
func (s *Scanner) Total() int { return s.total }

// Scan reports the findings in b (at most keep, <= 0: all) and their total.
func Scan(b []byte, keep int) ([]Finding, int) {
	s := NewScanner(keep)
	s.Write(b)
	f := s.Finish()
	return f, s.total
}
