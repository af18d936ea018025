package confine

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// relayListener is a loopback listener inside the sandbox: a connection
// to it is carried to socket (the egress proxy's, or the model relay's),
// as it is (target empty: the client speaks to the server behind the
// socket itself) or through a CONNECT to target.
type relayListener struct {
	net.Listener
	target, socket string
}

// serveRelay accepts until the sandbox ends.
func serveRelay(l relayListener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go relayConn(c, l.socket, l.target)
	}
}

func relayConn(c net.Conn, socket, target string) {
	defer c.Close()
	up, err := net.DialTimeout("unix", socket, 10*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	if target != "" {
		if err := connect(up, target); err != nil {
			return
		}
	}
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(up, c)
	go cp(c, up)
	<-done
	<-done
}

// connect opens a tunnel to target over the proxy connection up: a
// CONNECT request, and a 200 answer whose head it reads to the end (one
// byte at a time, so that nothing of the tunnel is read with it).
func connect(up net.Conn, target string) error {
	if _, err := fmt.Fprintf(up, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
		return err
	}
	_ = up.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer up.SetReadDeadline(time.Time{})
	r := bufio.NewReaderSize(&oneByte{up}, 16)
	status, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if f := strings.Fields(status); len(f) < 2 || f[1] != "200" {
		return fmt.Errorf("proxy refused %s: %s", target, strings.TrimSpace(status))
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if line == "\r\n" || line == "\n" {
			return nil
		}
	}
}

// oneByte reads at most one byte per call, so that a buffered reader over
// it never takes bytes past what it was asked for.
type oneByte struct{ r io.Reader }

func (o *oneByte) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}
