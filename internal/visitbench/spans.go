package visitbench

import (
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/tether-run/tether/internal/telemetry"
)

// Receiver is an OTLP/HTTP trace endpoint on loopback that keeps the
// spans workers export to it, to split visits by.
type Receiver struct {
	URL string
	srv *http.Server

	mu    sync.Mutex
	spans map[string]*rawSpan // by span id
}

type rawSpan struct {
	name, parent, run string
	start, end        time.Time
}

// Receive starts a receiver; Close stops it.
func Receive() (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{URL: "http://" + ln.Addr().String(), spans: map[string]*rawSpan{}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// Close stops the receiver.
func (r *Receiver) Close() { _ = r.srv.Close() }

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 64<<20))
	var msg collectortrace.ExportTraceServiceRequest
	if err != nil || req.URL.Path != "/v1/traces" || proto.Unmarshal(body, &msg) != nil {
		http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				raw := &rawSpan{
					name: s.GetName(), parent: hex.EncodeToString(s.GetParentSpanId()),
					start: time.Unix(0, int64(s.GetStartTimeUnixNano())), end: time.Unix(0, int64(s.GetEndTimeUnixNano())),
				}
				for _, kv := range s.GetAttributes() {
					switch kv.GetKey() {
					case "temporalWorkflowID", telemetry.AttrRun:
						raw.run = kv.GetValue().GetStringValue()
					}
				}
				r.spans[hex.EncodeToString(s.GetSpanId())] = raw
			}
		}
	}
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// Spans are the spans received so far of the runs named, each with its
// run: its own, or its nearest ancestor's.
func (r *Receiver) Spans(runs map[string]bool) map[string][]Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]Span{}
	for _, s := range r.spans {
		run := s.run
		for p, hops := s, 0; run == "" && hops < 16; hops++ {
			if p = r.spans[p.parent]; p == nil {
				break
			}
			run = p.run
		}
		if runs[run] {
			out[run] = append(out[run], Span{Name: s.name, Start: s.start, End: s.end, Run: run})
		}
	}
	for _, ss := range out {
		slices.SortFunc(ss, func(a, b Span) int { return a.Start.Compare(b.Start) })
	}
	return out
}
