package testenv

import (
	"net"
	"sync/atomic"
)

// CountAccepts accepts connections on l, closing each at once and adding
// one to n, until l is closed: a stand-in for a service that a test shows
// nothing reaches.
func CountAccepts(l net.Listener, n *atomic.Int64) {
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
}
