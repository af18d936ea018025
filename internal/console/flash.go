package console

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
)

// A flash is the outcome of an action (an answer, a note), shown once on
// the page the action leads back to. The server writes it into a cookie
// it signs (HttpOnly, SameSite=Strict, for that page only, a minute), and
// the page takes it out again: nothing in a page's address is ever shown
// as a message, so a link cannot put words on a real run's page.
type flash struct {
	Text string `json:"text"`
	// Kind is the flash's CSS class: "ok", "refused", or "queued" (taken,
	// but not yet by the run: no worker polls).
	Kind string `json:"kind"`
	// Path is the page the flash is for.
	Path string `json:"path"`
}

const (
	flashCookie = "tether_flash"
	// flashRunes bounds a flash's text: a cookie holds 4 KiB, and JSON
	// and base64 make a character up to eight bytes.
	flashRunes = 400
)

// setFlash signs f into the flash cookie, for the page at f.Path.
func (s *security) setFlash(w http.ResponseWriter, r *http.Request, f flash) {
	f.Text = cut(f.Text, flashRunes)
	b, err := json.Marshal(f)
	if err != nil {
		return
	}
	v := base64.RawURLEncoding.EncodeToString(b)
	c := s.cookie(r, flashCookie, v+"."+s.mac("flash "+v))
	c.MaxAge = 60
	http.SetCookie(w, c)
}

// takeFlash is the flash for this page, if the browser holds one the
// console signed; it is cleared as it is shown. A live page's refresh
// leaves it for the page itself.
func (s *security) takeFlash(w http.ResponseWriter, r *http.Request) *flash {
	c, err := r.Cookie(flashCookie)
	if err != nil || r.Header.Get("X-Tether-Live") != "" {
		return nil
	}
	v, sig, ok := strings.Cut(c.Value, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(s.mac("flash "+v))) {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return nil
	}
	var f flash
	if json.Unmarshal(b, &f) != nil || f.Path != r.URL.Path {
		return nil
	}
	gone := s.cookie(r, flashCookie, "")
	gone.MaxAge = -1
	http.SetCookie(w, gone)
	switch f.Kind {
	case "ok", "refused", "queued":
	default:
		f.Kind = "refused"
	}
	return &f
}

// redirectFlash leads back to the page at to, which shows f once.
func (s *Server) redirectFlash(w http.ResponseWriter, r *http.Request, to string, f flash) {
	f.Path, _, _ = strings.Cut(to, "?")
	s.sec.setFlash(w, r, f)
	http.Redirect(w, r, to, http.StatusSeeOther)
}
