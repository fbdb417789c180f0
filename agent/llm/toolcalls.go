package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/akgentic/akgentic-go/internal/scrub"
)

// toolResult is one executed call.
type toolResult struct {
	content string
	retry   bool  // model-fixable failure: feedback sent, counter spent
	skipped bool  // not run: past MaxToolCallsPerAnswer
	denied  bool  // a person denied the call: it did not run
	err     error // aborts the run
}

// runTools executes a batch, in parallel when allowed (at most
// MaxParallelToolCalls at once, by as many goroutines), and appends
// results in call order: the calls past MaxToolCallsPerAnswer are
// answered "not run", a call in denied does not run (its result is its
// refusal, approval.go), and each result is cut at MaxToolResultBytes.
func (rs *runState[T]) runTools(calls []ToolCall, denied map[string]string) error {
	r := rs.r
	rt := r.cfg.Runtime
	results := make([]toolResult, len(calls))
	call := func(i int, c ToolCall) {
		if why, ok := denied[c.ID]; ok {
			results[i] = toolResult{content: why, denied: true}
			return
		}
		results[i] = r.callTool(rs.ctx, c)
	}
	run := calls
	if most := orDefault(rt.MaxToolCallsPerAnswer, defaultMaxToolCallsPerAnswer); len(calls) > most {
		run = calls[:most]
		reason := fmt.Sprintf("the answer asked for %d tool calls, more than max_tool_calls_per_answer (%d): the last %d were not run", len(calls), most, len(calls)-most)
		r.emit(LimitEvent{RunID: rs.id, Limit: "max_tool_calls_per_answer", Reason: reason})
		for i := most; i < len(calls); i++ {
			results[i] = toolResult{skipped: true, content: fmt.Sprintf(
				"Not run: at most %d tool calls of one answer run (max_tool_calls_per_answer) and this answer asked for %d. Make the calls you still need in your next answer.", most, len(calls))}
		}
	}
	if workers := min(len(run), orDefault(rt.MaxParallelToolCalls, defaultMaxParallelToolCalls)); workers > 1 && r.parallel(run) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < len(run); i = int(next.Add(1) - 1) {
					call(i, run[i])
				}
			})
		}
		wg.Wait()
	} else {
		for i, c := range run {
			call(i, c)
		}
	}
	maxBytes := orDefault(rt.MaxToolResultBytes, defaultMaxToolResultBytes)
	var abort error
	for i, c := range calls {
		res := results[i]
		if res.err != nil && abort == nil {
			abort = res.err
		}
		content := res.content
		if res.err != nil {
			content = fmt.Sprintf("Tool call aborted: %v", res.err)
		}
		if len(content) > maxBytes {
			full := len(content)
			content = CutText(content, maxBytes) + fmt.Sprintf(
				"\n[... result cut at %d bytes of %d (max_tool_result_bytes): ask for a smaller part ...]", maxBytes, full)
			r.emit(LimitEvent{RunID: rs.id, Limit: "max_tool_result_bytes",
				Reason: fmt.Sprintf("the result of tool %s (%d bytes) was cut at max_tool_result_bytes (%d)", c.Name, full, maxBytes)})
		}
		r.appendMessage(rs.id, Message{Role: roleTool, ToolCallID: c.ID, ToolName: c.Name, Content: content})
		ev := ToolReturnEvent{RunID: rs.id, ToolName: c.Name, ToolCallID: c.ID, Success: !res.retry && !res.denied && !res.skipped && res.err == nil}
		switch {
		case res.err != nil:
			ev.ErrorType = toolErrorFailed
		case res.retry:
			ev.ErrorType = toolErrorRetry
		case res.denied:
			ev.ErrorType = toolErrorDenied
		case res.skipped:
			ev.ErrorType = toolErrorAborted
		}
		r.emit(ev)
	}
	if abort != nil {
		return abort
	}
	for i, c := range calls {
		if !results[i].retry {
			continue
		}
		if rs.toolRetries == nil { // made on the first retry: most runs have none
			rs.toolRetries = map[string]int{}
		}
		rs.toolRetries[c.Name]++
		if n := rs.toolRetries[c.Name]; n > r.cfg.Runtime.Retries {
			return fmt.Errorf("%w: tool %s failed %d times: %s", ErrToolRetriesExceeded, c.Name, n, results[i].content)
		}
	}
	return nil
}

// CutText returns s cut to at most n bytes, without splitting a
// character: the one cut of the limits on texts a model sends or gets.
func CutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func (r *Runner) parallel(calls []ToolCall) bool {
	if len(calls) < 2 || (r.cfg.Runtime.ParallelToolCalls != nil && !*r.cfg.Runtime.ParallelToolCalls) {
		return false
	}
	for _, c := range calls {
		if t := r.toolIndex[c.Name]; t != nil && t.Serial {
			return false
		}
	}
	return true
}

const retryHint = "\n\nFix the errors and try again."

// callTool runs one call, turning every failure into a result.
func (r *Runner) callTool(ctx context.Context, c ToolCall) (res toolResult) {
	t := r.toolIndex[c.Name]
	if t == nil {
		names := make([]string, len(r.tools))
		for i, t := range r.tools {
			names[i] = t.Name
		}
		return toolResult{retry: true, content: fmt.Sprintf("Unknown tool name: %q. Available tools: %s.%s",
			c.Name, strings.Join(names, ", "), retryHint)}
	}
	args := strings.TrimSpace(c.Arguments)
	if args == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) {
		return toolResult{retry: true, content: fmt.Sprintf("Invalid arguments for %s: not valid JSON: %s%s", c.Name, c.Arguments, retryHint)}
	}
	defer func() {
		if p := recover(); p != nil {
			text := scrub.String(fmt.Sprint(p))
			r.logger.LogAttrs(ctx, slog.LevelError, "llm: tool panicked", slog.String("tool", c.Name),
				slog.String("panic", text), slog.String("stack", string(debug.Stack())))
			res = toolResult{err: fmt.Errorf("llm: tool %s panicked: %s", c.Name, text)}
		}
	}()
	out, err := t.Call(ctx, json.RawMessage(args))
	if err != nil { // a tool's error text is scrubbed before the model, a record or a log line sees it
		var re *RetryError
		if errors.As(err, &re) {
			return toolResult{retry: true, content: scrub.String(re.Message) + retryHint}
		}
		return toolResult{err: scrub.Error(fmt.Errorf("llm: tool %s: %w", c.Name, err))}
	}
	if s, ok := out.(string); ok {
		return toolResult{content: s}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return toolResult{err: fmt.Errorf("llm: tool %s: encoding its result: %w", c.Name, err)}
	}
	return toolResult{content: string(b)}
}
