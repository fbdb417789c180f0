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
)

// toolResult is one executed call.
type toolResult struct {
	content string
	retry   bool  // model-fixable failure: feedback sent, counter spent
	denied  bool  // a person denied the call: it did not run
	err     error // aborts the run
}

// runTools executes a batch, in parallel when allowed, and appends results
// in call order. A call in denied does not run: its result is its
// refusal (approval.go).
func (rs *runState[T]) runTools(calls []ToolCall, denied map[string]string) error {
	r := rs.r
	results := make([]toolResult, len(calls))
	call := func(i int, c ToolCall) {
		if why, ok := denied[c.ID]; ok {
			results[i] = toolResult{content: why, denied: true}
			return
		}
		results[i] = r.callTool(rs.ctx, c)
	}
	if r.parallel(calls) {
		var wg sync.WaitGroup
		for i, c := range calls {
			wg.Go(func() { call(i, c) })
		}
		wg.Wait()
	} else {
		for i, c := range calls {
			call(i, c)
		}
	}
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
		r.appendMessage(rs.id, Message{Role: roleTool, ToolCallID: c.ID, ToolName: c.Name, Content: content})
		ev := ToolReturnEvent{RunID: rs.id, ToolName: c.Name, ToolCallID: c.ID, Success: !res.retry && !res.denied && res.err == nil}
		switch {
		case res.err != nil:
			ev.ErrorType = toolErrorFailed
		case res.retry:
			ev.ErrorType = toolErrorRetry
		case res.denied:
			ev.ErrorType = toolErrorDenied
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
			r.logger.LogAttrs(ctx, slog.LevelError, "llm: tool panicked", slog.String("tool", c.Name),
				slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
			res = toolResult{err: fmt.Errorf("llm: tool %s panicked: %v", c.Name, p)}
		}
	}()
	out, err := t.Call(ctx, json.RawMessage(args))
	if err != nil {
		var re *RetryError
		if errors.As(err, &re) {
			return toolResult{retry: true, content: re.Message + retryHint}
		}
		return toolResult{err: fmt.Errorf("llm: tool %s: %w", c.Name, err)}
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
