package sandbox

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/tether-run/tether/internal/hostport"
	"github.com/tether-run/tether/internal/sandbox/confine"
)

// hostEntry is one line of the sandbox's /etc/hosts.
type hostEntry struct{ addr, name string }

// netPlan is how a sandbox reaches the world: proxy is the loopback
// address programs that honour the standard proxy variables use to reach
// the egress proxy (none without an allowlist); relays let the others
// (Node's fetch, for one) reach each exact host:port by its own name or
// address, which hosts maps to a loopback address of its own; model is
// where the worker's model relay is reached, if the visit has one.
type netPlan struct {
	proxy  string
	relays []confine.Relay
	hosts  []hostEntry
	model  string
}

// defaultProxyPort is where the proxy listens inside unless a relay needs
// that port; defaultModelPort likewise for the model relay.
const (
	defaultProxyPort = 3128
	defaultModelPort = 3127
)

// ModelListen is the loopback address inside a sandbox whose node allows
// allow at which its CLI reaches the worker's model relay: plain HTTP on
// 127.0.0.1, which every CLI's base URL takes and the standard NO_PROXY of
// the sandbox keeps off the proxy, at a port no exact loopback endpoint
// of the allowlist listens on.
func ModelListen(allow []hostport.Pattern) string {
	used := map[int]bool{}
	for _, p := range allow {
		if p.Exact() && (p.Host == "localhost" || p.IsAddr() && netip.MustParseAddr(p.Host) == netip.AddrFrom4([4]byte{127, 0, 0, 1})) {
			used[p.Port] = true
		}
	}
	port := defaultModelPort
	for used[port] {
		port++
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// planNetwork lays out the relays for allow: an exact loopback address
// listens as itself, localhost on both loopback addresses, an exact name
// on 127.0.0.N (N from 2) which hosts gives it; a pattern with a wildcard,
// or another address, is reached through the proxy only. model, when
// set, is the model relay's address (ModelListen), which no other
// listener takes. Without an allowlist there is a proxy only when proxy
// says so.
func planNetwork(allow []hostport.Pattern, model string, proxy bool) netPlan {
	n := netPlan{model: model}
	names := map[string]string{}
	seen := map[string]bool{model: model != ""}
	if len(allow) == 0 && !proxy {
		return n
	}
	add := func(listen, target string) {
		if !seen[listen] {
			seen[listen] = true
			n.relays = append(n.relays, confine.Relay{Listen: listen, Target: target})
		}
	}
	next := 2
	for _, p := range allow {
		if !p.Exact() {
			continue
		}
		port := strconv.Itoa(p.Port)
		if p.IsAddr() {
			a := netip.MustParseAddr(p.Host)
			if a.IsLoopback() {
				add(net.JoinHostPort(p.Host, port), p.String())
			}
			continue
		}
		if p.Host == "localhost" {
			add(net.JoinHostPort("127.0.0.1", port), p.String())
			add(net.JoinHostPort("::1", port), p.String())
			continue
		}
		addr, ok := names[p.Host]
		if !ok {
			if next > 254 {
				continue
			}
			addr = fmt.Sprintf("127.0.0.%d", next)
			next++
			names[p.Host] = addr
			n.hosts = append(n.hosts, hostEntry{addr, p.Host})
		}
		add(net.JoinHostPort(addr, port), p.String())
	}
	port := defaultProxyPort
	for seen[net.JoinHostPort("127.0.0.1", strconv.Itoa(port))] {
		port++
	}
	n.proxy = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return n
}

// env are the variables that send proxy-aware programs to the proxy. The
// sandbox's own loopback is left direct: a test server a tool starts
// inside is there, and the relays listen there.
func (n netPlan) env() []string {
	if n.proxy == "" {
		return nil
	}
	url := "http://" + n.proxy
	noProxy := "localhost,127.0.0.1,::1"
	var out []string
	for _, v := range []string{"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"} {
		out = append(out, v+"="+url)
	}
	// Node 22.21 and 24.5 and later make fetch honour the variables
	// with this; older Node reaches exact endpoints through the relays.
	return append(out, "no_proxy="+noProxy, "NO_PROXY="+noProxy, "NODE_USE_ENV_PROXY=1")
}

// apply gives the helper's arguments what the plan asks of it: the egress
// proxy's socket, the proxy's loopback address and the relays, and the
// model relay's socket and address.
func (n netPlan) apply(a *confine.Args) {
	if n.proxy != "" {
		a.Socket, a.Proxy, a.Relays = EgressSocket, n.proxy, n.relays
	}
	if n.model != "" {
		a.ModelSocket, a.Model = ModelSocket, n.model
	}
}

// proxyVars are the variables a confined program must not get from the
// worker: they would point it at the worker's own proxy settings.
var proxyVars = []string{"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY", "NODE_USE_ENV_PROXY"}

// withoutProxyVars is env without proxyVars.
func withoutProxyVars(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(proxyVars, name) {
			out = append(out, kv)
		}
	}
	return out
}
