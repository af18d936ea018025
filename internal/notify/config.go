package notify

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/hostport"
)

// Variables the workers read (internal/config).
const (
	// Env names the endpoints: a file (YAML or JSON), the same document
	// inline, or NAME=[FORMAT+]URL entries separated by spaces or commas.
	Env = "TETHER_NOTIFY"
	// SecretEnv is the key every request is signed with.
	SecretEnv = "TETHER_NOTIFY_SECRET"
	// ConsoleURLEnv is the console's public base URL, for the links in a
	// notice (the console's own page of the run, answer links).
	ConsoleURLEnv = "TETHER_CONSOLE_URL"
)

// Formats of a notice's body.
const (
	FormatJSON  = "json"
	FormatSlack = "slack"
	FormatTeams = "teams"
)

// Formats lists every format, in documentation order.
func Formats() []string { return []string{FormatJSON, FormatSlack, FormatTeams, FormatGitHub} }

// Endpoint is one receiver of notices.
type Endpoint struct {
	// Name names the endpoint in graphs' notify: routes and in logs; it is
	// part of each notice's idempotency key.
	Name string `json:"name" yaml:"name"`
	// URL is where notices are POSTed. It is a secret for Slack and Teams
	// and is never logged.
	URL string `json:"url" yaml:"url"`
	// Format is FormatJSON (the default), FormatSlack or FormatTeams.
	Format string `json:"format,omitempty" yaml:"format,omitempty"`
	// Events are the events the endpoint gets (graph.NotifyEvents); empty:
	// all.
	Events []string `json:"events,omitempty" yaml:"events,omitempty"`
	// Insecure allows a plain http:// URL to a host other than this
	// machine (a notice holds answer links, which answer questions).
	Insecure bool `json:"insecure,omitempty" yaml:"insecure,omitempty"`
}

// Wants reports whether the endpoint's own filter lets event through.
func (e Endpoint) Wants(event string) bool {
	return len(e.Events) == 0 || slices.Contains(e.Events, event)
}

// Host is what logs and messages show of the endpoint: its URL's host.
func (e Endpoint) Host() string {
	u, err := url.Parse(e.URL)
	if err != nil {
		return "?"
	}
	return u.Host
}

// MinSecret is the shortest TETHER_NOTIFY_SECRET accepted.
const MinSecret = 16

// document is TETHER_NOTIFY's file form.
type document struct {
	Endpoints []Endpoint `json:"endpoints" yaml:"endpoints"`
}

// ParseEndpoints reads TETHER_NOTIFY's value: "" (no endpoints); a YAML
// or JSON document inline ("{endpoints: [...]}"); the path of a file that
// holds one; or entries NAME=[FORMAT+]URL separated by spaces or commas
// (ops=slack+https://hooks.slack.com/…). Every endpoint is checked:
// names valid and distinct, an https URL (http only to this machine, or
// with insecure), a known format and known events.
func ParseEndpoints(value string) ([]Endpoint, error) {
	value = strings.TrimSpace(value)
	var (
		eps []Endpoint
		err error
	)
	switch {
	case value == "":
		return nil, nil
	case strings.HasPrefix(value, "{"):
		eps, err = decode([]byte(value), Env)
	case isPath(value):
		var data []byte
		if data, err = os.ReadFile(value); err != nil {
			return nil, fmt.Errorf("%s=%s: %w; give the file of endpoints, or NAME=URL entries", Env, value, err)
		}
		eps, err = decode(data, value)
	default:
		eps, err = shorthand(value)
	}
	if err != nil {
		return nil, err
	}
	return eps, check(eps)
}

// isPath tells a file's path from shorthand entries, which always hold
// "=" before their URL's "://".
func isPath(v string) bool {
	if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") {
		return true
	}
	eq, scheme := strings.Index(v, "="), strings.Index(v, "://")
	return eq < 0 && scheme < 0
}

func decode(data []byte, where string) ([]Endpoint, error) {
	var doc document
	if err := yaml.NewDecoder(bytes.NewReader(data), yaml.DisallowUnknownField()).Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %s; a file of endpoints is `endpoints: [{name: ops, url: https://…, format: slack, events: [waiting]}]`", where, yaml.FormatError(err, false, false))
	}
	if len(doc.Endpoints) == 0 {
		return nil, fmt.Errorf("%s: no endpoints; list them under `endpoints`", where)
	}
	return doc.Endpoints, nil
}

func shorthand(v string) ([]Endpoint, error) {
	var out []Endpoint
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' }) {
		name, rest, ok := strings.Cut(f, "=")
		if !ok || strings.Contains(name, "://") {
			return nil, fmt.Errorf("%s: entry %q has no name; write NAME=URL or NAME=FORMAT+URL, e.g. ops=slack+https://hooks.slack.com/services/…", Env, redactEntry(f))
		}
		ep := Endpoint{Name: name, URL: rest}
		if rest == FormatGitHub {
			ep.Format, ep.URL = FormatGitHub, ""
		}
		for _, format := range Formats() {
			if u, ok := strings.CutPrefix(rest, format+"+"); ok {
				ep.Format, ep.URL = format, u
			}
		}
		out = append(out, ep)
	}
	return out, nil
}

// redactEntry keeps an entry's name and its URL's scheme and host.
func redactEntry(s string) string {
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		return u.Scheme + "://" + u.Host + "/…"
	}
	if i := strings.Index(s, "://"); i >= 0 {
		return s[:i] + "://…"
	}
	return s
}

func check(eps []Endpoint) error {
	var errs []error
	seen := map[string]bool{}
	for i := range eps {
		ep := &eps[i]
		what := fmt.Sprintf("%s: endpoint %q", Env, ep.Name)
		if err := graph.ValidEndpointName(ep.Name); err != nil {
			errs = append(errs, fmt.Errorf("%s: endpoint #%d: %v", Env, i+1, err))
		}
		if seen[ep.Name] {
			errs = append(errs, fmt.Errorf("%s: two endpoints are named %q; name each once", Env, ep.Name))
		}
		seen[ep.Name] = true
		if ep.Format == "" {
			ep.Format = FormatJSON
		}
		if !slices.Contains(Formats(), ep.Format) {
			errs = append(errs, fmt.Errorf("%s: format %q; want one of %s", what, ep.Format, strings.Join(Formats(), ", ")))
		}
		for _, ev := range ep.Events {
			if !slices.Contains(graph.NotifyEvents(), ev) {
				errs = append(errs, fmt.Errorf("%s: event %q; the events are %s", what, ev, strings.Join(graph.NotifyEvents(), ", ")))
			}
		}
		if ep.Format == FormatGitHub {
			if ep.URL != "" {
				errs = append(errs, fmt.Errorf("%s: a github endpoint posts on the run's issue with the workers' GitHub credentials and has no url; write %s=github", what, ep.Name))
			}
			continue
		}
		if err := checkURL(ep); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	return errors.Join(errs...)
}

func checkURL(ep *Endpoint) error {
	u, err := url.Parse(ep.URL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return errors.New("its url is not an http(s) URL with a host")
	}
	if u.User != nil {
		return errors.New("its url holds a user name or password; put credentials in the URL's path or query as the receiver documents, not before the host")
	}
	if u.Scheme == "http" && !ep.Insecure && !hostport.Loopback(u.Hostname()) {
		return fmt.Errorf("its url is plain http to %s; notices hold answer links, so use https (or insecure: true in a file of endpoints, on a network you trust)", u.Host)
	}
	return nil
}
