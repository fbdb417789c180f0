package llm

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// summaryPrefix starts the single entry that replaces compacted history.
const summaryPrefix = "[Conversation summary] "

// summarizerPrompts are the summarizer instructions by version.
var summarizerPrompts = map[string]string{
	"v1": "You compress a conversation between a user, an AI agent and its tools so the agent can continue " +
		"the work from your summary alone. Keep verbatim every named entity, identifier, file name, number and " +
		"agent name. Keep the original request, the facts established, the decisions taken, the outcome of each " +
		"tool call and the open items. Write plain prose or terse bullet points, with no preamble and no closing remark.",
}

// maxToolResultChars truncates tool results in the summarizer transcript.
const maxToolResultChars = 3000

// compactResult says what a compaction did.
type compactResult struct {
	// replaced is the number of history entries folded into the summary; 0
	// means there was nothing to compact.
	replaced int
	// summary is the summary text (without the "[Conversation summary] "
	// prefix of the history entry).
	summary string
}

// report is the /compact command's reply.
func (c compactResult) report() string {
	if c.replaced == 0 {
		return "Nothing to compact."
	}
	return fmt.Sprintf("Compacted: replaced %d earlier message(s) with a summary.", c.replaced)
}

// compactionOn: compaction needs a known context window and a folding
// strategy.
func (r *Runner) compactionOn() bool {
	return r.cfg.Model.ContextLength > 0 && r.cfg.Compaction.Strategy != strategyNone
}

func (r *Runner) compactionState(forced int) string {
	switch {
	case r.cfg.Model.ContextLength == 0:
		return "is off: set the model's context_length to enable it"
	case r.cfg.Compaction.Strategy == strategyNone:
		return "strategy is none"
	}
	return fmt.Sprintf("ran %d time(s) and the request still does not fit", forced)
}

// shouldCompact is the auto-trigger gate: never on missing data.
func (r *Runner) shouldCompact() bool {
	if !r.compactionOn() || !r.cfg.Compaction.AutoTrigger || r.lastInputTokens == 0 {
		return false
	}
	threshold := int(math.Floor(float64(r.cfg.Model.ContextLength) * r.cfg.Compaction.TriggerRatio))
	return r.lastInputTokens > threshold
}

// Compact folds the whole history now, ignoring the trigger gate,
// and returns the /compact command's reply: "Nothing to compact." or
// "Compacted: replaced N earlier message(s) with a summary.". The
// [CompactedEvent] it emits carries the count and the summary; outside a
// run, its run id is empty.
func (r *Runner) Compact(ctx context.Context) (string, error) {
	if r.closed {
		return "", ErrClosed
	}
	if r.paused != nil { // its response's calls must stay in the history
		return "", r.paused.pending()
	}
	res, err := r.compactPrefix(ctx, "", len(r.history))
	if err != nil {
		return "", err
	}
	return res.report(), nil
}

// compactPrefix folds history[:n] into one summary entry, keeping what
// follows (inside a run: the run's prompt and what came after it).
func (r *Runner) compactPrefix(ctx context.Context, runID string, n int) (compactResult, error) {
	strategy := r.cfg.Compaction.Strategy
	n = min(n, len(r.history))
	if n <= 0 || strategy == strategyNone {
		return compactResult{}, nil
	}
	var res compactResult
	switch strategy {
	case strategySlidingWindow:
		keep := max(n-r.cfg.Compaction.KeepRecentMessages, 0)
		for keep > 0 && keep < len(r.history) && r.history[keep].Role == roleTool { // never orphan a tool result
			keep--
		}
		if keep == 0 {
			return compactResult{}, nil
		}
		res = compactResult{replaced: keep, summary: fmt.Sprintf("[Sliding window: dropped %d earlier message(s)]", keep)}
	default:
		if err := ctx.Err(); err != nil {
			return compactResult{}, err
		}
		res = compactResult{replaced: n, summary: r.summarize(ctx, r.history[:n])}
		if err := ctx.Err(); err != nil {
			// Cancelled (or stopping) while summarizing: the history stays
			// whole rather than truncated.
			return compactResult{}, fmt.Errorf("llm: compaction: %w", err)
		}
	}
	ev := CompactedEvent{RunID: runID, StrategyID: strategy, Summary: res.summary, ReplacedMessageCount: res.replaced,
		TokensBefore: r.lastInputTokens, TokensAfter: (len(summaryPrefix) + len(res.summary)) / 4}
	if strategy == strategySummarize {
		ev.SummarizerPromptVersion = r.cfg.Compaction.SummarizerPromptVersion
	}
	r.history = foldCompaction(r.history, res.replaced, res.summary)
	r.emit(ev)
	return res, nil
}

// foldCompaction replaces the first n entries with one summary entry; live
// compaction and restore share it.
func foldCompaction(h []Message, n int, summary string) []Message {
	n = min(max(n, 0), len(h))
	out := make([]Message, 0, len(h)-n+1)
	out = append(out, UserText(summaryPrefix+summary))
	return append(out, h[n:]...)
}

// summarize asks the model for a summary of msgs; on failure the summary is
// a note that the messages were truncated. The call is not a usage
// event and counts against no budget.
func (r *Runner) summarize(ctx context.Context, msgs []Message) string {
	c := r.cfg.Compaction
	instructions, ok := summarizerPrompts[c.SummarizerPromptVersion]
	if !ok {
		instructions = summarizerPrompts["v1"]
	}
	req := openai.ChatCompletionRequest{Model: c.SummaryModel, Messages: []openai.ChatCompletionMessage{
		{Role: roleSystem, Content: instructions},
		{Role: roleUser, Content: fmt.Sprintf("Summarize the conversation below in at most ~%d tokens.\n\n---\n%s---",
			c.SummaryTargetTokens, transcript(msgs))},
	}}
	resp, err := r.client.CreateChatCompletion(ctx, req)
	if err == nil && len(resp.Choices) > 0 && strings.TrimSpace(resp.Choices[0].Message.Content) != "" {
		return strings.TrimSpace(resp.Choices[0].Message.Content)
	}
	if err == nil {
		err = fmt.Errorf("empty summary")
	}
	r.logger.LogAttrs(ctx, slog.LevelWarn, "llm: summarizer failed; truncating history", slog.String("error", err.Error()))
	return fmt.Sprintf("[NOTE: %d earlier message(s) were truncated to fit the context window; the summarizer failed.]", len(msgs))
}

// transcript renders messages one line per part for the summarizer.
func transcript(msgs []Message) string {
	var b strings.Builder
	for _, m := range msgs {
		switch m.Role {
		case roleUser:
			fmt.Fprintf(&b, "USER: %s\n", m.Text())
		case roleAssistant:
			if t := m.Text(); t != "" {
				fmt.Fprintf(&b, "ASSISTANT: %s\n", t)
			}
			if m.Refusal != "" {
				fmt.Fprintf(&b, "ASSISTANT: (refused) %s\n", m.Refusal)
			}
			for _, c := range m.ToolCalls {
				fmt.Fprintf(&b, "TOOL_CALL (%s): %s\n", c.Name, c.Arguments)
			}
		case roleTool:
			content := m.Content
			if len(content) > maxToolResultChars {
				content = content[:maxToolResultChars] + "…[truncated]"
			}
			fmt.Fprintf(&b, "TOOL_RESULT (%s): %s\n", m.ToolName, content)
		}
	}
	return b.String()
}

// Clear drops the whole history, with no model call, and returns the
// /clear command's reply: "Cleared N message(s); system prompt regenerates
// on the next run.". The [ClearedEvent] it emits carries the count.
func (r *Runner) Clear() string {
	n := len(r.history)
	r.dropPaused("the conversation context was cleared") // its calls go with the history
	r.history = nil
	r.emit(ClearedEvent{ClearedMessageCount: n})
	return fmt.Sprintf("Cleared %d message(s); system prompt regenerates on the next run.", n)
}

// Restore rebuilds the history from replayed events and reseeds the
// lifetime budget: messages append, a compaction folds, a clear
// empties; the run count becomes the number of distinct run ids among usage
// events and the lifetime tokens their sums. It replaces, never adds, so
// replaying twice is idempotent. A tool call left unanswered (the log ends
// in the middle of one) gets a stand-in result, so the next request is
// valid. Nothing is emitted.
func (r *Runner) Restore(events []Event) {
	runs := map[string]bool{}
	var budget agentBudget
	for _, e := range events {
		if ev, ok := e.(UsageEvent); ok {
			runs[ev.RunID] = true
			budget.input += ev.InputTokens
			budget.output += ev.OutputTokens
		}
	}
	budget.runs = len(runs)
	const note = "Tool call aborted: the agent stopped before it executed."
	h := historyOf(events)
	paused := pausedOf(events, h)
	if paused != nil { // the paused response's calls are answered when it resumes
		h = append(repairToolResults(h[:len(h)-1], note), h[len(h)-1])
	} else {
		h = repairToolResults(h, note)
	}
	r.history, r.budget, r.cut, r.paused = h, budget, nil, paused
	r.restoreSpend(events)
}

// historyOf folds events into a history: messages append, a compaction
// folds, a clear empties.
func historyOf(events []Event) []Message {
	var h []Message
	for _, e := range events {
		switch ev := e.(type) {
		case MessageEvent:
			h = append(h, ev.Message)
		case CompactedEvent:
			h = foldCompaction(h, ev.ReplacedMessageCount, ev.Summary)
		case ClearedEvent:
			h = nil
		}
	}
	return h
}
