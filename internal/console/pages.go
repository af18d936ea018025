package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

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
	// Flash is a message about the last action, OK or not.
	Flash   string
	FlashOK bool
	Data    any
}

var funcs = template.FuncMap{
	"tokens":  tokens,
	"usd":     usd,
	"dur":     dur,
	"ago":     ago,
	"stamp":   stamp,
	"r":       treepolicy.RedactText,
	"line":    oneLine,
	"cut":     cut,
	"short":   short,
	"plural":  plural,
	"esc":     url.PathEscape,
	"query":   url.QueryEscape,
	"add":     func(a, b int) int { return a + b },
	"usage":   usageText,
	"pct":     pct,
	"status":  statusClass,
	"join":    strings.Join,
	"int64":   func(i int) int64 { return int64(i) },
	"minutes": func(d time.Duration) string { return dur(d) },
}

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

// render writes a whole page; a template error is logged and answered
// with 500 (nothing half-written reaches the browser).
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, pg page) {
	pg.CSRF = csrfToken(r)
	pg.Token = s.opts.Token != "" && s.sec.loggedIn(r)
	t := s.pages.byName[name]
	var buf bytes.Buffer
	if t == nil {
		s.log.Error("console: no such template", "name", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if err := t.ExecuteTemplate(&buf, "layout", pg); err != nil {
		s.log.Error("console: render page", "page", name, "error", err)
		http.Error(w, "the page could not be drawn; the console's log has the reason", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// fail shows an error page that says what happened and what to do.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, title string, err error) {
	if status >= 500 {
		s.log.Warn("console: page failed", "path", r.URL.Path, "error", err)
	}
	s.render(w, r, status, "error", page{Title: title, Data: map[string]string{"Title": title, "Error": blobref.Hide(err.Error())}})
}

func renderLogin(w http.ResponseWriter, r *http.Request, s *security, msg string) {
	t, err := template.New("login").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/login.html")
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	next := r.URL.RequestURI()
	if r.URL.Path == "/login" || r.Method != http.MethodGet {
		next = "/runs"
	}
	pg := page{Title: "Log in", CSRF: csrfToken(r), Data: map[string]string{"Error": msg, "Next": next}}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := t.ExecuteTemplate(w, "layout", pg); err != nil {
		slog.Warn("console: render login", "error", err)
	}
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

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
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
