// Package console is `tether console`: a web page for the people in a
// run's loop. It shows the runs Temporal's visibility lists (the Tether*
// search attributes), one run's graph, visits, live progress, budgets and
// checkpoints, each visit's files and conversation, and a fan-out's
// attempts side by side; and it answers, steers, cancels, resumes,
// rewinds, forks and deletes runs through the tether CLI's own code paths
// (Actions), so a refusal reads the same on a page as in a terminal.
//
// The package promises:
//
//   - no store of its own: every page is read from Temporal and the run
//     store when it is asked for. What it remembers between requests is
//     in memory, bounded, and held by the Server (its caches): values
//     that cannot have changed (a checkpoint once written, the answers in
//     an execution's history at one length, a closed run's summary), an
//     open run's summary for 2 s, and what is down for 2 s; plus the
//     workspace packs it fetched, in its cache directory;
//   - it says what is down before it waits on it: Temporal unreachable
//     is an error page (never a page built from the run store alone), and
//     no worker polling the task queue is said in the page's status, and
//     an answer then is queued and said so at once (health);
//   - it binds a loopback address unless given a token, and then asks
//     every request for it (a login sets an HttpOnly, SameSite=Strict
//     cookie); every POST carries a CSRF token; on loopback without a
//     token, a request must name a loopback host (no DNS rebinding);
//   - everything an agent or a tool wrote is escaped (html/template), and
//     what looks like a key is redacted (treepolicy.RedactText); no state
//     ref or blob key is ever put on a page;
//   - a Content-Security-Policy without inline script: every page works
//     without JavaScript, and the one script, served by the console, only
//     keeps a page current through server-sent events.
package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/health"
	"github.com/tether-run/tether/internal/runapi"
	"github.com/tether-run/tether/internal/runstore"
	"github.com/tether-run/tether/internal/workspace"
)

// TokenEnv names the variable that holds the console's token.
const TokenEnv = "TETHER_CONSOLE_TOKEN"

// DefaultAddr is where the console listens unless told otherwise.
const DefaultAddr = "127.0.0.1:8080"

// Actions are what the console asks of the tether CLI: its commands' own
// code paths. Every error they return is shown to the person as it is.
type Actions interface {
	// Health says whether Temporal answers and a worker polls the task
	// queue, asking run (when given, and open) whether a worker answers
	// it when the pollers alone cannot tell. It takes at most a few
	// seconds, and a report a moment old serves again.
	Health(ctx context.Context, run string) health.Report
	// State is the run as `tether status` shows it: the live query, else
	// the run store. A run no worker answers is read from the store at
	// once.
	State(ctx context.Context, run string) (*RunState, error)
	// Live is what a live page polls: cheap, from Temporal alone.
	Live(ctx context.Context, run string) (*Live, error)
	// Graph is the graph the run executes, as Temporal recorded its input
	// (else the run store's): for a run that has no checkpoint yet.
	Graph(ctx context.Context, run string) (*graph.Graph, error)
	// Answer answers a question through the "answer" update; by names
	// who answered (the Temporal client's identity).
	Answer(ctx context.Context, run, question, text, by string) error
	// QueueAnswer sends the answer as the "answer" signal, which Temporal
	// keeps in the run's history until a worker takes it: for a run no
	// worker polls for.
	QueueAnswer(ctx context.Context, run, question, text, by string) error
	// Guide sends a note to node's next visit (the "guide" signal).
	Guide(ctx context.Context, run, node, text, by string) (string, error)
	Cancel(ctx context.Context, run string) (string, error)
	Resume(ctx context.Context, run string) (string, error)
	Rewind(ctx context.Context, run string, seq int64) (string, error)
	// Fork starts a new run from checkpoint seq (0: the latest) and
	// returns its id.
	Fork(ctx context.Context, run string, seq int64) (newRun, msg string, err error)
	Delete(ctx context.Context, run string) (string, error)
}

// RunState is a run as Actions.State found it.
type RunState struct {
	State *runapi.State
	// Source says where State came from ("live query", "run store,
	// checkpoint 7", …).
	Source string
	// Running is the progress of the visits in flight, from their
	// activities' heartbeats.
	Running []agent.Progress
	// Temporal is Temporal's status of the run's latest execution
	// ("running", "completed", "canceled", …; "" when Temporal does not
	// know it).
	Temporal string
	// Workers is what was known of the workers when State was read: a
	// run no worker answered says so here.
	Workers health.Report
	// Started and Closed are when the run's first execution started and
	// its latest closed (zero while open, or when Temporal does not know);
	// Executions counts them (1 + resumes, rewinds, continues-as-new).
	Started, Closed time.Time
	Executions      int
	// History names that execution and its history's length as Temporal
	// described it; nil when Temporal does not know the run.
	History *History
}

// History is one execution of a run and how many events its history held.
type History struct {
	RunID  string
	Events int64
}

// Live is a run as Temporal describes it: its status, how long its
// history is (it grows with everything that happens), and the progress
// its visits in flight last reported.
type Live struct {
	Temporal string
	Events   int64
	Running  []agent.Progress
}

// Options configure a console.
type Options struct {
	// Addr is host:port to listen on (DefaultAddr when empty).
	Addr string
	// Token, when set, is asked of every request. Required unless Addr is
	// a loopback address.
	Token string
	// Temporal lists runs (visibility) and describes them.
	Temporal client.Client
	// Runs is the run store; its blob store holds workspaces and sessions.
	Runs *runstore.Store
	// WorkspaceLimits bound what a page reads of a run's workspace.
	WorkspaceLimits workspace.Limits
	// CacheDir holds the workspace packs pages read (a temporary
	// directory when empty).
	CacheDir string
	Actions  Actions
	// WebUI links a run to the Temporal Web UI ("" leaves the link out).
	WebUI  func(run string) string
	Logger *slog.Logger
	// Poll is how often a live page asks Temporal for news (default 1 s).
	Poll time.Duration
	// LinkKey checks one-click answer links (TETHER_LINK_KEY, the workers'
	// key; answerlink.go); nil refuses every link.
	LinkKey []byte
	// GitHubHook serves GitHub's webhooks at POST /hooks/github
	// (internal/github/webhook); nil serves none.
	GitHubHook http.Handler
}

// Server is a running console's handler, its dependencies, and what it
// remembers between requests.
type Server struct {
	opts     Options
	cacheDir string
	blobs    blob.Store
	ws       *workspace.Manager
	pages    *pages
	sec      *security
	live     *hub
	log      *slog.Logger
	mux      *http.ServeMux
	caches   caches
	// user names the console's own user@host, who acts for a person
	// who gave no name.
	user   string
	closer func()
}

// ErrNeedsToken is the refusal to listen beyond loopback without a token.
var ErrNeedsToken = errors.New("console: refusing to listen on a non-loopback address without " + TokenEnv)

// New checks the options and builds the console's handler.
func New(opts Options) (*Server, error) {
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	loop, err := CheckAddr(opts.Addr, opts.Token)
	if err != nil {
		return nil, err
	}
	if opts.Runs == nil || opts.Actions == nil {
		return nil, errors.New("console: a run store and the CLI's actions are required")
	}
	s := &Server{opts: opts, blobs: opts.Runs.Blobs(), log: opts.Logger, caches: newCaches(), user: hostUser()}
	dir := opts.CacheDir
	cleanup := func() {}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "tether-console-*"); err != nil {
			return nil, err
		}
		cleanup = func() { _ = os.RemoveAll(dir) }
	}
	s.cacheDir = dir
	s.ws = workspace.NewManager(filepath.Join(dir, "packs"), s.blobs, opts.WorkspaceLimits, opts.Logger)
	s.pages, err = loadPages()
	if err != nil {
		cleanup()
		return nil, err
	}
	s.sec, err = newSecurity(opts.Token, loop)
	if err != nil {
		cleanup()
		return nil, err
	}
	s.live = newHub(s, opts.Poll)
	s.closer = func() { s.live.close(); cleanup() }
	s.routes()
	return s, nil
}

// Handler is the console with its security wrapped around every route.
func (s *Server) Handler() http.Handler { return s.sec.wrap(s.mux, s.loginPage) }

// Close stops the live updates and removes the cache.
func (s *Server) Close() { s.closer() }

// Serve listens on the options' address and serves until ctx ends; ready
// is called with the address actually bound (a port of 0 picks one).
func (s *Server) Serve(ctx context.Context, ready func(addr string)) error {
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("console: listen on %s: %w", s.opts.Addr, err)
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	if ready != nil {
		ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.live.close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// CheckAddr refuses an address other machines can reach when there is no
// token, and a token too short to be one; loop says addr is a loopback
// address.
func CheckAddr(addr, token string) (loop bool, err error) {
	if loop, err = loopback(addr); err != nil {
		return false, err
	}
	if !loop && token == "" {
		return false, fmt.Errorf("%w: %s is reachable from other machines, so the console needs a token; set %s to a long random value (e.g. `openssl rand -hex 32`) and give it to the people who may use the console, or listen on 127.0.0.1", ErrNeedsToken, addr, TokenEnv)
	}
	if token != "" && len(token) < 16 {
		return false, fmt.Errorf("console: %s is %d characters; use at least 16 (e.g. `openssl rand -hex 32`)", TokenEnv, len(token))
	}
	return loop, nil
}

// loopback reports whether addr's host is a loopback address (or
// localhost). An empty host listens on every interface: not loopback.
func loopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("console: --addr %q: %w; give host:port, e.g. %s", addr, err, DefaultAddr)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.Handle("GET /static/", http.StripPrefix("/static/", staticHandler()))
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/runs", http.StatusSeeOther) })
	m.HandleFunc("GET /login", s.loginForm)
	m.HandleFunc("POST /login", s.login)
	m.HandleFunc("POST /logout", s.sec.logout)
	m.HandleFunc("GET /runs", s.handle(s.runsPage))
	m.HandleFunc("GET /runs/events", s.live.runsEvents)
	m.HandleFunc("GET /questions", s.handle(s.questionsPage))
	m.HandleFunc("GET /runs/{run}", s.handle(s.runPage))
	m.HandleFunc("GET /runs/{run}/graph", s.handle(s.graphPage))
	m.HandleFunc("GET /runs/{run}/events", s.live.runEvents)
	m.HandleFunc("GET /runs/{run}/visits/{node}/{visit}", s.handle(s.visitPage))
	m.HandleFunc("GET /runs/{run}/joins/{node}/{visit}", s.handle(s.attemptsPage))
	m.HandleFunc("POST /runs/{run}/answer", s.handle(s.answer))
	m.HandleFunc("POST /runs/{run}/guide", s.handle(s.guide))
	m.HandleFunc("GET /runs/{run}/act/{action}", s.handle(s.confirmPage))
	m.HandleFunc("POST /runs/{run}/act/{action}", s.handle(s.act))
	m.HandleFunc("GET /answer/{run}/{question}", s.handle(s.answerLinkPage))
	m.HandleFunc("POST /answer/{run}/{question}", s.handle(s.answerByLink))
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	if s.opts.GitHubHook != nil {
		m.Handle("POST "+hooksPrefix+"github", s.opts.GitHubHook)
	}
	s.mux = m
}
