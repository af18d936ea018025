package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"strings"
)

// Cookie names. Each is HttpOnly and SameSite=Strict.
const (
	sessionCookie = "tether_session"
	csrfCookie    = "tether_csrf"
	nameCookie    = "tether_name"
)

// csp lets a page load only the console's own script, styles and images:
// no inline script, no inline style, nothing from elsewhere, no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// security is the console's gate: the token and its session cookie, CSRF
// tokens, and the response headers every page carries.
type security struct {
	token string
	loop  bool
	// key signs CSRF tokens and the session cookie. With a token it is
	// derived from it (sessions outlive a restart); without, random.
	key []byte
}

func newSecurity(token string, loop bool) (*security, error) {
	s := &security{token: token, loop: loop}
	if token != "" {
		sum := sha256.Sum256([]byte("tether console v1\x00" + token))
		s.key = sum[:]
	} else {
		s.key = make([]byte, 32)
		if _, err := rand.Read(s.key); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *security) mac(what string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(what))
	return hex.EncodeToString(m.Sum(nil))
}

// session is the session cookie's value: whoever holds it gave the token.
func (s *security) session() string { return s.mac("session") }

type ctxKey int

const csrfKey ctxKey = iota

// csrfToken is the token a page's forms carry.
func csrfToken(r *http.Request) string {
	v, _ := r.Context().Value(csrfKey).(string)
	return v
}

// open are the paths served without a session: the login page, the
// assets it uses, the health check, and answer links, which carry their
// own credential (answerlink.go).
func open(path string) bool {
	return path == "/login" || path == "/healthz" || strings.HasPrefix(path, "/static/") || strings.HasPrefix(path, "/answer/")
}

// wrap puts the gate in front of h; login draws the login page.
func (s *security) wrap(h http.Handler, login func(w http.ResponseWriter, r *http.Request, status int, msg string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", csp)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Cache-Control", "no-store")
		if hookPath(r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		if s.token == "" && !loopbackHost(r.Host) {
			// Without a token the console trusts the machine it is on; a
			// page of another site that rebinds its name to 127.0.0.1
			// must not read it.
			http.Error(w, "this console answers only to a loopback host name (127.0.0.1, localhost); open it by that name", http.StatusMisdirectedRequest)
			return
		}
		r = s.withCSRF(w, r)
		bearer := s.token != "" && s.bearer(r)
		if s.token != "" && !bearer && !open(r.URL.Path) && !s.loggedIn(r) {
			login(w, r, http.StatusUnauthorized, "")
			return
		}
		if r.Method == http.MethodPost && !bearer && !s.csrfOK(r) {
			http.Error(w, "this form is stale or did not come from the console (its CSRF token is missing or wrong); reload the page and try again", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (s *security) bearer(r *http.Request) bool {
	v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(v), []byte(s.token)) == 1
}

func (s *security) loggedIn(r *http.Request) bool {
	c, err := r.Cookie(sessionCookie)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.session())) == 1
}

// withCSRF gives the browser a CSRF cookie if it has none, and the request
// the token its forms carry: the cookie's MAC, so a page of another site,
// which can neither read the cookie nor compute the MAC, cannot forge one.
func (s *security) withCSRF(w http.ResponseWriter, r *http.Request) *http.Request {
	c, err := r.Cookie(csrfCookie)
	if err != nil || len(c.Value) != 32 {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		c = &http.Cookie{Name: csrfCookie, Value: hex.EncodeToString(b)}
		http.SetCookie(w, s.cookie(r, csrfCookie, c.Value))
		// A POST that arrives without a cookie has no valid token either.
		if r.Method == http.MethodPost {
			return r
		}
	}
	return r.WithContext(context.WithValue(r.Context(), csrfKey, s.mac("csrf "+c.Value)))
}

func (s *security) csrfOK(r *http.Request) bool {
	want := csrfToken(r)
	if want == "" {
		return false
	}
	got := r.Header.Get("X-CSRF-Token")
	if got == "" {
		got = r.PostFormValue("csrf")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func (s *security) cookie(r *http.Request, name, value string) *http.Cookie {
	return &http.Cookie{
		Name: name, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https",
	}
}

// loopbackHost reports whether a request's Host names this machine.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loginForm is GET /login: the page that asks for the token.
func (srv *Server) loginForm(w http.ResponseWriter, r *http.Request) {
	if srv.sec.token == "" {
		http.Redirect(w, r, "/runs", http.StatusSeeOther)
		return
	}
	srv.loginPage(w, r, http.StatusOK, "")
}

// login is POST /login: a right token sets the session cookie (and the
// name given, recorded with the person's answers) and leads on.
func (srv *Server) login(w http.ResponseWriter, r *http.Request) {
	s := srv.sec
	if s.token == "" {
		http.Redirect(w, r, "/runs", http.StatusSeeOther)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue("token")), []byte(s.token)) != 1 {
		srv.loginPage(w, r, http.StatusUnauthorized, "That is not the console's token.")
		return
	}
	http.SetCookie(w, s.cookie(r, sessionCookie, s.session()))
	if name := cleanName(r.PostFormValue("name")); name != "" {
		http.SetCookie(w, s.cookie(r, nameCookie, name))
	}
	next := r.PostFormValue("next")
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		next = "/runs"
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *security) logout(w http.ResponseWriter, r *http.Request) {
	for _, name := range []string{sessionCookie, nameCookie} {
		c := s.cookie(r, name, "")
		c.MaxAge = -1
		http.SetCookie(w, c)
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// cleanName keeps a person's name to letters, digits and a few marks, at
// most 40 characters: it goes into the Temporal client identity that
// records who answered.
func cleanName(s string) string {
	var b strings.Builder
	for _, r := range strings.TrimSpace(s) {
		if b.Len() >= 40 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune(" .-_@", r):
			b.WriteRune(r)
		}
	}
	return strings.TrimSpace(b.String())
}
