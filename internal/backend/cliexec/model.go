package cliexec

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/modelrelay"
	"github.com/tether-run/tether/internal/sandbox"
)

// BudgetGrace is how long a CLI may go on after the relay refused its
// model call for a spent budget (to print its error and write its
// session) before the executor ends it.
const BudgetGrace = 10 * time.Second

// modelRoute is how one visit's CLI reaches its model: through the
// worker's model relay (internal/modelrelay), which holds the key, when
// the backend has an endpoint to relay to. A nil route leaves the CLI its
// own default endpoint, and gives it no key.
type modelRoute struct {
	relay *modelrelay.Relay
	// in is where a confined CLI reaches the relay inside its sandbox
	// (zero: on the worker's loopback).
	in  sandbox.ModelRelay
	dir string
	// baseURL and key are what the CLI is given.
	baseURL, key string

	mu      sync.Mutex
	refused time.Time
}

// upstream is the endpoint the visit's calls go to: the worker's, else
// the CLI's own as its facts know it.
func (c CLI) upstream() string {
	if c.BaseURL != "" {
		return c.BaseURL
	}
	return c.Facts.ModelURL
}

// route starts the visit's model relay: on a Unix socket the sandbox binds
// where the CLI is network-confined, else on the worker's loopback. The
// relay counts the visit's calls against req's limits and reports the
// usage it reads to onUsage.
func (c CLI) route(ctx context.Context, req agent.Request, onUsage func(agent.Usage)) (*modelRoute, error) {
	up := c.upstream()
	if up == "" {
		return nil, nil
	}
	r := &modelRoute{}
	var (
		ln   net.Listener
		addr string
		err  error
	)
	if c.Sandbox.ConfinesNetwork() {
		if r.dir, err = c.Sandbox.SocketDir(); err != nil {
			return nil, fmt.Errorf("%s: %w", c.Backend, err)
		}
		sock := filepath.Join(r.dir, "model.sock")
		if ln, err = net.Listen("unix", sock); err != nil {
			r.close()
			return nil, fmt.Errorf("%s: the model relay: %w", c.Backend, err)
		}
		if err := os.Chmod(sock, 0o600); err != nil {
			ln.Close()
			r.close()
			return nil, fmt.Errorf("%s: the model relay: %w", c.Backend, err)
		}
		addr = sandbox.ModelListen(sandbox.VisitOf(ctx).Allowed())
		r.in = sandbox.ModelRelay{Socket: sock, Listen: addr}
	} else {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("%s: the model relay: %w", c.Backend, err)
		}
		addr = ln.Addr().String()
	}
	r.relay, err = modelrelay.Start(modelrelay.Config{
		Upstream: up, Key: c.APIKey, Wire: c.Facts.Wire, Limits: req.Limits, OnUsage: onUsage,
	}, ln)
	if err != nil {
		r.close()
		return nil, fmt.Errorf("%s: %w", c.Backend, err)
	}
	r.baseURL, r.key = r.relay.BaseURL(addr), r.relay.Placeholder()
	return r, nil
}

// close stops the relay and removes its socket.
func (r *modelRoute) close() {
	if r == nil {
		return
	}
	if r.relay != nil {
		_ = r.relay.Close()
	}
	if r.dir != "" {
		_ = os.RemoveAll(r.dir)
	}
}

// setCost tells the relay the CLI's price of the visit so far.
func (r *modelRoute) setCost(usd float64) {
	if r != nil && r.relay != nil {
		r.relay.SetCost(usd)
	}
}

// stopped says which budget the relay refused a call for, or "".
func (r *modelRoute) stopped() string {
	if r == nil || r.relay == nil {
		return ""
	}
	return r.relay.Stopped()
}

// usage is what the relay read in the model's answers.
func (r *modelRoute) usage() agent.Usage {
	if r == nil || r.relay == nil {
		return agent.Usage{}
	}
	return r.relay.Usage()
}

// stop is a Spec.Stop that ends the CLI once grace has passed since the
// relay refused a call for a spent budget, should the CLI not end on its
// own (retrying, or going on without its model).
func (r *modelRoute) stop(grace time.Duration) func() bool {
	return func() bool {
		if r.stopped() == "" {
			return false
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.refused.IsZero() {
			r.refused = time.Now()
		}
		return time.Since(r.refused) >= grace
	}
}

// environ keeps the relay on the worker's loopback off any proxy the
// CLI's environment names: the worker's own proxy settings reach an
// unconfined CLI, and a NO_PROXY without the loopback would send the
// CLI's model calls to that proxy.
func (r *modelRoute) environ(env []string) []string {
	if r == nil || r.in.Socket != "" {
		return env
	}
	proxied := false
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch strings.ToLower(name) {
		case "http_proxy", "https_proxy", "all_proxy":
			proxied = true
		}
	}
	if !proxied {
		return env
	}
	for _, name := range []string{"NO_PROXY", "no_proxy"} {
		have := ""
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, name+"="); ok {
				have = v
			}
		}
		if have != "" {
			have += ","
		}
		env = setEnv(env, name, have+"127.0.0.1,localhost")
	}
	return env
}

// withMetered is the usage of a visit: what the CLI reported, each token
// count raised to what the relay read where the CLI reported less (a CLI
// that stopped on an error may report nothing of the calls it made). The
// cost stays the CLI's own.
func withMetered(reported, metered agent.Usage) agent.Usage {
	if metered.Tokens() == 0 {
		return reported
	}
	u := reported
	u.InputTokens = max(u.InputTokens, metered.InputTokens)
	u.OutputTokens = max(u.OutputTokens, metered.OutputTokens)
	u.CacheReadTokens = max(u.CacheReadTokens, metered.CacheReadTokens)
	u.CacheWriteTokens = max(u.CacheWriteTokens, metered.CacheWriteTokens)
	return u
}

// liveUsage passes a visit's progress on with the relay's token counts,
// which grow with every answer the model streams, in place of the CLI's
// where they are ahead: the console's "Now" and `run --follow` show the
// spending the budget is checked against.
type liveUsage struct {
	report func(agent.Progress)
	// priced tells the relay the CLI's own price of the visit so far.
	priced func(float64)

	mu      sync.Mutex
	last    agent.Progress
	metered agent.Usage
}

// progress is what the CLI's output reader learnt.
func (l *liveUsage) progress(p agent.Progress) {
	l.mu.Lock()
	l.last = p
	p.Usage = withMetered(p.Usage, l.metered)
	priced := l.priced
	l.mu.Unlock()
	if priced != nil && p.Usage.CostUSD > 0 {
		priced(p.Usage.CostUSD)
	}
	l.report(p)
}

// usage is what the relay read.
func (l *liveUsage) usage(u agent.Usage) {
	l.mu.Lock()
	l.metered = u
	p := l.last
	p.Usage = withMetered(p.Usage, u)
	l.mu.Unlock()
	l.report(p)
}
