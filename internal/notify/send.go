package notify

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/answerlink"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
)

// Why a notice was not delivered.
var (
	// ErrTransient: the receiver could not be reached or answered 408,
	// 429 or a 5xx; sending again later may work.
	ErrTransient = errors.New("notify: the receiver did not take the notice yet")
	// ErrRefused: the receiver answered with anything else (a 4xx, a
	// redirect) or its certificate was not trusted; sending the same
	// request again would fail the same way.
	ErrRefused = errors.New("notify: the receiver refused the notice")
	// ErrUnknownEndpoint: this worker has no endpoint of that name.
	ErrUnknownEndpoint = errors.New("notify: no such endpoint on this worker")
)

// RequestTimeout bounds one request.
const RequestTimeout = 10 * time.Second

// Sender sends notices to the endpoints a worker knows.
type Sender struct {
	Endpoints []Endpoint
	// Secret signs every request (TETHER_NOTIFY_SECRET).
	Secret []byte
	// ConsoleURL is the console's public base (TETHER_CONSOLE_URL); empty:
	// notices carry no links.
	ConsoleURL string
	// LinkKey signs answer links (answerlink.KeyEnv); nil: no answer
	// links, only the run's page.
	LinkKey []byte
	// LinkTTL is how long an answer link is valid, from the notice's time.
	LinkTTL time.Duration
	// Client sends the requests; nil: one that follows no redirect and
	// gives up after RequestTimeout.
	Client *http.Client
	// Now is the clock of the signatures' timestamps (time.Now when nil).
	Now func() time.Time
	// UserAgent names the sender.
	UserAgent string
}

// NewSender checks the settings and returns a sender, or nil when there
// are no endpoints.
func NewSender(endpoints []Endpoint, secret []byte, consoleURL string, linkKey []byte, linkTTL time.Duration) (*Sender, error) {
	if len(endpoints) == 0 {
		return nil, nil
	}
	if len(secret) < MinSecret {
		return nil, fmt.Errorf("%s names endpoints, so %s must be set, to at least %d characters (e.g. `openssl rand -hex 32`): every notice is signed with it, and receivers check the signature with it", Env, SecretEnv, MinSecret)
	}
	if consoleURL != "" {
		u, err := url.Parse(consoleURL)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("%s=%q: want the console's public address, e.g. https://tether.example.com or https://example.com/tether", ConsoleURLEnv, consoleURL)
		}
	}
	if linkTTL <= 0 {
		linkTTL = answerlink.DefaultTTL
	}
	return &Sender{Endpoints: endpoints, Secret: secret, ConsoleURL: consoleURL, LinkKey: linkKey, LinkTTL: linkTTL}, nil
}

// Endpoint is the endpoint called name.
func (s *Sender) Endpoint(name string) (Endpoint, bool) {
	if s == nil {
		return Endpoint{}, false
	}
	for _, ep := range s.Endpoints {
		if ep.Name == name {
			return ep, true
		}
	}
	return Endpoint{}, false
}

func (s *Sender) client() *http.Client {
	if s.Client != nil {
		return s.Client
	}
	return &http.Client{
		Timeout: RequestTimeout,
		// A redirect would send the notice, answer links and all, where
		// the operator did not say; it is a refusal to fix the URL.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func (s *Sender) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Links are the addresses n carries: made from the notice alone (its run,
// question and time), so every attempt to send it sends the same body.
func (s *Sender) Links(n Notice) (Links, error) {
	var l Links
	if s.ConsoleURL == "" {
		return l, nil
	}
	base := s.ConsoleURL
	l.Console = trimSlash(base) + "/runs/" + url.PathEscape(n.Run)
	q := n.Question
	if q == nil || n.Event != graph.NotifyWaiting || s.LinkKey == nil || q.Asking == "" {
		return l, nil
	}
	exp := n.Time.Add(s.LinkTTL)
	for _, opt := range q.Options {
		tok, err := answerlink.Sign(s.LinkKey, answerlink.Link{Run: n.Run, Question: q.ID, Asking: q.Asking, Answer: opt, Fixed: true, Expires: exp})
		if err != nil {
			return l, err
		}
		l.Answers = append(l.Answers, AnswerLink{Answer: opt, URL: answerlink.URL(base, n.Run, q.ID, tok)})
	}
	tok, err := answerlink.Sign(s.LinkKey, answerlink.Link{Run: n.Run, Question: q.ID, Asking: q.Asking, Expires: exp})
	if err != nil {
		return l, err
	}
	l.Form = answerlink.URL(base, n.Run, q.ID, tok)
	return l, nil
}

func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

// Send delivers n to its endpoint once. Its error wraps ErrTransient,
// ErrRefused or ErrUnknownEndpoint; it never holds the endpoint's URL.
func (s *Sender) Send(ctx context.Context, n Notice) error {
	ep, ok := s.Endpoint(n.Endpoint)
	if !ok {
		return fmt.Errorf("%w: %q (add it to %s on every worker, or remove it from the graph's notify:)", ErrUnknownEndpoint, n.Endpoint, Env)
	}
	links, err := s.Links(n)
	if err != nil {
		return fmt.Errorf("%w: answer links: %v", ErrRefused, err)
	}
	body, err := Body(ep.Format, n, links)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRefused, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: endpoint %s: the request cannot be made", ErrRefused, ep.Name)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, Sign(s.Secret, body, s.now()))
	req.Header.Set(IdempotencyHeader, n.Key)
	req.Header.Set(EventHeader, n.Event)
	ua := s.UserAgent
	if ua == "" {
		ua = "tether-notify/1"
	}
	req.Header.Set("User-Agent", ua)
	resp, err := s.client().Do(req)
	if err != nil {
		return s.transportError(ctx, ep, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return nil
	case c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500:
		return fmt.Errorf("%w: endpoint %s (%s) answered %s", ErrTransient, ep.Name, ep.Host(), resp.Status)
	case c >= 300 && c < 400:
		return fmt.Errorf("%w: endpoint %s (%s) answered %s, a redirect; set its URL to where it leads", ErrRefused, ep.Name, ep.Host(), resp.Status)
	default:
		return fmt.Errorf("%w: endpoint %s (%s) answered %s; check its URL and that it accepts the %s format", ErrRefused, ep.Name, ep.Host(), resp.Status, ep.Format)
	}
}

// transportError types a request that got no answer, by the store's
// rules for transient failures (blob.IsTransient), with a connection
// closed before any answer and a request that timed out (RequestTimeout,
// which the store's rules leave to their caller) counted among them; a
// certificate the worker
// does not trust is final. The message names the endpoint and its host,
// never its URL (net/url's errors hold the whole URL).
func (s *Sender) transportError(ctx context.Context, ep Endpoint, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err
	}
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		verify   *tls.CertificateVerificationError
	)
	if errors.As(cause, &unknown) || errors.As(cause, &hostname) || errors.As(cause, &verify) {
		return fmt.Errorf("%w: endpoint %s (%s): its TLS certificate is not trusted: %v", ErrRefused, ep.Name, ep.Host(), cause)
	}
	var ne net.Error
	if blob.IsTransient(cause) || errors.Is(cause, io.EOF) || (errors.As(cause, &ne) && ne.Timeout()) {
		return fmt.Errorf("%w: endpoint %s (%s): %v", ErrTransient, ep.Name, ep.Host(), cause)
	}
	return fmt.Errorf("%w: endpoint %s (%s): %v", ErrRefused, ep.Name, ep.Host(), cause)
}

// String keeps the secret, the link key and the endpoints' URLs out of
// anything that prints a sender.
func (s *Sender) String() string {
	if s == nil {
		return "notify: off"
	}
	names := make([]string, len(s.Endpoints))
	for i, ep := range s.Endpoints {
		names[i] = ep.Name + " (" + ep.Format + ", " + ep.Host() + ")"
	}
	return "notify: " + strings.Join(names, ", ")
}

// GoString is String, for %#v.
func (s *Sender) GoString() string { return s.String() }

// LogValue is String, for slog.
func (s *Sender) LogValue() slog.Value { return slog.StringValue(s.String()) }
