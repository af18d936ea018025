package console

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blobref"
	"github.com/tether-run/tether/internal/treepolicy"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

func staticHandler() http.Handler {
	sub, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err) // the embedded tree is part of the binary
	}
	fsrv := http.FileServer(http.FS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		fsrv.ServeHTTP(w, r)
	})
}

// pages are the parsed templates, one set per page, each with the layout.
type pages struct {
	byName map[string]*template.Template
}

// page is what every template gets: the layout's fields and the page's
// own data.
type page struct {
	Title string
	// Nav is the section the page belongs to ("runs", "questions").
	Nav string
	// Live is the URL of the page's server-sent events ("" for none).
	Live string
	CSRF string
	// Token says the person logged in with the console's token (the page
	// shows a log-out button); one who came by an answer link did not.
	Token bool
	// Flash is the outcome of the person's last action, from the
	// server (flash.go); nil for none.
	Flash *flash
	Data  any
}

// funcs are the templates' functions, each named for what it gives.
var funcs = template.FuncMap{
	"tokens":   tokens,
	"usd":      usd,
	"dur":      dur,
	"ago":      ago,
	"stamp":    stamp,
	"r":        treepolicy.RedactText,
	"line":     oneLine,
	"cut":      cut,
	"short":    short,
	"plural":   plural,
	"esc":      url.PathEscape,
	"query":    url.QueryEscape,
	"add":      func(a, b int) int { return a + b },
	"usage":    usageText,
	"pct":      pct,
	"status":   statusClass,
	"join":     strings.Join,
	"lineKind": lineKind,
	"lineMark": lineMark,
	"value":    valueText,
	"size":     size,
	"sentence": sentence,
}

// sentence is s with its first letter a capital: a message that goes
// on after a colon elsewhere, at the start of a page's status.
func sentence(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// size is a number of bytes as a person reads it: 512 bytes, 12.3 KiB.
func size(n int64) string {
	switch {
	case n == 1:
		return "1 byte"
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// lineKind is a diff line's CSS class: "add", "del", or "" for context.
func lineKind(op byte) string {
	switch op {
	case '+':
		return "add"
	case '-':
		return "del"
	}
	return ""
}

// lineMark is a diff line's mark as a person reads it: +, − (a minus
// sign, not a hyphen), or nothing for context.
func lineMark(op byte) string {
	switch op {
	case '+':
		return "+"
	case '-':
		return "−"
	}
	return ""
}

// valueText is an expression's value as a page shows it: "–" when the
// join did not evaluate it.
func valueText(v any) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprint(v)
}

// loadPages parses every page once, at start: each page's own template
// with the layout and the shared parts.
func loadPages() (*pages, error) {
	p := &pages{byName: map[string]*template.Template{}}
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" || strings.HasPrefix(base, "_") {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/_*.html", n)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", n, err)
		}
		p.byName[base] = t
	}
	return p, nil
}

// render writes a whole page, drawn into a buffer first so that nothing
// half-written reaches the browser; a page that cannot be drawn is an
// error for serveError.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, pg page) error {
	pg.CSRF = csrfToken(r)
	pg.Token = s.opts.Token != "" && s.sec.loggedIn(r)
	if pg.Flash == nil {
		pg.Flash = s.sec.takeFlash(w, r)
	}
	t := s.pages.byName[name]
	if t == nil {
		return fmt.Errorf("console: no template %q", name)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", pg); err != nil {
		return fmt.Errorf("console: draw page %s: %w", name, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
	return nil
}

// A pageHandler writes its page, or returns the error that keeps it
// from doing so; serveError, the one error handler, shows that error.
type pageHandler func(w http.ResponseWriter, r *http.Request) error

// pageError is an error with the status and title of the page that says
// it. An error that is none is a 500 that the log explains.
type pageError struct {
	status int
	title  string
	err    error
}

func (e *pageError) Error() string { return e.err.Error() }
func (e *pageError) Unwrap() error { return e.err }

func notFound(title string, err error) error   { return &pageError{http.StatusNotFound, title, err} }
func badRequest(title string, err error) error { return &pageError{http.StatusBadRequest, title, err} }

// storeFailed is the run store that could not be read.
func storeFailed(title string, err error) error {
	return &pageError{http.StatusBadGateway, title, fmt.Errorf("the run store could not be read: %w", err)}
}

// handle adapts a pageHandler to the mux: its error goes to serveError.
func (s *Server) handle(h pageHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.serveError(w, r, err)
		}
	}
}

// errorView is what the error page says.
type errorView struct {
	Title string
	Error string
	// Down says Temporal is unreachable: the page shows nothing read
	// from elsewhere meanwhile, and says when to look again.
	Down bool
}

// serveError shows err on a page that says what happened and what to do:
// a *pageError with its status and title, Temporal unreachable with 503,
// anything else as a 500 whose cause the log keeps.
func (s *Server) serveError(w http.ResponseWriter, r *http.Request, err error) {
	var (
		pe   *pageError
		down *downError
		v    errorView
	)
	switch {
	case errors.As(err, &down):
		pe = &pageError{status: http.StatusServiceUnavailable, title: "Temporal is unreachable", err: err}
		v.Down = true
	case errors.As(err, &pe):
	default:
		pe = &pageError{status: http.StatusInternalServerError, title: "Something went wrong",
			err: errors.New("the console could not draw this page; its log has the reason")}
	}
	if pe.status >= 500 {
		s.log.Warn("console: page failed", "path", r.URL.Path, "status", pe.status, "error", err)
	}
	v.Title, v.Error = pe.title, blobref.Hide(pe.err.Error())
	if rerr := s.render(w, r, pe.status, "error", page{Title: pe.title, Data: v}); rerr != nil {
		s.log.Error("console: draw the error page", "error", rerr)
		http.Error(w, "the page could not be drawn; the console's log has the reason", http.StatusInternalServerError)
	}
}

// loginPage is the page that asks for the console's token; msg says why
// the last try failed.
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	next := r.URL.RequestURI()
	if r.URL.Path == "/login" || r.Method != http.MethodGet {
		next = "/runs"
	}
	pg := page{Title: "Log in", Data: loginView{Error: msg, Next: next}}
	if err := s.render(w, r, status, "login", pg); err != nil {
		s.serveError(w, r, err)
	}
}

// loginView is what the login page shows.
type loginView struct {
	Error string
	// Next is where the login leads (a path of this console).
	Next string
}

// tokens is a token count as a person reads it: 950, 12.4k, 1.2M.
func tokens(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d", n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	default:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	}
}

func usd(f float64) string {
	if f < 0.01 && f > 0 {
		return fmt.Sprintf("$%.4f", f)
	}
	return fmt.Sprintf("$%.2f", f)
}

// usageText is a visit's or a run's usage in brief: "12.4k tokens, $0.01",
// the cost only where the CLI priced the calls; "" for none.
func usageText(u agent.Usage) string {
	if u.Tokens() == 0 && !u.CostKnown {
		return ""
	}
	s := tokens(u.Tokens()) + " tokens"
	if u.CostKnown {
		s += ", " + usd(u.CostUSD)
	}
	return s
}

// dur is a duration to a person's precision: 340 ms, 4.2 s, 3 min 5 s.
func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
	}
}

// ago is how long before now t was, coarsely.
func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := time.Since(t)
	switch {
	case d < 5*time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%d s ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	default:
		return fmt.Sprintf("%d days ago", int(d.Hours()/24))
	}
}

// stamp is a time in UTC, to the second.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// oneLine is the first line of s with its blanks squeezed, cut to n
// runes.
func oneLine(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return cut(strings.Join(strings.Fields(s), " "), n)
}

// cut is s cut to n runes, with "…" when cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func short(commit string) string {
	if len(commit) > 10 {
		return commit[:10]
	}
	return commit
}

// plural is n and its noun, in the plural unless n is 1: "1 file", "3
// files", "2 branches".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	for _, end := range []string{"s", "x", "ch", "sh"} {
		if strings.HasSuffix(noun, end) {
			return fmt.Sprintf("%d %ses", n, noun)
		}
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// pct is part of whole as a percentage for a <meter>, capped at 100.
func pct(part, whole float64) float64 {
	if whole <= 0 {
		return 0
	}
	return min(100, 100*part/whole)
}

// statusClass is the CSS class of a run or visit status.
func statusClass(s string) string {
	switch s {
	case "running", "waiting", "completed", "failed", "failed_resumable", "ok", "asked":
		return "st-" + s
	case "canceled", "terminated", "timed_out", "continued_as_new":
		return "st-closed"
	case "timed out", "exited":
		return "st-failed"
	}
	if strings.HasPrefix(s, "exit ") {
		return "st-failed"
	}
	return "st-other"
}
