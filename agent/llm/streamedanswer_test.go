package llm_test

import (
	"testing"

	"github.com/akgentic/akgentic-go/agent/llm"
)

// The text of the messages being written, decoded from the partial
// structured output, escapes included as far as they are whole.
func TestStreamedTextDecodesTheMessagesSoFar(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{``, ``},
		{`{"messages":[{"message_type":"response","mess`, ``},
		{`{"messages":[{"message":"`, ``},
		{`{"messages":[{"message":"Line one\nand \"two\"","recipient":"@Human"},{"message":"next`, "Line one\nand \"two\" · next"},
		{`{"messages":[{"message":"half an escape \`, `half an escape `},
		{`{"messages":[{"message" : "spaced"}]}`, `spaced`},
	} {
		if got := llm.StreamedText(c.raw); got != c.want {
			t.Errorf("StreamedText(%q) = %q, want %q", c.raw, got, c.want)
		}
	}
}

// A Seq 0 starts a new answer; a delta whose beginning was missed leaves
// the answer lost until the next Seq 0.
func TestStreamedAnswerStartsOverAtSeqZeroAndIsLostAfterAGap(t *testing.T) {
	var a llm.StreamedAnswer
	add := func(seq int, s string) bool { return a.Add(llm.TextDeltaEvent{RunID: "r", Seq: seq, Delta: s}) }
	if !add(0, `{"messages":[{"message":"he`) || !add(1, `llo`) {
		t.Fatal("a whole answer was refused")
	}
	kept := a.Raw()
	if got := llm.StreamedText(kept); got != "hello" {
		t.Fatalf("StreamedText = %q", got)
	}
	if !add(0, `{"messages":[{"message":"again`) || llm.StreamedText(a.Raw()) != "again" {
		t.Fatalf("a Seq 0 did not start a new answer: %q", a.Raw())
	}
	if llm.StreamedText(kept) != "hello" {
		t.Fatalf("an earlier Raw changed: %q", kept)
	}
	if add(5, `more`) || a.Raw() != "" || add(6, `more`) {
		t.Fatalf("a delta after a gap was taken: %q", a.Raw())
	}
	if !add(0, `{"messages":[{"message":"new`) || llm.StreamedText(a.Raw()) != "new" {
		t.Fatalf("the next answer after a gap: %q", a.Raw())
	}
	a = llm.StreamedAnswer{}
	if add(1, `x`) || a.Raw() != "" {
		t.Fatal("after starting over, a delta that is not a beginning was taken")
	}
}
