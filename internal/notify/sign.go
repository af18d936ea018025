package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Headers of every request.
const (
	// SignatureHeader is t=UNIX,v1=HEX: HEX is HMAC-SHA256, keyed with
	// TETHER_NOTIFY_SECRET, of the decimal UNIX time, a '.', and the body.
	SignatureHeader = "Tether-Signature"
	// IdempotencyHeader is the notice's key, also in a JSON body's "id".
	IdempotencyHeader = "Tether-Idempotency-Key"
	// EventHeader is the notice's event.
	EventHeader = "Tether-Event"
)

// DefaultTolerance is how old a signature Verify accepts by default: a
// receiver that refuses older ones cannot be sent a recorded request
// again later.
const DefaultTolerance = 5 * time.Minute

// Sign is the SignatureHeader value of body sent at t.
func Sign(secret, body []byte, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return m.Sum(nil)
}

// Why Verify refuses a request.
var (
	ErrBadSignature = errors.New("notify: the signature does not match the body")
	ErrStale        = errors.New("notify: the signature is too old (or from the future)")
	ErrNoSignature  = errors.New("notify: no well-formed Tether-Signature header")
)

// Verify checks a request a receiver got: header is its SignatureHeader,
// body its bytes as received; a signature made more than tolerance away
// from now is refused. Several v1= values (a secret being rotated) are
// allowed; one that matches suffices.
func Verify(secret, body []byte, header string, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrNoSignature
	}
	want := mac(secret, ts, body)
	ok := false
	for _, s := range sigs {
		ok = ok || hmac.Equal(s, want)
	}
	if !ok {
		return ErrBadSignature
	}
	if d := now.Sub(time.Unix(unix, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: signed %s ago", ErrStale, d.Round(time.Second))
	}
	return nil
}
