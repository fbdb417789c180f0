package akotel

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/akgentic/akgentic-go/agent/llm"
)

// modelAttrs are the metric attributes of a member's calls to one model,
// made once: an attribute set costs allocations. They name the operation,
// the provider, the models, the server and the member's role, never the
// member: names are made per hire, and a metric label that grows with the
// team is a cardinality leak (the spans carry the names).
type modelAttrs struct {
	call, input, output attribute.Set
	cost                metric.MeasurementOption
}

// modelKey says which modelAttrs a usage event needs.
type modelKey struct {
	provider, request, response, address string
	port                                 int
}

// requestModel is the model a usage event's request asked for: the
// configured name, or for a log written before it was recorded, the
// response's.
func requestModel(e llm.UsageEvent) string {
	if e.RequestModel != "" {
		return e.RequestModel
	}
	return e.ModelName
}

// modelAttrs returns the attributes of the member's calls described by e.
func (mb *member) modelAttrs(e llm.UsageEvent) *modelAttrs {
	key := modelKey{e.ProviderName, requestModel(e), e.ModelName, e.ServerAddress, e.ServerPort}
	if a, ok := mb.models[key]; ok {
		return a
	}
	if mb.models == nil {
		mb.models = map[modelKey]*modelAttrs{}
	}
	role := keyActorRole.String(mb.addr.Role())
	call := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(key.provider),
		semconv.GenAIRequestModelKey.String(key.request), semconv.GenAIResponseModelKey.String(key.response), role}
	if key.address != "" {
		call = append(call, semconv.ServerAddressKey.String(key.address), semconv.ServerPortKey.Int(key.port))
	}
	a := &modelAttrs{
		call:   attribute.NewSet(call...),
		input:  attribute.NewSet(append(call, semconv.GenAITokenTypeInput)...),
		output: attribute.NewSet(append(call, semconv.GenAITokenTypeOutput)...),
		cost:   metric.WithAttributeSet(attribute.NewSet(semconv.GenAIRequestModelKey.String(key.request), role)),
	}
	mb.models[key] = a
	return a
}

// usage records one model call: a span under the turn and its metrics.
func (s *Subscriber) usage(mb *member, tu *turn, e llm.UsageEvent, ts time.Time) {
	ctx := context.Background()
	ma := mb.modelAttrs(e)
	callSet := ma.call
	if e.ErrorType != "" { // a failed call: no tokens, its duration by error.type
		callSet = attribute.NewSet(append(ma.call.ToSlice(), semconv.ErrorTypeKey.String(e.ErrorType))...)
	} else {
		s.inst.tokens.RecordSet(ctx, int64(e.InputTokens), ma.input)
		s.inst.tokens.RecordSet(ctx, int64(e.OutputTokens), ma.output)
		s.inst.cost.Add(ctx, e.Cost, ma.cost)
	}
	input, output := mb.callMessages()
	if tu == nil {
		if e.Latency > 0 {
			s.inst.modelDuration.RecordSet(ctx, e.Latency.Seconds(), callSet)
		}
		return
	}
	// The call started Latency before its record, but not before the
	// record that preceded it (the record clock is coarse: 1 ms).
	start := tu.mark
	if e.Latency > 0 && ts.Add(-e.Latency).After(start) {
		start = ts.Add(-e.Latency)
	}
	s.inst.modelDuration.RecordSet(ctx, ts.Sub(start).Seconds(), callSet)
	tu.agentCall(mb, e.ProviderName)
	model := requestModel(e)
	attrs := make([]attribute.KeyValue, 0, 24)
	attrs = append(attrs,
		semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(e.ProviderName),
		semconv.GenAIRequestModelKey.String(model),
		mb.agentName(), mb.agentID(), mb.conversation(),
		keyRunID.String(e.RunID), keyCost.Float64(e.Cost),
	)
	if e.ErrorType == "" {
		attrs = append(attrs, semconv.GenAIResponseModelKey.String(e.ModelName),
			semconv.GenAIUsageInputTokensKey.Int(e.InputTokens), semconv.GenAIUsageOutputTokensKey.Int(e.OutputTokens))
	}
	if e.ResponseID != "" {
		attrs = append(attrs, semconv.GenAIResponseIDKey.String(e.ResponseID))
	}
	if e.FinishReason != "" {
		attrs = append(attrs, semconv.GenAIResponseFinishReasonsKey.StringSlice([]string{e.FinishReason}))
	}
	if e.ServerAddress != "" {
		attrs = append(attrs, semconv.ServerAddressKey.String(e.ServerAddress), semconv.ServerPortKey.Int(e.ServerPort))
	}
	if e.CacheReadTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageCacheReadInputTokensKey.Int(e.CacheReadTokens))
	}
	if e.CacheWriteTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageCacheCreationInputTokensKey.Int(e.CacheWriteTokens))
	}
	if e.ReasoningTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageReasoningOutputTokensKey.Int(e.ReasoningTokens))
	}
	if e.Attempts > 0 {
		attrs = append(attrs, keyAttempts.Int(e.Attempts))
	}
	if s.content {
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(messagesJSON(input, "")))
		if output != nil {
			attrs = append(attrs, semconv.GenAIOutputMessagesKey.String(messagesJSON([]llm.Message{*output}, finishReason(e))))
		}
	}
	if e.ErrorType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(e.ErrorType))
	}
	_, sp := s.tracer.Start(tu.ctx, "chat "+model, trace.WithTimestamp(start),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if e.ErrorType != "" {
		sp.SetStatus(codes.Error, "the model call failed: "+e.ErrorType)
	}
	if e.Attempts > 1 {
		sp.AddEvent("akgentic.llm.retried", trace.WithTimestamp(ts), trace.WithAttributes(keyAttempts.Int(e.Attempts)))
	}
	sp.End(trace.WithTimestamp(ts))
	tu.mark = ts
}

// finishReason is the output message's finish_reason, which the
// conventions require: the provider's, or for a log written before it was
// recorded, what the answer shows.
func finishReason(e llm.UsageEvent) string {
	if e.FinishReason != "" {
		return e.FinishReason
	}
	return "stop"
}

// toolCall opens a tool call's span under the turn.
func (s *Subscriber) toolCall(mb *member, tu *turn, e llm.ToolCallEvent, ts time.Time) {
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolNameKey.String(e.ToolName),
		semconv.GenAIToolCallIDKey.String(e.ToolCallID), semconv.GenAIToolTypeKey.String("function"),
		mb.agentName(), mb.conversation(),
		keyRunID.String(e.RunID),
	}
	if s.content {
		attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(e.Arguments))
	}
	_, sp := s.tracer.Start(tu.ctx, "execute_tool "+e.ToolName, trace.WithTimestamp(ts),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	if old, ok := tu.tools[e.ToolCallID]; ok { // a reused call id: the first never returned
		old.SetStatus(codes.Error, "no return recorded")
		old.SetAttributes(semconv.ErrorTypeOther)
		old.End(trace.WithTimestamp(ts))
	}
	if tu.tools == nil {
		tu.tools = map[string]trace.Span{}
	}
	tu.tools[e.ToolCallID] = sp
}

// toolReturn ends a tool call's span; a failed call (an error, or
// feedback the model must act on) gets an Error status and its error.type.
func (s *Subscriber) toolReturn(tu *turn, e llm.ToolReturnEvent, ts time.Time) {
	tu.mark = ts
	sp, ok := tu.tools[e.ToolCallID]
	if !ok {
		return
	}
	delete(tu.tools, e.ToolCallID)
	if s.content {
		if r, ok := tu.results[e.ToolCallID]; ok {
			sp.SetAttributes(semconv.GenAIToolCallResultKey.String(r))
			delete(tu.results, e.ToolCallID)
		}
	}
	if !e.Success {
		sp.SetStatus(codes.Error, "the tool call failed")
		typ := semconv.ErrorTypeOther
		if e.ErrorType != "" {
			typ = semconv.ErrorTypeKey.String(e.ErrorType)
		}
		sp.SetAttributes(typ)
	}
	sp.End(trace.WithTimestamp(ts))
}

// chatMessage is one message of the GenAI conventions' message lists
// (gen_ai.input.messages, gen_ai.output.messages).
type chatMessage struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

// part is one part of a message: text, tool_call or tool_call_response.
type part struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
	Response  any    `json:"response,omitempty"`
}

// messagesJSON renders msgs as the GenAI conventions' message list:
// [{"role": …, "parts": [{"type": "text", "content": …}, {"type":
// "tool_call", "id", "name", "arguments"}, {"type": "tool_call_response",
// "id", "response"}]}], each with finish_reason when it is not "" (output
// messages). Arguments that are valid JSON are recorded as JSON, others as
// the string the model sent.
func messagesJSON(msgs []llm.Message, finish string) string {
	out := make([]chatMessage, 0, len(msgs))
	for _, m := range msgs {
		w := chatMessage{Role: m.Role, Parts: []part{}, FinishReason: finish}
		text := m.Text()
		switch {
		case m.Role == "tool":
			w.Parts = append(w.Parts, part{Type: "tool_call_response", ID: m.ToolCallID, Response: text})
		case text != "":
			w.Parts = append(w.Parts, part{Type: "text", Content: text})
		case m.Refusal != "":
			w.Parts = append(w.Parts, part{Type: "refusal", Content: m.Refusal})
		}
		for _, c := range m.ToolCalls {
			var args any = c.Arguments
			if json.Valid([]byte(c.Arguments)) {
				args = json.RawMessage(c.Arguments)
			}
			w.Parts = append(w.Parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: args})
		}
		out = append(out, w)
	}
	b, err := json.Marshal(out)
	if err != nil { // strings and valid JSON only: cannot fail
		return "[]"
	}
	return string(b)
}
