package actor_test

import (
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
)

// A burst queued while the actor is busy spans several of the mailbox's
// segments: its turns come in send order; peeking shows it whole and in
// order, and consuming from it takes out exactly what was asked.
func TestMailboxKeepsOrderAcrossSegments(t *testing.T) {
	t.Run("turns", func(t *testing.T) { burstInOrder(t, false) })
	t.Run("peek and consume", func(t *testing.T) { burstInOrder(t, true) })
}

func burstInOrder(t *testing.T, peek bool) {
	sys, _ := newSystem(t)
	const burst = 1000 // about four segments
	release := make(chan struct{})
	entered := make(chan struct{})
	done := make(chan struct{})
	var peeked, turns []int
	var consumed []message.Message
	agent := spawn(t, sys, actor.Func(func(c *actor.Context, msg any) (any, error) {
		switch m := msg.(type) {
		case *textMsg:
			close(entered)
			<-release
			if !peek {
				return nil, nil
			}
			var ids []uuid.UUID
			for _, q := range c.Mailbox() {
				n := q.(*numMsg).N
				peeked = append(peeked, n)
				if n == 300 || n == 700 { // in two different segments
					ids = append(ids, q.Envelope().ID)
				}
			}
			consumed = c.ConsumeMailbox(ids...)
		case *numMsg:
			turns = append(turns, m.N)
			if m.N == burst-1 {
				close(done)
			}
		}
		return nil, nil
	}), nil)
	if err := sys.Tell(agent, &textMsg{}); err != nil {
		t.Fatal(err)
	}
	<-entered
	for i := range burst {
		if err := sys.Tell(agent, &numMsg{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	<-done
	barrier(t, agent)
	want := make([]int, burst)
	for i := range want {
		want[i] = i
	}
	if !peek {
		if !slices.Equal(turns, want) {
			t.Fatalf("%d turns, want 0..%d in send order (first differences: %v)", len(turns), burst-1, firstDiff(turns, want))
		}
		return
	}
	if !slices.Equal(peeked, want) {
		t.Fatalf("the mailbox showed %d messages, want 0..%d in order (first differences: %v)", len(peeked), burst-1, firstDiff(peeked, want))
	}
	if len(consumed) != 2 || consumed[0].(*numMsg).N != 300 || consumed[1].(*numMsg).N != 700 {
		t.Fatalf("consumed %v, want the messages 300 and 700", consumed)
	}
	want = slices.DeleteFunc(want, func(n int) bool { return n == 300 || n == 700 })
	if !slices.Equal(turns, want) {
		t.Fatalf("%d turns, want %d in send order without the consumed ones (first differences: %v)", len(turns), len(want), firstDiff(turns, want))
	}
}

// firstDiff returns the first index where got and want differ, with
// their values there (-1 past an end).
func firstDiff(got, want []int) []int {
	for i := range max(len(got), len(want)) {
		g, w := -1, -1
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return []int{i, g, w}
		}
	}
	return nil
}
