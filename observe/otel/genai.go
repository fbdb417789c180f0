package akotel

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/akgentic/akgentic-go/agent/llm"
)

// modelAttrs are the metric attributes of a member's calls to one model,
// made once: an attribute set costs allocations.
type modelAttrs struct {
	call, input, output, cost metric.MeasurementOption
}

// modelAttrs returns the attributes of the member's calls to model.
func (mb *member) modelAttrs(provider, model string) *modelAttrs {
	key := provider + "\x00" + model
	if a, ok := mb.models[key]; ok {
		return a
	}
	if mb.models == nil {
		mb.models = map[string]*modelAttrs{}
	}
	name := mb.addr.Name()
	call := []attribute.KeyValue{keyOperation.String("chat"), keyProvider.String(provider),
		keyRequestModel.String(model), keyAgentName.String(name)}
	a := &modelAttrs{
		call:   metric.WithAttributeSet(attribute.NewSet(call...)),
		input:  metric.WithAttributeSet(attribute.NewSet(append(call, keyTokenType.String("input"))...)),
		output: metric.WithAttributeSet(attribute.NewSet(append(call, keyTokenType.String("output"))...)),
		cost:   metric.WithAttributeSet(attribute.NewSet(keyRequestModel.String(model), keyAgentName.String(name))),
	}
	mb.models[key] = a
	return a
}

// usage records one model call: a span under the turn and its metrics.
func (s *Subscriber) usage(mb *member, tu *turn, e llm.UsageEvent, ts time.Time) {
	agentName := mb.addr.Name()
	ctx := context.Background()
	ma := mb.modelAttrs(e.ProviderName, e.ModelName)
	s.inst.tokens.Record(ctx, int64(e.InputTokens), ma.input)
	s.inst.tokens.Record(ctx, int64(e.OutputTokens), ma.output)
	s.inst.cost.Add(ctx, e.Cost, ma.cost)
	if tu == nil {
		if e.Latency > 0 {
			s.inst.modelDuration.Record(ctx, e.Latency.Seconds(), ma.call)
		}
		return
	}
	// The call started Latency before its record, but not before the
	// record that preceded it (the record clock is coarse: 1 ms).
	start := tu.mark
	if e.Latency > 0 && ts.Add(-e.Latency).After(start) {
		start = ts.Add(-e.Latency)
	}
	s.inst.modelDuration.Record(ctx, ts.Sub(start).Seconds(), ma.call)
	attrs := make([]attribute.KeyValue, 0, 16)
	attrs = append(attrs,
		keyOperation.String("chat"), keySystem.String(e.ProviderName), keyProvider.String(e.ProviderName),
		keyRequestModel.String(e.ModelName), keyResponseMod.String(e.ModelName),
		keyInputTokens.Int(e.InputTokens), keyOutputTokens.Int(e.OutputTokens),
		keyAgentName.String(agentName), keyAgentID.String(mb.static[3].Value.AsString()), // the actor id
		keyRunID.String(e.RunID), keyCost.Float64(e.Cost),
	)
	if e.Attempts > 0 {
		attrs = append(attrs, keyAttempts.Int(e.Attempts))
	}
	if e.CacheReadTokens > 0 {
		attrs = append(attrs, keyCacheRead.Int(e.CacheReadTokens))
	}
	if s.content {
		attrs = append(attrs, keyInputMsgs.String(messagesJSON(tu.input)))
		if tu.output != nil {
			attrs = append(attrs, keyOutputMsgs.String(messagesJSON([]llm.Message{*tu.output})))
		}
		tu.input, tu.output = nil, nil
	}
	_, sp := s.tracer.Start(tu.ctx, "chat "+e.ModelName, trace.WithTimestamp(start),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if e.Attempts > 1 {
		sp.AddEvent("akgentic.llm.retried", trace.WithTimestamp(ts), trace.WithAttributes(keyAttempts.Int(e.Attempts)))
	}
	sp.End(trace.WithTimestamp(ts))
	tu.mark = ts
}

// toolCall opens a tool call's span under the turn.
func (s *Subscriber) toolCall(mb *member, tu *turn, e llm.ToolCallEvent, ts time.Time) {
	attrs := []attribute.KeyValue{
		keyOperation.String("execute_tool"), keyToolName.String(e.ToolName), keyToolCallID.String(e.ToolCallID),
		keyAgentName.String(mb.addr.Name()), keyRunID.String(e.RunID),
	}
	if s.content {
		attrs = append(attrs, keyToolArgs.String(e.Arguments))
	}
	_, sp := s.tracer.Start(tu.ctx, "execute_tool "+e.ToolName, trace.WithTimestamp(ts),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	if old, ok := tu.tools[e.ToolCallID]; ok { // a reused call id: the first never returned
		old.SetStatus(codes.Error, "no return recorded")
		old.End(trace.WithTimestamp(ts))
	}
	if tu.tools == nil {
		tu.tools = map[string]trace.Span{}
	}
	tu.tools[e.ToolCallID] = sp
}

// toolReturn ends a tool call's span; a failed call (an error, or
// feedback the model must act on) gets an Error status.
func (s *Subscriber) toolReturn(tu *turn, e llm.ToolReturnEvent, ts time.Time) {
	tu.mark = ts
	sp, ok := tu.tools[e.ToolCallID]
	if !ok {
		return
	}
	delete(tu.tools, e.ToolCallID)
	if s.content {
		if r, ok := tu.results[e.ToolCallID]; ok {
			sp.SetAttributes(keyToolResult.String(r))
			delete(tu.results, e.ToolCallID)
		}
	}
	if !e.Success {
		sp.SetStatus(codes.Error, "the tool call failed")
	}
	sp.End(trace.WithTimestamp(ts))
}

// messagesJSON renders messages as the GenAI conventions' message list:
// [{"role": …, "parts": [{"type": "text", "content": …}, {"type":
// "tool_call", …}]}].
func messagesJSON(msgs []llm.Message) string {
	type part struct {
		Type      string `json:"type"`
		Content   string `json:"content,omitempty"`
		ID        string `json:"id,omitempty"`
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments,omitempty"`
	}
	type msg struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}
	out := make([]msg, 0, len(msgs))
	for _, m := range msgs {
		w := msg{Role: m.Role, Parts: []part{}}
		if t := m.Text(); t != "" {
			typ := "text"
			if m.Role == "tool" {
				typ = "tool_call_response"
			}
			w.Parts = append(w.Parts, part{Type: typ, Content: t, ID: m.ToolCallID})
		}
		for _, c := range m.ToolCalls {
			w.Parts = append(w.Parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		out = append(out, w)
	}
	b, err := json.Marshal(out)
	if err != nil { // strings only: cannot fail
		return "[]"
	}
	return string(b)
}
