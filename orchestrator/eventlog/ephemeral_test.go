package eventlog_test

import (
	"testing"

	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator/eventlog"
)

// liveEvent is an event payload that is message.Ephemeral (as a streamed
// answer's text delta is). It is not registered: the log never encodes it.
type liveEvent struct{ Text string }

func (liveEvent) Ephemeral() {}

// An EventMessage carrying an ephemeral event is never written;
// the records around it are, in order.
func TestWriterSkipsEphemeralEvents(t *testing.T) {
	tm := newTeam()
	w, path := create(t, tm, eventlog.Options{})
	want := tm.records()
	for i, m := range want {
		w.OnMessage(m)
		if i%3 == 0 {
			w.OnMessage(&message.EventMessage{Base: tm.base(tm.greeter, nil), Event: liveEvent{Text: "piece"}})
			w.OnMessage(&message.EventMessage{Base: tm.base(tm.greeter, nil), Event: &liveEvent{Text: "pointer"}})
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Err(); err != nil {
		t.Fatalf("the writer reported %v", err)
	}
	sameRecords(t, readLog(t, path).Messages, want)
}
