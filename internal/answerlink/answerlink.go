// Package answerlink makes and checks one-click answer links: signed
// tokens that let whoever holds one answer one asking of one question of
// one run, with one given answer or through the console's answer form,
// until it expires. A worker signs them into a notice (internal/notify) with the
// link key; the console (tether console) checks them with the same key,
// shows the question and asks for confirmation, and only then answers
// through the run's answer update, which refuses a question already
// answered: a link cannot be used twice.
//
// A token is base64url(payload) "." base64url(HMAC-SHA256(key, domain ||
// payload)), the payload a small JSON object. The package promises that a
// token it accepts was made with the key and names exactly the run,
// question and answer it says; that a changed byte, a token made with
// another key and an expired token are each refused with a reason of
// their own (ErrForged, ErrExpired); and that a token is never accepted
// for a run or question other than the one it names (ErrOtherRun,
// ErrOtherQuestion), nor for another asking of its question (ErrAskedAgain).
//
// A run can ask the same question again: a rewind to before it (or to a
// checkpoint that waited for it), or a resume that runs its node again,
// gives it the same id. A link names the asking it was sent for (the key
// of the notice that carried it: the question and the checkpoint the run
// had reached when it asked), so a link from before cannot answer the
// question asked since, with an answer someone gave to another asking.
// Links made before they named an asking (version 1) are refused as such
// (ErrOldLink): nothing in them says which asking they were sent for.
package answerlink

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// KeyEnv names the variable that holds the link key: 32 bytes as 64 hex
// digits or base64, the same on every worker and the console.
const KeyEnv = "TETHER_LINK_KEY"

// TTLEnv names the variable that sets how long a link stays valid.
const TTLEnv = "TETHER_LINK_TTL"

// DefaultTTL is how long a link is valid unless TTLEnv says otherwise.
const DefaultTTL = 7 * 24 * time.Hour

// Why a link is refused. Each says what the person can do.
var (
	// ErrMalformed: the token is not one this package makes (cut short
	// when it was copied, or not a link of Tether's at all).
	ErrMalformed = errors.New("answerlink: the link is incomplete or not an answer link")
	// ErrForged: the token's signature does not match: a byte was
	// changed, or it was not made with this console's link key.
	ErrForged = errors.New("answerlink: the link's signature does not match; it was changed or not made by this Tether")
	// ErrExpired: the link's time is over.
	ErrExpired = errors.New("answerlink: the link has expired")
	// ErrOtherRun and ErrOtherQuestion: the token names another run or
	// question than the address it was opened at.
	ErrOtherRun      = errors.New("answerlink: the link is for another run")
	ErrOtherQuestion = errors.New("answerlink: the link is for another question")
	// ErrAskedAgain: the question was asked again since the link was
	// sent (after a rewind, or a resume that ran its node again).
	ErrAskedAgain = errors.New("answerlink: the question was asked again since the link was sent")
	// ErrOldLink: the link was made by a Tether that did not name the
	// asking in a link; it cannot show which asking it was sent for.
	ErrOldLink = errors.New("answerlink: the link was made by an older Tether and names no asking of its question")
)

// domain separates answer links from anything else the key might sign.
const domain = "tether answer link v1\x00"

// Link is what a token grants: answering the asking Asking of Question
// of Run, with Answer when Fixed (one link per option), else through the
// answer form, until Expires.
type Link struct {
	Run      string
	Question string
	// Asking names the asking the link was sent for: the key of the
	// notice that carried it (runapi.PendingQuestion.Asking).
	Asking  string
	Answer  string
	Fixed   bool
	Expires time.Time
}

// payload is a Link as the token holds it, with short names: a link goes
// into chat messages and must stay short.
type payload struct {
	V int    `json:"v"`
	R string `json:"r"`
	Q string `json:"q"`
	// K is the asking (version 2 on).
	K string `json:"k,omitempty"`
	// A is the answer of a one-option link; nil for a form link.
	A *string `json:"a,omitempty"`
	X int64   `json:"x"`
}

// maxToken bounds a token a console reads (an option is at most 200
// bytes, a run id 128, a question id under 200, an asking under 250).
const maxToken = 2048

// version is the payload's version: 2 names the asking; 1, before it,
// did not.
const version = 2

// Sign makes the token of l with key.
func Sign(key []byte, l Link) (string, error) {
	if len(key) < 16 {
		return "", fmt.Errorf("answerlink: the link key has %d bytes; %s needs 32", len(key), KeyEnv)
	}
	if l.Asking == "" {
		return "", fmt.Errorf("answerlink: a link to question %s of run %s names no asking; it could answer the question asked again later", l.Question, l.Run)
	}
	p := payload{V: version, R: l.Run, Q: l.Question, K: l.Asking, X: l.Expires.Unix()}
	if l.Fixed {
		a := l.Answer
		p.A = &a
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(raw) + "." + enc.EncodeToString(mac(key, raw)), nil
}

func mac(key, raw []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(domain))
	m.Write(raw)
	return m.Sum(nil)
}

// Verify checks token with key at now and returns the link it grants.
func Verify(key []byte, token string, now time.Time) (Link, error) {
	if len(token) > maxToken {
		return Link{}, ErrMalformed
	}
	body, sig, ok := strings.Cut(token, ".")
	// Strict: a last character whose unused bits were changed is a
	// changed link too, not the same one.
	enc := base64.RawURLEncoding.Strict()
	raw, err1 := enc.DecodeString(body)
	got, err2 := enc.DecodeString(sig)
	if !ok || err1 != nil || err2 != nil || len(raw) == 0 || len(got) != sha256.Size {
		return Link{}, ErrMalformed
	}
	if !hmac.Equal(got, mac(key, raw)) {
		return Link{}, ErrForged
	}
	var p payload
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || p.R == "" || p.Q == "" || (p.V != 1 && p.V != version) || (p.V == version) != (p.K != "") {
		return Link{}, ErrMalformed
	}
	l := Link{Run: p.R, Question: p.Q, Asking: p.K, Expires: time.Unix(p.X, 0).UTC()}
	if p.A != nil {
		l.Answer, l.Fixed = *p.A, true
	}
	if !now.Before(l.Expires) {
		return l, fmt.Errorf("%w (on %s)", ErrExpired, l.Expires.Format(time.RFC1123))
	}
	if p.V == 1 {
		return l, ErrOldLink
	}
	return l, nil
}

// For checks that a verified link is for run and question, the ones the
// address it was opened at names.
func (l Link) For(run, question string) error {
	switch {
	case l.Run != run:
		return fmt.Errorf("%w: it answers run %s, not %s", ErrOtherRun, l.Run, run)
	case l.Question != question:
		return fmt.Errorf("%w: it answers %s, not %s", ErrOtherQuestion, l.Question, question)
	}
	return nil
}

// Answers checks that a verified link answers the asking of its question
// that waits now (runapi.PendingQuestion.Asking): a link sent for an
// earlier asking is refused with ErrAskedAgain.
func (l Link) Answers(asking string) error {
	if l.Asking != asking {
		return fmt.Errorf("%w: the link was sent when the run asked %s (%s); it asks it again now (%s)", ErrAskedAgain, l.Question, l.Asking, asking)
	}
	return nil
}

// Path is the console path a link opens: /answer/RUN/QUESTION?t=TOKEN.
func Path(run, question, token string) string {
	return "/answer/" + url.PathEscape(run) + "/" + url.PathEscape(question) + "?t=" + url.QueryEscape(token)
}

// URL is the link on the console at base (TETHER_CONSOLE_URL, which may
// carry a path prefix when the console sits behind a proxy).
func URL(base, run, question, token string) string {
	return strings.TrimRight(base, "/") + Path(run, question, token)
}
