package agent_test

import (
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
)

// Errors carry the provider's words (issue 13): a 400
// context_length_exceeded with compaction off (A53: nothing to compact)
// ends the turn with an ErrorMessage whose text keeps OpenAI's status, code
// and message (spec §4, the error table: 400 context_length_exceeded,
// fail fast).
func TestContextLengthErrorKeepsProviderWords(t *testing.T) {
	h := newHarness(t)
	h.srv.Model("@Manager").Enqueue(llmtest.ContextLengthExceeded())
	h.say(h.manager, agent.Request, "a long story")
	h.sub.waitFor(t, "the ErrorMessage", func([]message.Message) bool { return len(of[*message.ErrorMessage](h.sub, h.manager)) > 0 })
	errs := of[*message.ErrorMessage](h.sub, h.manager)
	if len(errs) != 1 {
		t.Fatalf("%d ErrorMessages, want 1", len(errs))
	}
	for _, want := range []string{"context_length_exceeded", "maximum context length is 128000 tokens", "400"} {
		if !strings.Contains(errs[0].Content, want) {
			t.Errorf("ErrorMessage %q lacks %q", errs[0].Content, want)
		}
	}
}
