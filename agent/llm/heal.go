package llm

import (
	"errors"
	"fmt"

	openai "github.com/sashabaranov/go-openai"
)

// heal answers every tool call of the last assistant message that has no
// result yet, so the next request is valid.
func (r *Runner) heal(runID string, cause error) {
	last := -1
	for i := len(r.history) - 1; i >= 0; i-- {
		if r.history[i].Role == roleAssistant {
			last = i
			break
		}
	}
	if last < 0 || len(r.history[last].ToolCalls) == 0 {
		return
	}
	answered := map[string]bool{}
	for _, m := range r.history[last+1:] {
		if m.Role == roleTool {
			answered[m.ToolCallID] = true
		}
	}
	for _, c := range r.history[last].ToolCalls {
		if answered[c.ID] {
			continue
		}
		r.appendMessage(runID, Message{Role: roleTool, ToolCallID: c.ID, ToolName: c.Name,
			Content: fmt.Sprintf("Tool call aborted: the run ended before it executed (%v).", cause)})
		r.emit(ToolReturnEvent{RunID: runID, ToolName: c.Name, ToolCallID: c.ID, Success: false, ErrorType: toolErrorAborted})
	}
}

// promptAfter is where the run's prompt sits once a compaction replaced
// the first res.replaced entries with one summary.
func promptAfter(index int, res compactResult) int {
	if res.replaced == 0 {
		return index
	}
	return index - res.replaced + 1
}

// repairToolResults returns h with a stand-in tool result, right after an
// assistant message's tool results, for each of its calls that has none:
// OpenAI refuses a history with an unanswered tool call. A log that
// ends in the middle of a tool call (a crash) restores to such a history.
func repairToolResults(h []Message, note string) []Message {
	var out []Message
	for i := 0; i < len(h); i++ {
		m := h[i]
		out = append(out, m)
		if m.Role != roleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		answered := map[string]bool{}
		j := i + 1
		for ; j < len(h) && h[j].Role == roleTool; j++ {
			answered[h[j].ToolCallID] = true
			out = append(out, h[j])
		}
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				out = append(out, Message{Role: roleTool, ToolCallID: c.ID, ToolName: c.Name, Content: note})
			}
		}
		i = j - 1
	}
	return out
}

func isContextLength(err error) bool {
	var ae *openai.APIError
	return errors.As(err, &ae) && ae.Code == "context_length_exceeded"
}
