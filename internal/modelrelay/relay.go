// Package modelrelay is the worker's relay for one visit's model endpoint.
// The agent CLI talks plain HTTP to it at a loopback address (inside its
// sandbox, relayed to a Unix socket the worker serves; or on the worker's
// own loopback when the CLI is not network-confined) and holds only a
// placeholder key, made for the visit. The relay refuses a request that
// does not carry the placeholder, puts the real key in its place (in
// whatever header or query parameter the CLI sent it: x-api-key,
// Authorization: Bearer, x-goog-api-key, ?key=) and sends the request to
// the model endpoint, over TLS when the endpoint is https. It never sends
// the key anywhere else: it reaches one endpoint, the one the worker was
// configured with.
//
// On the way back it reads the usage in every answer of the model's API
// (Anthropic Messages, OpenAI Responses and Chat Completions, Gemini;
// whole or streamed as server-sent events) and keeps the visit's token
// count, which it reports as it changes. Once a budget the visit counts
// against is spent, it refuses the next model call with an error the CLI
// shows, and says so (Stopped).
package modelrelay

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/agent"
)

// ErrBadUpstream is a model endpoint that is not an http or https URL.
var ErrBadUpstream = errors.New("modelrelay: the model endpoint must be an http:// or https:// URL")

// Config is one visit's relay.
type Config struct {
	// Upstream is the model endpoint's base URL, as the CLI's base URL
	// variable takes it (https://api.anthropic.com,
	// http://127.0.0.1:8080/v1).
	Upstream string
	// Key is the endpoint's real key; empty sends none (the placeholder
	// is still required, and removed).
	Key string
	// Wire is the model API the CLI speaks (agent.Wire*): where the
	// usage lies in an answer, and how an error is written.
	Wire string
	// Limits are the budgets the visit counts against.
	Limits []agent.Limit
	// OnUsage, when set, is called with the visit's metered usage each
	// time it grows. It must return quickly.
	OnUsage func(agent.Usage)
	// Transport sends the requests; nil is DefaultTransport.
	Transport http.RoundTripper
	Log       *slog.Logger
}

// headerTimeout bounds how long a request's head may take to arrive (a
// variable, for tests).
var headerTimeout = 30 * time.Second

// DefaultTransport is the transport every relay of a worker shares, so
// that connections (and TLS sessions) to a model endpoint outlive a
// visit. It honours the worker's own proxy settings.
var DefaultTransport http.RoundTripper = &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: 15 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	ForceAttemptHTTP2:     true,
	MaxIdleConns:          64,
	MaxIdleConnsPerHost:   16,
	IdleConnTimeout:       90 * time.Second,
	TLSHandshakeTimeout:   15 * time.Second,
	ExpectContinueTimeout: time.Second,
}

// Relay is one visit's relay, serving on a listener until Close.
type Relay struct {
	upstream    *url.URL
	key         string
	placeholder string
	wire        string
	limits      []agent.Limit
	onUsage     func(agent.Usage)
	transport   http.RoundTripper
	log         *slog.Logger
	srv         *http.Server
	ln          net.Listener
	done        chan struct{}

	mu      sync.Mutex
	usage   agent.Usage // of the answers read to the end
	open    map[*meter]struct{}
	stopped string
	calls   int
	// cost is what the CLI has priced the visit's calls at so far
	// (SetCost): the relay reads tokens, never prices.
	cost float64
}

// Start serves a relay for cfg on ln (a loopback TCP listener, or a Unix
// socket a sandbox's loopback relays to); it owns ln from then on.
func Start(cfg Config, ln net.Listener) (*Relay, error) {
	u, err := url.Parse(cfg.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		ln.Close()
		return nil, fmt.Errorf("%w: %q", ErrBadUpstream, cfg.Upstream)
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		ln.Close()
		return nil, fmt.Errorf("modelrelay: %w", err)
	}
	r := &Relay{
		upstream: u, key: cfg.Key, wire: cfg.Wire, limits: cfg.Limits, onUsage: cfg.OnUsage,
		placeholder: "tether-placeholder-" + hex.EncodeToString(b[:]),
		transport:   cfg.Transport, log: cfg.Log, ln: ln, done: make(chan struct{}),
		open: map[*meter]struct{}{},
	}
	if r.transport == nil {
		r.transport = DefaultTransport
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: headerTimeout, ErrorLog: slog.NewLogLogger(r.log.Handler(), slog.LevelDebug)}
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(ln)
	}()
	return r, nil
}

// Placeholder is the key the CLI is given in place of the real one.
func (r *Relay) Placeholder() string { return r.placeholder }

// BaseURL is the base URL the CLI is given: the endpoint's own path, at
// http://addr (where the CLI reaches the relay).
func (r *Relay) BaseURL(addr string) string {
	return "http://" + addr + strings.TrimSuffix(r.upstream.EscapedPath(), "/")
}

// Usage is what the relay has read in the model's answers so far, those
// still streaming included.
func (r *Relay) Usage() agent.Usage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.usageLocked()
}

func (r *Relay) usageLocked() agent.Usage {
	u := r.usage
	for m := range r.open {
		u = addTokens(u, m)
	}
	return u
}

// SetCost tells the relay what the CLI has priced the visit's calls at so
// far, for the cost bounds of its limits; a CLI that prices its calls as
// they end (pi, opencode) keeps it current, one that prices the visit
// only at its end leaves a cost bound to the check between visits.
func (r *Relay) SetCost(usd float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cost = max(r.cost, usd)
}

// Stopped says which budget the relay refused a model call for, or "".
func (r *Relay) Stopped() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

// Calls counts the model calls the relay sent on.
func (r *Relay) Calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// Close stops serving and ends the requests under way.
func (r *Relay) Close() error {
	err := r.srv.Close()
	<-r.done
	return err
}

// ServeHTTP relays one request.
func (r *Relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	out, ok := r.swapKey(req)
	if !ok {
		r.refuse(w, http.StatusUnauthorized, "tether: this model relay takes only the key its visit was given")
		return
	}
	if msg := r.admit(); msg != "" {
		r.log.Warn("a budget is spent; the model call is refused", "why", msg)
		// 400, which no CLI retries and each shows as the endpoint's
		// error (a 403 reads as a failed login to Claude Code).
		r.refuse(w, http.StatusBadRequest, "tether: "+msg+"; the visit stops here, and the run stops resumably: raise the budget with `tether resume RUN --max-tokens N` (or --max-cost-usd X, with --node NODE for a node's budget)")
		return
	}
	resp, err := r.transport.RoundTrip(out)
	if err != nil && req.Context().Err() != nil {
		return // the CLI went away
	}
	if err != nil {
		r.log.Warn("the model endpoint could not be reached", "endpoint", r.upstream.Host, "error", err)
		r.refuse(w, http.StatusBadGateway, "tether: the model endpoint "+r.upstream.Host+" could not be reached: "+scrub(err.Error(), r.key))
		return
	}
	defer resp.Body.Close()
	h := w.Header()
	for k, vs := range resp.Header {
		if !hopByHop(k) {
			h[k] = vs
		}
	}
	m := r.newMeter(resp)
	defer r.closeMeter(m)
	// The usage of an answer is counted before the CLI has it, so that
	// its next call is checked against it: a whole answer is read first
	// (it is small; past maxBody the rest goes on unread), and each piece
	// of a stream is read before it is passed on.
	var head []byte
	if m != nil && !m.stream {
		head, _ = io.ReadAll(io.LimitReader(resp.Body, int64(maxBody)+1))
		h.Del("Content-Length")
		if len(head) <= maxBody {
			r.whole(m, head)
			h.Set("Content-Length", strconv.Itoa(len(head)))
		}
		m = nil // a longer one goes on unread
	}
	w.WriteHeader(resp.StatusCode)
	if _, err := w.Write(head); err != nil {
		return
	}
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		r.feed(m, buf[:n])
		if _, werr := w.Write(buf[:n]); werr != nil {
			return
		}
		_ = rc.Flush()
		if rerr != nil {
			return
		}
	}
}

// admit counts a model call, or says which budget is spent.
func (r *Relay) admit() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.usageLocked()
	u.CostUSD = r.cost
	if msg := agent.Spent(r.limits, u); msg != "" {
		if r.stopped == "" {
			r.stopped = msg
		}
		return msg
	}
	r.calls++
	return ""
}

// swapKey is the request to send upstream: req at the endpoint, with the
// placeholder replaced by the real key in each header or query value that
// is the placeholder (or "Bearer " and it), and nowhere else. ok is false
// when no value is: no key is ever added to a request that did not carry
// the placeholder.
func (r *Relay) swapKey(req *http.Request) (out *http.Request, ok bool) {
	out = req.Clone(req.Context())
	out.RequestURI = ""
	u := *req.URL
	u.Scheme, u.Host = r.upstream.Scheme, r.upstream.Host
	out.URL, out.Host = &u, r.upstream.Host
	for k := range out.Header {
		if hopByHop(k) {
			out.Header.Del(k)
		}
	}
	inHeader, inQuery := r.swapValues(out.Header), r.swapQuery(&u)
	// The transport asks for gzip itself and hands back the body plain,
	// so that the usage in it can be read.
	out.Header.Del("Accept-Encoding")
	if r.key == "" {
		// No key to send: no header is better than an empty one.
		for _, k := range []string{"X-Api-Key", "X-Goog-Api-Key"} {
			if out.Header.Get(k) == "" {
				out.Header.Del(k)
			}
		}
		if a := out.Header.Get("Authorization"); strings.TrimSpace(strings.TrimPrefix(a, "Bearer")) == "" {
			out.Header.Del("Authorization")
		}
	}
	return out, inHeader || inQuery
}

// swapValues puts the key in place of each value of vs that carries the
// placeholder, and reports whether one did.
func (r *Relay) swapValues(vs map[string][]string) bool {
	found := false
	for _, values := range vs {
		for i, v := range values {
			if r.carries(v) {
				found = true
				values[i] = strings.ReplaceAll(v, r.placeholder, r.key)
			}
		}
	}
	return found
}

// swapQuery does swapValues on u's query, leaving a query without the
// placeholder as it was written.
func (r *Relay) swapQuery(u *url.URL) bool {
	q := u.Query()
	if !r.swapValues(q) {
		return false
	}
	u.RawQuery = q.Encode()
	return true
}

// carries reports whether v holds the placeholder as a whole token (a
// header or query value that is it, or "Bearer " and it), compared in
// constant time.
func (r *Relay) carries(v string) bool {
	v = strings.TrimSpace(v)
	if s, ok := strings.CutPrefix(v, "Bearer "); ok {
		v = strings.TrimSpace(s)
	}
	return subtle.ConstantTimeCompare([]byte(v), []byte(r.placeholder)) == 1
}

// hopByHop reports the headers that belong to one connection, not the
// request.
func hopByHop(k string) bool {
	switch http.CanonicalHeaderKey(k) {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// refuse answers with an error in the wire's own format, so that the CLI
// shows the message.
func (r *Relay) refuse(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, errorBody(r.wire, code, msg))
}

// scrub takes key out of s (an error that quotes a URL with ?key=).
func scrub(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[key]")
}
