package akotel

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/akgentic/akgentic-go/agent/llm"
)

// The attributes of a tool call's approval events.
const (
	keyApprovalBy      = attribute.Key("akgentic.approval.by")
	keyApprovalReason  = attribute.Key("akgentic.approval.reason")
	keyApprovalExpired = attribute.Key("akgentic.approval.expired")
	keyApprovalDue     = attribute.Key("akgentic.approval.deadline")
)

// approval records a tool call's approval. Requested: an event of the
// call's execute_tool span, which ends there, the call not run (without
// an error: the run paused). Granted: a new execute_tool span in the turn
// that goes on, with the event, ended by the call's return. Denied: an
// event of that turn's span (the call never runs).
func (s *Subscriber) approval(mb *member, tu *turn, ev any, ts time.Time) {
	switch e := ev.(type) {
	case llm.ApprovalRequestedEvent:
		attrs := []attribute.KeyValue{semconv.GenAIToolNameKey.String(e.ToolName), semconv.GenAIToolCallIDKey.String(e.ToolCallID)}
		if !e.Deadline.IsZero() {
			attrs = append(attrs, keyApprovalDue.String(e.Deadline.Format(time.RFC3339)))
		}
		sp, ok := tu.tools[e.ToolCallID]
		if !ok {
			tu.span.AddEvent("approval requested", trace.WithTimestamp(ts), trace.WithAttributes(attrs...))
			return
		}
		sp.AddEvent("approval requested", trace.WithTimestamp(ts), trace.WithAttributes(attrs...))
		sp.SetStatus(codes.Unset, "")
		sp.End(trace.WithTimestamp(ts))
		delete(tu.tools, e.ToolCallID)
	case llm.ApprovalGrantedEvent:
		s.toolCall(mb, tu, llm.ToolCallEvent{RunID: e.RunID, ToolName: e.ToolName, ToolCallID: e.ToolCallID}, ts)
		tu.tools[e.ToolCallID].AddEvent("approval granted", trace.WithTimestamp(ts),
			trace.WithAttributes(s.decision(e.By, e.Reason)...))
	case llm.ApprovalDeniedEvent:
		attrs := append(s.decision(e.By, e.Reason), semconv.GenAIToolNameKey.String(e.ToolName), semconv.GenAIToolCallIDKey.String(e.ToolCallID),
			keyApprovalExpired.Bool(e.Expired))
		tu.span.AddEvent("approval denied", trace.WithTimestamp(ts), trace.WithAttributes(attrs...))
	}
}

// decision is who decided, and why when the content is captured.
func (s *Subscriber) decision(by, reason string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{keyApprovalBy.String(by)}
	if s.content && reason != "" {
		attrs = append(attrs, keyApprovalReason.String(reason))
	}
	return attrs
}
