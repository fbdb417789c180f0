package akotel_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// A turn that fails has an Error status and an exception event
// (its Error record comes after its Processed record); a warning during a
// turn is an event of its span; both are counted.
func TestErrorsAndWarnings(t *testing.T) {
	tel := newTelemetry(t, false)
	failures := make(chan *message.ErrorMessage, 1)
	tm := newTeam(t, orchestrator.WithSubscribers(tel.sub, errorWaiter(failures)))
	both := llmtest.Final(`{"messages":[` +
		`{"message_type":"response","message":"lost","recipient":"@Nobody"},` +
		`{"message_type":"response","message":"ok","recipient":"@Human"}]}`)
	tm.srv.Model("@Manager").Enqueue(both, // @Nobody: nothing is sent, the model is asked again (a warning)
		llmtest.Final(`{"messages":[{"message_type":"response","message":"ok","recipient":"@Human"}]}`),
		llmtest.APIError(400, "invalid_request_error", "bad_request", "the request is bad"))
	if got := tm.ask("first"); got.Content != "ok" {
		t.Fatalf("the person got %q", got.Content)
	}
	if err := agent.Say(actortest.Context(t), tm.human, tm.manager, agent.NewRequest("second")); err != nil {
		t.Fatal(err)
	}
	select { // the failure's record, then the stop (a stop cancels a model call)
	case <-failures:
	case <-time.After(actortest.Timeout):
		t.Fatal("timed out waiting for the manager's ErrorMessage")
	}
	tm.stop()
	turns := named(tel.ended(), "invoke_agent @Manager")
	if len(turns) != 2 {
		t.Fatalf("%d manager turns, want 2:\n%s", len(turns), tree(tel.ended()))
	}
	warned, failed := turns[0], turns[1]
	if warned.Status().Code != codes.Unset {
		t.Errorf("the warned turn's status %v, want unset", warned.Status())
	}
	if ev := warned.Events(); len(ev) != 1 || ev[0].Name != "akgentic.warning" ||
		!strings.Contains(eventAttr(ev[0].Attributes, "akgentic.notice.content"), "@Nobody") {
		t.Errorf("the warned turn's events %v, want one akgentic.warning naming @Nobody", ev)
	}
	if st := failed.Status(); st.Code != codes.Error || !strings.Contains(st.Description, "400") {
		t.Errorf("the failed turn's status %v, want Error naming the 400", st)
	}
	if got := attr(failed, string(semconv.ErrorTypeKey)).AsString(); got == "" || got == "_OTHER" {
		t.Errorf("the failed turn's error.type %q, want the class of its error", got)
	}
	// The failed model call is a span of the failed turn, with the
	// provider's error code as its error.type, and no tokens.
	var failedCall sdktrace.ReadOnlySpan
	for _, c := range named(tel.ended(), "chat gpt-4.1") {
		if c.Parent().SpanID() == failed.SpanContext().SpanID() {
			failedCall = c
		}
	}
	if failedCall == nil || failedCall.Status().Code != codes.Error ||
		attr(failedCall, string(semconv.ErrorTypeKey)) != attribute.StringValue("bad_request") ||
		attr(failedCall, string(semconv.GenAIUsageInputTokensKey)).Type() != attribute.INVALID {
		t.Errorf("the failed model call %v, want an Error span with error.type bad_request and no tokens:\n%s", failedCall, tree(tel.ended()))
	}
	if ev := failed.Events(); len(ev) != 1 || ev[0].Name != "exception" ||
		!strings.Contains(eventAttr(ev[0].Attributes, "exception.message"), "the request is bad") {
		t.Errorf("the failed turn's events %v, want one exception with the provider's message", ev)
	}
	rm := tel.metrics(t)
	manager := attribute.String("akgentic.actor.role", "Manager")
	if n, _ := sum(rm, "akgentic.errors", manager); n != 1 {
		t.Errorf("manager errors %v, want 1", n)
	}
	if n, _ := sum(rm, "akgentic.warnings", manager); n != 1 {
		t.Errorf("manager warnings %v, want 1", n)
	}
	if n, _ := sum(rm, "gen_ai.client.operation.duration", manager, semconv.ErrorTypeKey.String("bad_request")); n != 1 {
		t.Errorf("failed model calls in the duration metric: %v, want 1 by error.type", n)
	}
}

// errorWaiter is a subscriber passing on the team's ErrorMessages.
type errorWaiter chan *message.ErrorMessage

func (w errorWaiter) OnMessage(m message.Message) {
	if e, ok := m.(*message.ErrorMessage); ok {
		select { // never block the team
		case w <- e:
		default:
		}
	}
}

// eventAttr returns the value of key among kvs as a string.
func eventAttr(kvs []attribute.KeyValue, key string) string {
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// With CaptureContent, the texts are recorded (and still no API key) in
// the conventions' message format: the message of a turn, a model call's
// chat history and its output with its finish reason, a tool call's
// arguments and result.
func TestCaptureContent(t *testing.T) {
	tel := newTelemetry(t, true)
	tm := newTeam(t, orchestrator.WithSubscribers(tel.sub))
	tm.srv.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "no_such_tool", `{"q":"sprint"}`)),
		final(agent.Response, "@Human", "Done."),
	)
	tm.ask("Plan the sprint.")
	tm.stop()
	spans := tel.ended()
	turn := named(spans, "invoke_agent @Manager")[0]
	if got := attr(turn, "akgentic.message.content").AsString(); got != "Plan the sprint." {
		t.Errorf("turn content %q", got)
	}
	chats := named(spans, "chat gpt-4.1")
	if len(chats) != 2 {
		t.Fatalf("%d model calls, want 2:\n%s", len(chats), tree(spans))
	}
	in1 := messages(t, chats[0], semconv.GenAIInputMessagesKey)
	if len(in1) != 1 || in1[0].Role != "user" || len(in1[0].Parts) != 1 || in1[0].Parts[0].Type != "text" ||
		!strings.Contains(in1[0].Parts[0].Content, "Plan the sprint.") {
		t.Errorf("first call input %+v", in1)
	}
	out1 := messages(t, chats[0], semconv.GenAIOutputMessagesKey)
	if len(out1) != 1 || out1[0].Role != "assistant" || out1[0].FinishReason != "tool_calls" || len(out1[0].Parts) != 1 {
		t.Fatalf("first call output %+v", out1)
	}
	if p := out1[0].Parts[0]; p.Type != "tool_call" || p.ID != "call_1" || p.Name != "no_such_tool" || string(p.Arguments) != `{"q":"sprint"}` {
		t.Errorf("first call output part %+v, want the tool call with its arguments as JSON", p)
	}
	tool := named(spans, "execute_tool no_such_tool")[0]
	if got := attr(tool, "gen_ai.tool.call.arguments").AsString(); got != `{"q":"sprint"}` {
		t.Errorf("tool arguments %q", got)
	}
	if got := attr(tool, "gen_ai.tool.call.result").AsString(); !strings.Contains(got, "Unknown tool name") {
		t.Errorf("tool result %q", got)
	}
	// The second call's input is the whole chat history: the prompt, the
	// tool call, and the tool's response.
	in2 := messages(t, chats[1], semconv.GenAIInputMessagesKey)
	if len(in2) != 3 || in2[0].Role != "user" || in2[1].Role != "assistant" || in2[2].Role != "tool" {
		t.Fatalf("second call input %+v", in2)
	}
	if p := in2[2].Parts; len(p) != 1 || p[0].Type != "tool_call_response" || p[0].ID != "call_1" ||
		!strings.Contains(string(p[0].Response), "Unknown tool name") || p[0].Content != "" {
		t.Errorf("tool response part %+v, want its text as response", p)
	}
	if out := messages(t, chats[1], semconv.GenAIOutputMessagesKey); len(out) != 1 || out[0].FinishReason != "stop" ||
		out[0].Parts[0].Type != "text" || !strings.Contains(out[0].Parts[0].Content, "Done.") {
		t.Errorf("second call output %+v", out)
	}
	noSecret(t, spans)
}

// wantMessage is a message of the conventions' format, as a test reads it.
type wantMessage struct {
	Role  string `json:"role"`
	Parts []struct {
		Type      string          `json:"type"`
		Content   string          `json:"content"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Response  json.RawMessage `json:"response"`
	} `json:"parts"`
	FinishReason string `json:"finish_reason"`
}

// messages decodes a span's message-list attribute.
func messages(t *testing.T, s sdktrace.ReadOnlySpan, key attribute.Key) []wantMessage {
	t.Helper()
	var out []wantMessage
	if err := json.Unmarshal([]byte(attr(s, string(key)).AsString()), &out); err != nil {
		t.Fatalf("span %s: %s: %v", s.Name(), key, err)
	}
	return out
}
