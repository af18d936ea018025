package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/hostport"
)

// Timeouts of the proxy: reading a request's head, resolving a name,
// opening a connection upstream.
const (
	headTimeout    = 30 * time.Second
	resolveTimeout = 10 * time.Second
	dialTimeout    = 15 * time.Second
	// maxNotes bounds the distinct refusals one visit keeps.
	maxNotes = 32
)

// Listener is one visit's proxy: it serves HTTP proxy requests on a Unix
// socket that only that visit's sandbox sees, allowing Allow and refusing
// what the guard refuses.
type Listener struct {
	guard *Guard
	allow []hostport.Pattern
	ln    net.Listener
	path  string
	log   *slog.Logger

	mu      sync.Mutex
	notes   []string
	dropped int
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// Listen serves a visit's proxy on a Unix socket at path, readable and
// writable by its owner only, allowing the host:port patterns of allow.
func (g *Guard) Listen(path string, allow []hostport.Pattern, log *slog.Logger) (*Listener, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("egress: listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress: %w", err)
	}
	l := &Listener{guard: g, allow: slices.Clone(allow), ln: ln, path: path, log: log, conns: map[net.Conn]struct{}{}}
	l.wg.Add(1)
	go l.serve()
	return l, nil
}

// Refused lists what the proxy refused, once each, in order: the request
// and why, never any data.
func (l *Listener) Refused() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.notes)
	if l.dropped > 0 {
		out = append(out, fmt.Sprintf("and %d more refusals", l.dropped))
	}
	return out
}

// Close stops the proxy and ends every connection it still carries.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	err := l.ln.Close()
	for c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
	_ = os.Remove(l.path)
	return err
}

func (l *Listener) serve() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		if !l.track(c) {
			c.Close()
			return
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer l.untrack(c)
			l.handle(c)
		}()
	}
}

func (l *Listener) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.conns[c] = struct{}{}
	return true
}

func (l *Listener) untrack(c net.Conn) {
	c.Close()
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

func (l *Listener) note(what, why string) {
	n := what + " refused: " + why
	l.mu.Lock()
	defer l.mu.Unlock()
	if slices.Contains(l.notes, n) {
		return
	}
	if len(l.notes) >= maxNotes {
		l.dropped++
		return
	}
	l.notes = append(l.notes, n)
	l.log.Warn("a confined process was refused a connection", "request", what, "why", why)
}

// handle serves one client connection: one CONNECT tunnel, or one plain
// request (the connection closes after it, so that every request is
// checked on its own).
func (l *Listener) handle(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(headTimeout))
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	target := req.Host
	if req.Method != http.MethodConnect {
		if req.URL.Scheme != "http" || req.URL.Host == "" {
			reply(c, http.StatusBadRequest, "tether egress: send an absolute http:// URL, or CONNECT host:port for https")
			return
		}
		target = req.URL.Host
		if req.URL.Port() == "" {
			target = net.JoinHostPort(req.URL.Hostname(), "80")
		}
	}
	what := req.Method + " " + target
	host, portStr, err := net.SplitHostPort(target)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil || port < 1 || port > 65535 {
		reply(c, http.StatusBadRequest, "tether egress: want host:port")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	addrs, why, err := l.route(ctx, host, port)
	cancel()
	switch {
	case why != "":
		l.note(what, why)
		reply(c, http.StatusForbidden, "tether egress: "+target+" refused: "+why)
		return
	case err != nil:
		reply(c, http.StatusBadGateway, "tether egress: "+err.Error())
		return
	}
	up, err := dial(addrs)
	if err != nil {
		reply(c, http.StatusBadGateway, "tether egress: "+target+": "+err.Error())
		return
	}
	if !l.track(up) {
		up.Close()
		return
	}
	defer l.untrack(up)
	if req.Method == http.MethodConnect {
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		if n := br.Buffered(); n > 0 {
			b, _ := br.Peek(n)
			if _, err := up.Write(b); err != nil {
				return
			}
		}
		splice(c, up)
		return
	}
	req.RequestURI = ""
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.Close = true
	if err := req.Write(up); err != nil {
		return
	}
	_, _ = io.Copy(c, up)
}

// route decides where host:port may be reached: the addresses to dial, or
// why it is refused.
func (l *Listener) route(ctx context.Context, host string, port int) ([]netip.AddrPort, string, error) {
	host = strings.Trim(host, "[]")
	if why := l.guard.refuseName(host, port); why != "" {
		return nil, why, nil
	}
	var match *hostport.Pattern
	for i := range l.allow {
		if l.allow[i].Matches(host, port) && (match == nil || l.allow[i].Exact() && !match.Exact()) {
			match = &l.allow[i]
		}
	}
	if match == nil {
		return nil, "not in the node's network allowlist", nil
	}
	var ips []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{a.Unmap()}
	} else {
		got, err := l.guard.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, "", fmt.Errorf("resolve %s: %w", host, err)
		}
		for _, a := range got {
			ips = append(ips, a.Unmap())
		}
	}
	var out []netip.AddrPort
	for _, a := range ips {
		// One refused address refuses the name: a name that points at
		// the worker's services is no way around their refusal.
		if why := l.guard.refuseAddr(a, port, *match); why != "" {
			return nil, why, nil
		}
		out = append(out, netip.AddrPortFrom(a, uint16(port)))
	}
	if len(out) == 0 {
		return nil, "", fmt.Errorf("%s has no address", host)
	}
	return out, "", nil
}

func dial(addrs []netip.AddrPort) (net.Conn, error) {
	var errs []error
	d := net.Dialer{Timeout: dialTimeout}
	for _, a := range addrs {
		c, err := d.Dial("tcp", a.String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// splice copies both ways until either side is done, then closes both.
func splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
}

func reply(c net.Conn, code int, msg string) {
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n",
		code, http.StatusText(code), len(msg)+1, msg)
}
