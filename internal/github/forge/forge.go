// Package forge is the workers' side of GitHub: it holds the credentials
// (a GitHub App's key, from which it mints installation tokens with
// ghinstallation, or a token) and uses them only here, in the worker's own
// process: to clone a repository into a run's workspace, to push a run's
// commits to its branch, and to call GitHub's REST API (comments, pull
// requests, reviews, commit statuses). No credential is ever written to
// disk, put in a process's environment or command line, a git remote, a
// log line, a blob or a page: git runs in process (go-git) with the token
// given to its transport, and API calls go through the token's transport.
package forge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gh "github.com/google/go-github/v88/github"
)

// Variables the workers read (internal/config).
const (
	// TokenEnv is a token (a fine-grained personal access token, or
	// GitHub Actions' GITHUB_TOKEN) used when no App is configured.
	TokenEnv = "TETHER_GITHUB_TOKEN"
	// AppIDEnv and AppKeyEnv are a GitHub App's id and the path of its
	// private key (PEM): every installation's token is minted from them.
	AppIDEnv  = "TETHER_GITHUB_APP_ID"
	AppKeyEnv = "TETHER_GITHUB_APP_KEY"
	// APIEnv is the REST API's base (GitHub Enterprise Server:
	// https://HOST/api/v3/); GitEnv the base of repositories' clone URLs.
	APIEnv = "TETHER_GITHUB_API_URL"
	GitEnv = "TETHER_GITHUB_URL"
)

// Defaults of APIEnv and GitEnv.
const (
	DefaultAPI = "https://api.github.com/"
	DefaultGit = "https://github.com"
)

// Config is how a worker reaches GitHub.
type Config struct {
	API, Git string
	// Token, or AppID with AppKey (PEM bytes).
	Token  string
	AppID  int64
	AppKey []byte
	// Transport carries every request (nil: http.DefaultTransport).
	Transport http.RoundTripper
	Logger    *slog.Logger
}

// ErrNoCredentials is a worker asked to act on GitHub without any.
var ErrNoCredentials = errors.New("forge: this worker has no GitHub credentials")

// Forge reaches GitHub with one worker's credentials.
type Forge struct {
	api, git *url.URL
	token    string
	apps     *ghinstallation.AppsTransport
	base     http.RoundTripper
	log      *slog.Logger

	mu       sync.Mutex
	installs map[int64]*ghinstallation.Transport
}

// New checks the configuration; it returns nil and no error when there
// are no credentials (a worker without GitHub).
func New(c Config) (*Forge, error) {
	if c.Token == "" && c.AppID == 0 && len(c.AppKey) == 0 {
		return nil, nil
	}
	if c.API == "" {
		c.API = DefaultAPI
	}
	if c.Git == "" {
		c.Git = DefaultGit
	}
	api, err := url.Parse(c.API)
	if err != nil || api.Host == "" || (api.Scheme != "https" && api.Scheme != "http") {
		return nil, fmt.Errorf("%s=%q: want the REST API's base URL, e.g. %s", APIEnv, c.API, DefaultAPI)
	}
	if !strings.HasSuffix(api.Path, "/") {
		api.Path += "/"
	}
	git, err := url.Parse(c.Git)
	if err != nil || git.Host == "" || (git.Scheme != "https" && git.Scheme != "http") || git.User != nil {
		return nil, fmt.Errorf("%s=%q: want the base of clone URLs, e.g. %s", GitEnv, c.Git, DefaultGit)
	}
	if c.Transport == nil {
		c.Transport = http.DefaultTransport
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	f := &Forge{api: api, git: git, token: c.Token, base: c.Transport, log: c.Logger, installs: map[int64]*ghinstallation.Transport{}}
	switch {
	case c.AppID != 0 && len(c.AppKey) > 0:
		if f.apps, err = ghinstallation.NewAppsTransport(c.Transport, c.AppID, c.AppKey); err != nil {
			return nil, fmt.Errorf("%s: the GitHub App's private key cannot be read: %v; give the path of the PEM file GitHub made for the App", AppKeyEnv, err)
		}
		f.apps.BaseURL = strings.TrimSuffix(api.String(), "/")
	case c.AppID != 0 || len(c.AppKey) > 0:
		return nil, fmt.Errorf("a GitHub App needs both %s and %s", AppIDEnv, AppKeyEnv)
	}
	return f, nil
}

// String shows how the forge authenticates, never a credential.
func (f *Forge) String() string {
	if f == nil {
		return "github: off"
	}
	if f.apps != nil {
		return fmt.Sprintf("github: app %d at %s", f.apps.AppID(), f.api.Host)
	}
	return "github: token at " + f.api.Host
}

// LogValue is String, for slog.
func (f *Forge) LogValue() slog.Value { return slog.StringValue(f.String()) }

// tokenSource is the credential of one installation (0: the token).
type tokenSource interface {
	Token(ctx context.Context) (string, error)
}

type staticToken string

func (t staticToken) Token(context.Context) (string, error) { return string(t), nil }

func (f *Forge) source(installation int64) (tokenSource, error) {
	if f == nil {
		return nil, ErrNoCredentials
	}
	if f.apps == nil || installation == 0 {
		if f.token == "" {
			return nil, fmt.Errorf("%w: the delivery came through no App installation and %s is not set", ErrNoCredentials, TokenEnv)
		}
		return staticToken(f.token), nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.installs[installation]
	if !ok {
		t = ghinstallation.NewFromAppsTransport(f.apps, installation)
		f.installs[installation] = t
	}
	return t, nil
}

// Client is a REST client acting as installation (0: the token).
func (f *Forge) Client(installation int64) (*gh.Client, error) {
	src, err := f.source(installation)
	if err != nil {
		return nil, err
	}
	api := f.api.String()
	return gh.NewClient(
		gh.WithHTTPClient(&http.Client{Timeout: 30 * time.Second, Transport: &bearer{src: src, base: f.base}}),
		gh.WithURLs(&api, &api),
		gh.WithUserAgent("tether"),
	)
}

// bearer authenticates each request with the source's current token.
type bearer struct {
	src  tokenSource
	base http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := b.src.Token(r.Context())
	if err != nil {
		return nil, fmt.Errorf("forge: mint a token: %w", err)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "token "+tok)
	return b.base.RoundTrip(r)
}

// gitAuth is what git's smart HTTP transport sends: the installation's
// token as the password of x-access-token, as GitHub documents for Apps
// (a token works the same way).
func (f *Forge) gitAuth(ctx context.Context, installation int64) (*githttp.BasicAuth, error) {
	src, err := f.source(installation)
	if err != nil {
		return nil, err
	}
	tok, err := src.Token(ctx)
	if err != nil {
		return nil, fmt.Errorf("forge: mint a token: %w", err)
	}
	return &githttp.BasicAuth{Username: "x-access-token", Password: tok}, nil
}

// CloneURL is repo's clone URL: from the configured base only, never from
// a payload, so a credential goes nowhere else.
func (f *Forge) CloneURL(repo string) string {
	u := *f.git
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + repo + ".git"
	return u.String()
}

func split(repo string) (owner, name string) {
	owner, name, _ = strings.Cut(repo, "/")
	return owner, name
}
