// Package notifytest is a webhook receiver for tests and the soak: a real
// HTTP server on loopback that checks each notice's signature, keeps what
// it got by idempotency key (as a receiver should), and can be taken down,
// brought back on the same address, or made to hold a request unanswered.
package notifytest

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/notify"
)

// Delivery is one request the receiver got.
type Delivery struct {
	Key   string
	Event string
	Body  []byte
	// Notice is the body read as a generic JSON notice.
	Notice notify.JSONNotice
	// SignatureErr is why the signature did not check (nil: it did).
	SignatureErr error
	At           time.Time
}

// Receiver is a running receiver.
type Receiver struct {
	secret []byte
	addr   string

	mu         sync.Mutex
	ln         net.Listener
	srv        *http.Server
	deliveries []Delivery
	hold       func(Delivery) bool
	release    chan struct{}
	arrived    chan Delivery
}

// Start listens on a free loopback port.
func Start(secret []byte) (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{secret: secret, addr: ln.Addr().String(), release: make(chan struct{}), arrived: make(chan Delivery, 1024)}
	r.serve(ln)
	return r, nil
}

// ListenAt starts a receiver on addr (host:port), for a receiver that
// must keep the address workers were given.
func ListenAt(secret []byte, addr string) (*Receiver, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &Receiver{secret: secret, addr: ln.Addr().String(), release: make(chan struct{}), arrived: make(chan Delivery, 1024)}
	r.serve(ln)
	return r, nil
}

func (r *Receiver) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(r.handle), ReadHeaderTimeout: 10 * time.Second}
	r.mu.Lock()
	r.ln, r.srv = ln, srv
	r.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// URL is where the receiver takes notices.
func (r *Receiver) URL() string { return "http://" + r.addr + "/hook" }

// Addr is the receiver's host:port.
func (r *Receiver) Addr() string { return r.addr }

func (r *Receiver) handle(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	d := Delivery{Key: req.Header.Get(notify.IdempotencyHeader), Event: req.Header.Get(notify.EventHeader), Body: body, At: time.Now()}
	d.SignatureErr = notify.Verify(r.secret, body, req.Header.Get(notify.SignatureHeader), time.Now(), notify.DefaultTolerance)
	_ = json.Unmarshal(body, &d.Notice)
	r.mu.Lock()
	r.deliveries = append(r.deliveries, d)
	hold, release := r.hold, r.release
	r.mu.Unlock()
	select {
	case r.arrived <- d:
	default:
	}
	if d.SignatureErr != nil {
		http.Error(w, "bad signature: "+d.SignatureErr.Error(), http.StatusUnauthorized)
		return
	}
	if hold != nil && hold(d) {
		select {
		case <-release:
		case <-req.Context().Done():
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// Arrived delivers each request as it arrives (dropped when nobody
// reads: Deliveries has them all).
func (r *Receiver) Arrived() <-chan Delivery { return r.arrived }

// Hold makes the receiver keep each request for which hold returns true
// unanswered until Release (or until its sender gives up).
func (r *Receiver) Hold(hold func(Delivery) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hold = hold
}

// Release answers every held request, and those held from now on until
// the next Hold.
func (r *Receiver) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	close(r.release)
	r.release = make(chan struct{})
	r.hold = nil
}

// Down stops listening: senders find nobody there.
func (r *Receiver) Down() {
	r.mu.Lock()
	srv := r.srv
	r.srv, r.ln = nil, nil
	r.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Up listens again on the same address.
func (r *Receiver) Up() error {
	r.mu.Lock()
	up := r.srv != nil
	r.mu.Unlock()
	if up {
		return errors.New("notifytest: the receiver is up")
	}
	var ln net.Listener
	var err error
	for range 50 { // the old socket may linger a moment
		if ln, err = net.Listen("tcp", r.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	r.serve(ln)
	return nil
}

// Close stops the receiver for good.
func (r *Receiver) Close() { r.Down() }

// Deliveries are every request so far, in arrival order.
func (r *Receiver) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.deliveries...)
}

// Notices are the deliveries by idempotency key: what a receiver that
// keeps the keys it saw counts as notices. A key with several deliveries
// is one notice sent again (its sender could not know it had arrived).
func (r *Receiver) Notices() map[string][]Delivery {
	out := map[string][]Delivery{}
	for _, d := range r.Deliveries() {
		out[d.Key] = append(out[d.Key], d)
	}
	return out
}
