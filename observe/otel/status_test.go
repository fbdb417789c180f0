package akotel_test

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

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
	turns := named(tel.ended(), "turn @Manager")
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

// With CaptureContent, the texts are recorded (and still no API
// key): the message of a turn, a model call's new input and its output, a
// tool call's arguments and result.
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
	turn := named(spans, "turn @Manager")[0]
	if got := attr(turn, "akgentic.message.content").AsString(); got != "Plan the sprint." {
		t.Errorf("turn content %q", got)
	}
	chat := named(spans, "chat gpt-4.1")[0]
	if in := attr(chat, "gen_ai.input.messages").AsString(); !strings.Contains(in, "Plan the sprint.") || !strings.Contains(in, `"role":"user"`) {
		t.Errorf("first call input %s", in)
	}
	if out := attr(chat, "gen_ai.output.messages").AsString(); !strings.Contains(out, `"type":"tool_call"`) || !strings.Contains(out, "no_such_tool") {
		t.Errorf("first call output %s", out)
	}
	tool := named(spans, "execute_tool no_such_tool")[0]
	if got := attr(tool, "gen_ai.tool.call.arguments").AsString(); got != `{"q":"sprint"}` {
		t.Errorf("tool arguments %q", got)
	}
	if got := attr(tool, "gen_ai.tool.call.result").AsString(); !strings.Contains(got, "Unknown tool name") {
		t.Errorf("tool result %q", got)
	}
	second := named(spans, "chat gpt-4.1")[1]
	if in := attr(second, "gen_ai.input.messages").AsString(); !strings.Contains(in, "tool_call_response") || strings.Contains(in, "Plan the sprint.") {
		t.Errorf("second call input (the tool's reply only) %s", in)
	}
	noSecret(t, spans)
}
