package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ApprovalRequestedEvent reports a tool call that waits for a person's
// approval: the run paused before the response's tool calls ran ([Run] and
// [Resume] returned an [*ApprovalPendingError]).
type ApprovalRequestedEvent struct {
	RunID      string `json:"run_id"`
	ToolName   string `json:"tool_name"`
	ToolCallID string `json:"tool_call_id"`
	// Arguments is the raw JSON string as sent by the model.
	Arguments string `json:"arguments"`
	// Deadline, when set, is when the call is denied if nobody decided
	// (Options.ApprovalTimeout after the pause).
	Deadline time.Time `json:"deadline,omitzero"`
}

// ApprovalGrantedEvent reports a person's approval of a waiting call: it
// runs, once, when the run resumes.
type ApprovalGrantedEvent struct {
	RunID      string `json:"run_id"`
	ToolName   string `json:"tool_name"`
	ToolCallID string `json:"tool_call_id"`
	// By names who decided (a person's name).
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// ApprovalDeniedEvent reports a waiting call denied: it never runs, and
// the model gets a refusal as its result, with the reason.
type ApprovalDeniedEvent struct {
	RunID      string `json:"run_id"`
	ToolName   string `json:"tool_name"`
	ToolCallID string `json:"tool_call_id"`
	By         string `json:"by,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// Expired is set when nobody decided before the deadline.
	Expired bool `json:"expired,omitempty"`
}

func (ApprovalRequestedEvent) llmEvent() {}
func (ApprovalGrantedEvent) llmEvent()   {}
func (ApprovalDeniedEvent) llmEvent()    {}

// ApprovalPendingError is what [Run] and [Resume] return when the run
// paused for a person's approval of some of a response's tool calls
// (Tool.NeedsApproval): none of that response's calls has run. The pause
// is the runner's state, not a waiting goroutine: record each decision
// with [Runner.Decide], then call [Resume]. Run on a paused runner returns
// it again, without a request.
type ApprovalPendingError struct {
	// Calls are the calls still waiting, in call order.
	Calls []ApprovalRequestedEvent
}

// Error lists the waiting calls.
func (e *ApprovalPendingError) Error() string {
	names := make([]string, len(e.Calls))
	for i, c := range e.Calls {
		names[i] = c.ToolName
	}
	return fmt.Sprintf("llm: the run waits for a person's approval of %s", strings.Join(names, ", "))
}

// pausedRun is a run that waits for approvals: the tool calls of its last
// response, none of them run yet, and what the run had counted.
type pausedRun struct {
	id            string
	calls         []ToolCall // the response's calls, in order
	waiting       []ApprovalRequestedEvent
	decided       map[string]decision // by call id
	usage         runUsage
	promptIndex   int
	outputRetries int
	toolRetries   map[string]int
}

// decision is one call's decision; a denial's refusal is what the model
// gets as its result.
type decision struct {
	approved bool
	refusal  string
}

// needsApproval returns the calls of a response that wait for a person.
// A call of an unknown tool or with arguments that are not JSON needs no
// approval: it never runs (it gets retry feedback).
func (r *Runner) needsApproval(calls []ToolCall) []ToolCall {
	var out []ToolCall
	for _, c := range calls {
		t := r.toolIndex[c.Name]
		if t == nil || t.NeedsApproval == nil {
			continue
		}
		args := strings.TrimSpace(c.Arguments)
		if args == "" {
			args = "{}"
		}
		if json.Valid([]byte(args)) && t.NeedsApproval(json.RawMessage(args)) {
			out = append(out, c)
		}
	}
	return out
}

// pause pauses the run before calls when some wait for approval: each
// waiting call's ApprovalRequestedEvent is emitted, and the error to end
// the run with is returned (nil when none waits).
func (rs *runState[T]) pause(calls []ToolCall) error {
	r := rs.r
	waits := r.needsApproval(calls)
	if len(waits) == 0 {
		return nil
	}
	var deadline time.Time
	if r.approvalTimeout > 0 {
		deadline = r.now().Add(r.approvalTimeout).UTC()
	}
	p := &pausedRun{id: rs.id, calls: calls, decided: map[string]decision{}, usage: rs.usage,
		promptIndex: rs.promptIndex, outputRetries: rs.outputRetries, toolRetries: rs.toolRetries}
	for _, c := range waits {
		ev := ApprovalRequestedEvent{RunID: rs.id, ToolName: c.Name, ToolCallID: c.ID, Arguments: c.Arguments, Deadline: deadline}
		p.waiting = append(p.waiting, ev)
		r.emit(ev)
	}
	r.paused = p
	return p.pending()
}

// pending is the error of a paused run: the calls without a decision.
func (p *pausedRun) pending() *ApprovalPendingError {
	e := &ApprovalPendingError{}
	for _, w := range p.waiting {
		if _, ok := p.decided[w.ToolCallID]; !ok {
			e.Calls = append(e.Calls, w)
		}
	}
	return e
}

// Pending returns the calls a paused run waits for (those without a
// decision), in call order: empty, not nil, when every call is decided
// and the run waits for [Resume]; nil when no run is paused.
func (r *Runner) Pending() []ApprovalRequestedEvent {
	if r.paused == nil {
		return nil
	}
	if calls := r.paused.pending().Calls; calls != nil {
		return calls
	}
	return []ApprovalRequestedEvent{}
}

// ErrNoSuchApproval: [Runner.Decide] was given a call that no paused run
// waits for (never asked, or decided already).
var ErrNoSuchApproval = errors.New("llm: no tool call waits for this approval")

// Decide records a decision on callID, a call the paused run waits for,
// and emits its [ApprovalGrantedEvent] or [ApprovalDeniedEvent]. by names
// who decided; reason goes with a denial to the model. expired marks a
// denial because the deadline passed. The run does not go on until
// [Resume] is called.
func (r *Runner) Decide(callID string, approved bool, by, reason string, expired bool) error {
	p := r.paused
	if p == nil {
		return fmt.Errorf("%w: %q (no run is paused)", ErrNoSuchApproval, callID)
	}
	var w *ApprovalRequestedEvent
	for i := range p.waiting {
		if p.waiting[i].ToolCallID == callID {
			w = &p.waiting[i]
		}
	}
	if w == nil {
		return fmt.Errorf("%w: %q", ErrNoSuchApproval, callID)
	}
	if _, done := p.decided[callID]; done {
		return fmt.Errorf("%w: %q was decided already", ErrNoSuchApproval, callID)
	}
	if approved {
		p.decided[callID] = decision{approved: true}
		r.emit(ApprovalGrantedEvent{RunID: p.id, ToolName: w.ToolName, ToolCallID: callID, By: by, Reason: reason})
		return nil
	}
	p.decided[callID] = decision{refusal: refusal(w.ToolName, by, reason, expired, r.approvalTimeout)}
	r.emit(ApprovalDeniedEvent{RunID: p.id, ToolName: w.ToolName, ToolCallID: callID, By: by, Reason: reason, Expired: expired})
	return nil
}

// dropPaused drops a paused run: each call still waiting is denied
// (its ApprovalDeniedEvent says why), none runs.
func (r *Runner) dropPaused(why string) {
	p := r.paused
	if p == nil {
		return
	}
	for _, w := range p.pending().Calls {
		r.emit(ApprovalDeniedEvent{RunID: p.id, ToolName: w.ToolName, ToolCallID: w.ToolCallID, Reason: why})
	}
	r.paused = nil
}

// refusal is the tool result the model gets for a denied call.
func refusal(tool, by, reason string, expired bool, timeout time.Duration) string {
	var b strings.Builder
	switch {
	case expired:
		fmt.Fprintf(&b, "Tool call denied: nobody approved the call of %s in time", tool)
		if timeout > 0 {
			fmt.Fprintf(&b, " (%s)", timeout)
		}
		b.WriteString(".")
	case by != "":
		fmt.Fprintf(&b, "Tool call denied by %s.", by)
	default:
		b.WriteString("Tool call denied.")
	}
	if reason = strings.TrimSpace(reason); reason != "" {
		fmt.Fprintf(&b, " Reason: %s", reason)
	}
	b.WriteString(" The tool did not run. Do not call it again with the same arguments unless you are asked to; go on without it, or ask the person what to do.")
	return b.String()
}

// Resume goes on with a paused run once every call it waits for has a
// decision: the response's calls run, in parallel when allowed as Run
// does, an approved one exactly once, a denied one not at all (its result
// is the refusal), and the ReAct loop continues to the run's answer
// against out (which may pause again). While a call is undecided it
// returns the [*ApprovalPendingError] again, without a request.
func Resume[T any](ctx context.Context, r *Runner, out *Output[T]) (T, error) {
	var zero T
	switch {
	case r.closed:
		return zero, ErrClosed
	case out == nil:
		return zero, errors.New("llm: Resume needs an output")
	case r.paused == nil:
		return zero, errors.New("llm: Resume: no run is paused")
	}
	p := r.paused
	if e := p.pending(); len(e.Calls) > 0 {
		return zero, e
	}
	r.paused = nil
	rs := &runState[T]{r: r, ctx: ctx, id: p.id, out: out, format: out.format, usage: p.usage,
		promptIndex: p.promptIndex, outputRetries: p.outputRetries, toolRetries: p.toolRetries}
	r.lastRunID = rs.id
	rs.system = r.systemMessages(ctx)
	denied := map[string]string{}
	for id, d := range p.decided {
		if !d.approved {
			denied[id] = d.refusal
		}
	}
	res, err := rs.resume(p.calls, denied)
	r.budget.input += rs.usage.input - p.usage.input
	r.budget.output += rs.usage.output - p.usage.output
	if err != nil {
		var pe *ApprovalPendingError
		if !errors.As(err, &pe) {
			r.heal(rs.id, err)
		}
		return zero, err
	}
	return res, nil
}

// resume runs the paused response's calls, then the loop.
func (rs *runState[T]) resume(calls []ToolCall, denied map[string]string) (T, error) {
	var zero T
	if err := rs.ctx.Err(); err != nil {
		return zero, err
	}
	if err := rs.runTools(calls, denied); err != nil {
		return zero, err
	}
	return rs.loop()
}

// pausedOf finds, in a restored history's events, a run that paused and
// did not resume: the approval requests after the last message, with the
// decisions after them, and the run's counters rebuilt from its events.
// h is the history the events fold into; nil when no run waits.
func pausedOf(events []Event, h []Message) *pausedRun {
	lastMsg := -1
	for i, e := range events {
		if _, ok := e.(MessageEvent); ok {
			lastMsg = i
		}
	}
	if lastMsg < 0 || len(h) == 0 {
		return nil
	}
	last := h[len(h)-1]
	if last.Role != roleAssistant || len(last.ToolCalls) == 0 {
		return nil
	}
	var p *pausedRun
	for _, e := range events[lastMsg+1:] {
		switch ev := e.(type) {
		case ApprovalRequestedEvent:
			if p == nil {
				p = &pausedRun{id: ev.RunID, calls: last.ToolCalls, decided: map[string]decision{}}
			}
			p.waiting = append(p.waiting, ev)
		case ApprovalGrantedEvent:
			if p != nil {
				p.decided[ev.ToolCallID] = decision{approved: true}
			}
		case ApprovalDeniedEvent:
			if p != nil {
				p.decided[ev.ToolCallID] = decision{refusal: refusal(ev.ToolName, ev.By, ev.Reason, ev.Expired, 0)}
			}
		case CompactedEvent, ClearedEvent:
			return nil // the paused response was folded or dropped
		}
	}
	if p == nil {
		return nil
	}
	p.promptIndex = -1
	n := 0 // the history's length as the events fold
	for _, e := range events {
		switch ev := e.(type) {
		case MessageEvent:
			if ev.RunID == p.id && p.promptIndex < 0 {
				p.promptIndex = n
			}
			n++
		case CompactedEvent:
			n = n - ev.ReplacedMessageCount + 1
			if p.promptIndex >= 0 {
				p.promptIndex = promptAfter(p.promptIndex, compactResult{replaced: ev.ReplacedMessageCount})
			}
		case ClearedEvent:
			n, p.promptIndex = 0, -1
		case UsageEvent:
			if ev.RunID == p.id {
				p.usage.requests++
				p.usage.input += ev.InputTokens
				p.usage.output += ev.OutputTokens
			}
		case ToolCallEvent:
			if ev.RunID == p.id {
				p.usage.toolCalls++
			}
		}
	}
	p.promptIndex = max(p.promptIndex, 0)
	return p
}
