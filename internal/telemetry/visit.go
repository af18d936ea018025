package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tether-run/tether/internal/graph"
)

// VisitSpanName is the name of Tether's span around one node visit.
const VisitSpanName = "tether.visit"

// tracerName is the instrumentation scope of Tether's own spans.
const tracerName = "github.com/tether-run/tether"

// Attribute keys of the visit span.
const (
	AttrRun       = "tether.run"
	AttrNode      = "tether.node"
	AttrVisit     = "tether.visit"
	AttrKind      = "tether.kind"
	AttrBackend   = "tether.backend"
	AttrSession   = "tether.session"
	AttrSessionID = "tether.session_id"
)

// VisitAttrs identify a visit. They are everything a visit span says:
// there is deliberately no field for a prompt, an input or an output.
type VisitAttrs struct {
	Run   string
	Node  string
	Visit int
	// Kind is the node's kind (agent, tool); optional.
	Kind    string
	Backend string
	Session graph.SessionMode
	// SessionID is the agent session the visit resumes, if known when it
	// starts; SetVisitSession records one learnt later.
	SessionID string
}

func (v VisitAttrs) attributes() []attribute.KeyValue {
	kv := []attribute.KeyValue{
		attribute.String(AttrRun, v.Run),
		attribute.String(AttrNode, v.Node),
		attribute.Int(AttrVisit, v.Visit),
		attribute.String(AttrBackend, v.Backend),
		attribute.String(AttrSession, v.Session.String()),
	}
	if v.Kind != "" {
		kv = append(kv, attribute.String(AttrKind, v.Kind))
	}
	if v.SessionID != "" {
		kv = append(kv, attribute.String(AttrSessionID, v.SessionID))
	}
	return kv
}

var endNothing = func(error) {}

// StartVisit opens the span of one node visit as a child of the span in
// ctx, which in an activity is the SDK interceptor's RunActivity span, and
// returns the context to run the visit in and the function that ends the
// span with the visit's error (nil for success). With no span in ctx
// (tracing off) it does nothing and allocates nothing.
//
// The span carries a's ids and names only (see VisitAttrs). A failed
// visit marks the span failed with the error's type, never its message.
func StartVisit(ctx context.Context, a VisitAttrs) (context.Context, func(err error)) {
	parent := trace.SpanFromContext(ctx)
	if !parent.SpanContext().IsValid() {
		return ctx, endNothing
	}
	ctx, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, VisitSpanName,
		trace.WithAttributes(a.attributes()...))
	return ctx, func(err error) {
		if err != nil {
			span.SetAttributes(attribute.String("error.type", ErrorType(err)))
			span.SetStatus(codes.Error, "")
		}
		span.End()
	}
}

// SetVisitSession records the session id a visit ran in, when it was only
// learnt during the visit (a fresh session). ctx is the one StartVisit
// returned.
func SetVisitSession(ctx context.Context, sessionID string) {
	if span := trace.SpanFromContext(ctx); sessionID != "" && span.IsRecording() {
		span.SetAttributes(attribute.String(AttrSessionID, sessionID))
	}
}

// The parts of a visit, each a child span of its tether.visit span: where
// a visit's time goes, for a trace view and for the visit benchmark
// (internal/visitbench). Like the visit span they carry no attribute of
// their own, so nothing of a prompt or an output can reach one.
const (
	// PhaseRestoreWorkspace restores the run's workspace snapshot (or
	// finds this worker holds it).
	PhaseRestoreWorkspace = "tether.visit.restore_workspace"
	// PhaseRestoreSession restores the conversation the visit continues
	// (or finds it live on this worker).
	PhaseRestoreSession = "tether.visit.restore_session"
	// PhaseRun runs the agent's CLI or the tool, confined: the sandbox's
	// start and the process's whole run.
	PhaseRun = "tether.visit.run"
	// PhasePack packs the session and puts it in the blob store.
	PhasePack = "tether.visit.pack"
	// PhaseSnapshot commits what the visit changed in the workspace and
	// puts it in the blob store.
	PhaseSnapshot = "tether.visit.snapshot"
)

// StartPhase opens the span of one part of a visit (Phase*) as a child of
// the visit span in ctx and returns the function that ends it. With no
// span in ctx (tracing off) it does nothing and allocates nothing.
func StartPhase(ctx context.Context, name string) func() {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return endPhaseNothing
	}
	_, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, name)
	return func() { span.End() }
}

var endPhaseNothing = func() {}
