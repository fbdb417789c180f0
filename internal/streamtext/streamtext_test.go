package streamtext

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/agent/llm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Issue 15/17: the text of the messages being written, decoded from the
// partial structured output, escapes included as far as they are whole.
func TestText(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{``, ``},
		{`{"messages":[{"message_type":"response","mess`, ``},
		{`{"messages":[{"message":"`, ``},
		{`{"messages":[{"message":"Line one\nand \"two\"","recipient":"@Human"},{"message":"next`, "Line one\nand \"two\" · next"},
		{`{"messages":[{"message":"half an escape \`, `half an escape `},
		{`{"messages":[{"message" : "spaced"}]}`, `spaced`},
	} {
		if got := Text(c.raw); got != c.want {
			t.Errorf("Text(%q) = %q, want %q", c.raw, got, c.want)
		}
	}
}

// Issue 15: a Seq 0 starts a new answer; a delta whose beginning was
// missed leaves the answer lost until the next Seq 0.
func TestAnswer(t *testing.T) {
	var a Answer
	add := func(seq int, s string) bool { return a.Add(llm.TextDeltaEvent{RunID: "r", Seq: seq, Delta: s}) }
	if !add(0, `{"messages":[{"message":"he`) || !add(1, `llo`) {
		t.Fatal("a whole answer was refused")
	}
	kept := a.Raw()
	if got := Text(kept); got != "hello" {
		t.Fatalf("Text = %q", got)
	}
	if !add(0, `{"messages":[{"message":"again`) || Text(a.Raw()) != "again" {
		t.Fatalf("a Seq 0 did not start a new answer: %q", a.Raw())
	}
	if Text(kept) != "hello" {
		t.Fatalf("an earlier Raw changed: %q", kept)
	}
	if add(5, `more`) || a.Raw() != "" || add(6, `more`) {
		t.Fatalf("a delta after a gap was taken: %q", a.Raw())
	}
	if !add(0, `{"messages":[{"message":"new`) || Text(a.Raw()) != "new" {
		t.Fatalf("the next answer after a gap: %q", a.Raw())
	}
	a.Reset()
	if add(1, `x`) || a.Raw() != "" {
		t.Fatal("after Reset, a delta that is not a beginning was taken")
	}
}
