// Package telemetrytest receives what Tether's telemetry exports, for
// tests: an OTLP trace endpoint on loopback that records the spans sent to
// it, over HTTP or gRPC.
package telemetrytest

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Receiver records the spans exported to it.
type Receiver struct {
	// URL is the endpoint to put in OTEL_EXPORTER_OTLP_ENDPOINT.
	URL string

	mu    sync.Mutex
	spans map[string]string
}

// HTTP starts an OTLP/HTTP (protobuf) receiver, stopped when the test ends.
func HTTP(t testing.TB) *Receiver {
	r := &Receiver{spans: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var msg collectortrace.ExportTraceServiceRequest
		if req.URL.Path != "/v1/traces" || proto.Unmarshal(body, &msg) != nil {
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		r.add(&msg)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// GRPC starts an OTLP/gRPC receiver, stopped when the test ends.
func GRPC(t testing.TB) *Receiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen for OTLP/gRPC: %v", err)
	}
	r := &Receiver{spans: map[string]string{}, URL: "http://" + ln.Addr().String()}
	gs := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(gs, traceService{r: r})
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return r
}

// Spans maps the name of each span received to its service.name.
func (r *Receiver) Spans() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]string, len(r.spans))
	for k, v := range r.spans {
		out[k] = v
	}
	return out
}

func (r *Receiver) add(msg *collectortrace.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range msg.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans[s.GetName()] = service
			}
		}
	}
}

type traceService struct {
	collectortrace.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traceService) Export(_ context.Context, msg *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	s.r.add(msg)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}
