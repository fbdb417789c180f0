package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// outputSpec is what the loop needs of an [Output], whatever its type.
type outputSpec[T any] interface {
	Name() string
	Parse(string) (T, error)
}

// Run sends prompt with the history and runs the ReAct loop until the model
// answers a valid out: tools are executed and answered, invalid
// outputs are fed back for correction, both usage tiers are enforced, and a
// failed run leaves a history the next run can send.
func Run[T any](ctx context.Context, r *Runner, prompt Message, out *Output[T]) (T, error) {
	var zero T
	if r.closed {
		return zero, ErrClosed
	}
	if out == nil {
		return zero, errors.New("llm: Run needs an output")
	}
	if r.paused != nil { // the paused run goes on with Resume
		return zero, r.paused.pending()
	}
	if err := r.budget.preflight(r.cfg.AgentLimits); err != nil {
		return zero, err
	}
	rs := &runState[T]{r: r, ctx: ctx, id: r.newRunID(), out: out, format: out.format}
	r.lastRunID = rs.id
	res, err := rs.run(prompt)
	r.budget.input += rs.usage.input
	r.budget.output += rs.usage.output
	if err != nil {
		if r.paused == nil { // a paused run's calls are answered when it resumes
			r.heal(rs.id, err)
		}
		return zero, err
	}
	return res, nil
}

// concludePrompt asks for a tool-free answer after a run-tier breach.
const concludePrompt = "[Usage limit] This run has reached a usage limit (%s). Tools are no longer available. " +
	"Answer the requester now with what you have: say what you found, what is done and what is left."

// Conclude answers a run-tier usage-limit breach that [Run] returned:
// one more model request for the same run, with the tools removed,
// asking the model to answer the requester with what it has. The request
// is counted (its usage event carries the run's id and its tokens count
// against the lifetime tier) and the exchange joins the history. When the
// request fails or its answer is not a valid out, Conclude returns breach
// and the history is left as a next run can send it. Any other error is
// returned as is, without a request.
func Conclude[T any](ctx context.Context, r *Runner, out *Output[T], breach error) (T, error) {
	var zero T
	var le *UsageLimitError
	if !errors.As(breach, &le) || le.Tier != tierRun || r.closed || out == nil || ctx.Err() != nil {
		return zero, breach
	}
	ask := UserText(fmt.Sprintf(concludePrompt, le.Reason))
	rs := &runState[T]{r: r, ctx: ctx, id: r.lastRunID, out: out, format: out.format, system: r.systemMessages(ctx)}
	req := rs.request()
	req.Messages = append(req.Messages, ask.toOpenAI())
	req.Tools, req.ParallelToolCalls = nil, nil
	resp, err := r.complete(ctx, rs.id, req)
	if err != nil {
		r.logger.LogAttrs(ctx, slog.LevelWarn, "llm: tool-free conclusion failed", slog.String("run_id", rs.id), slog.String("error", err.Error()))
		return zero, breach
	}
	r.appendMessage(rs.id, ask)
	usage := r.usageEvent(rs.id, resp)
	r.budget.input += usage.InputTokens
	r.budget.output += usage.OutputTokens
	r.lastInputTokens = usage.InputTokens
	if len(resp.Choices) == 0 {
		r.emit(usage)
		return zero, breach
	}
	msg := fromOpenAI(resp.Choices[0].Message)
	r.appendMessage(rs.id, msg)
	r.emit(usage)
	if len(msg.ToolCalls) > 0 || msg.Refusal != "" {
		r.heal(rs.id, breach)
		return zero, breach
	}
	res, err := out.Parse(msg.Content)
	if err != nil {
		return zero, breach
	}
	return res, nil
}

type runState[T any] struct {
	r              *Runner
	ctx            context.Context
	id             string
	out            outputSpec[T]
	format         *openai.ChatCompletionResponseFormat
	usage          runUsage
	system         []openai.ChatCompletionMessage
	promptIndex    int
	outputRetries  int
	toolRetries    map[string]int
	replay         []Message // the cut run this run replays, prompt first (RestoreCut); nil for none
	autoCompacted  bool
	forcedCompacts int
}

func (rs *runState[T]) run(prompt Message) (T, error) {
	r := rs.r
	if prompt.Role == "" {
		prompt.Role = roleUser
	}
	rs.system = r.systemMessages(rs.ctx)
	prompt = r.foldOperatorActions(prompt)
	rs.replay = r.takeCut(rs.ctx, rs.id, prompt)
	rs.promptIndex = len(r.history)
	r.appendMessage(rs.id, prompt)
	return rs.loop()
}

// loop requests and handles the model's answers until the run is over.
func (rs *runState[T]) loop() (T, error) {
	var zero T
	r := rs.r
	for {
		if err := rs.ctx.Err(); err != nil {
			return zero, err
		}
		if err := r.cfg.RunLimits.beforeRequest(rs.usage); err != nil {
			return zero, err
		}
		if !rs.autoCompacted && r.shouldCompact() {
			rs.autoCompacted = true
			res, err := r.compactPrefix(rs.ctx, rs.id, rs.promptIndex)
			if err != nil {
				return zero, err
			}
			rs.promptIndex = promptAfter(rs.promptIndex, res)
		}
		if m, ok := rs.nextReplayed(); ok { // paid for by the cut run: not requested again
			if done, res, err := rs.answer(m, "", nil); done || err != nil {
				return res, err
			}
			continue
		}
		resp, err := r.complete(rs.ctx, rs.id, rs.request())
		if err != nil {
			if !isContextLength(err) {
				return zero, fmt.Errorf("llm: chat completion with model %s: %w", r.client.model.Model, err)
			}
			if !r.compactionOn() || rs.forcedCompacts > 0 {
				return zero, fmt.Errorf("%w (compaction %s): %w", ErrContextLength, r.compactionState(rs.forcedCompacts), err)
			}
			rs.forcedCompacts++
			res, err := r.compactPrefix(rs.ctx, rs.id, rs.promptIndex)
			if err != nil {
				return zero, err
			}
			rs.promptIndex = promptAfter(rs.promptIndex, res)
			continue
		}
		rs.usage.requests++
		if done, res, err := rs.handle(resp); done || err != nil {
			return res, err
		}
	}
}

// handle processes one response; done means the run is over with res.
func (rs *runState[T]) handle(resp openai.ChatCompletionResponse) (done bool, res T, err error) {
	r := rs.r
	usage := r.usageEvent(rs.id, resp)
	rs.usage.input += usage.InputTokens
	rs.usage.output += usage.OutputTokens
	r.lastInputTokens = usage.InputTokens
	if len(resp.Choices) == 0 {
		r.emit(usage)
		if err := r.cfg.RunLimits.afterResponse(rs.usage); err != nil {
			return true, res, err
		}
		return false, res, rs.outputRetry(errors.New("the response had no choices"), false)
	}
	choice := resp.Choices[0]
	return rs.answer(fromOpenAI(choice.Message), choice.FinishReason, &usage)
}

// answer processes the model's answer msg, finished for finish; usage is
// its usage event, nil for an answer replayed from the log of a cut run
// (RestoreCut).
func (rs *runState[T]) answer(msg Message, finish openai.FinishReason, usage *UsageEvent) (done bool, res T, err error) {
	r := rs.r
	r.appendMessage(rs.id, msg)
	for _, c := range msg.ToolCalls {
		r.emit(ToolCallEvent{RunID: rs.id, ToolName: c.Name, ToolCallID: c.ID, Arguments: c.Arguments})
	}
	if usage != nil {
		r.emit(*usage)
	}
	if err := r.cfg.RunLimits.afterResponse(rs.usage); err != nil {
		return true, res, err
	}
	if len(msg.ToolCalls) > 0 { // a response with tool calls is never final
		if err := r.cfg.RunLimits.beforeTools(rs.usage, len(msg.ToolCalls)); err != nil {
			return true, res, err
		}
		rs.usage.toolCalls += len(msg.ToolCalls)
		if err := rs.pause(msg.ToolCalls); err != nil {
			return true, res, err
		}
		return false, res, rs.runTools(msg.ToolCalls, nil)
	}
	if finish == openai.FinishReasonContentFilter {
		return true, res, ErrContentFilter
	}
	var perr error
	switch {
	case msg.Refusal != "":
		perr = fmt.Errorf("the model refused: %s", msg.Refusal)
	default:
		res, perr = rs.out.Parse(msg.Content)
		if perr != nil && finish == openai.FinishReasonLength {
			perr = fmt.Errorf("the response was cut off at the token limit (%w); answer more briefly", perr)
		}
	}
	if perr == nil {
		return true, res, nil
	}
	return false, res, rs.outputRetry(perr, true)
}

// outputRetry spends one output retry; with feedback it tells the model
// what was wrong.
func (rs *runState[T]) outputRetry(cause error, feedback bool) error {
	rs.outputRetries++
	if rs.outputRetries > rs.r.cfg.Runtime.Retries {
		return fmt.Errorf("%w (%d retries): %w", ErrOutputRetriesExceeded, rs.r.cfg.Runtime.Retries, cause)
	}
	rs.r.logger.LogAttrs(rs.ctx, slog.LevelDebug, "llm: invalid output, retrying", slog.String("run_id", rs.id), slog.String("reason", cause.Error()))
	if feedback {
		rs.r.appendMessage(rs.id, UserText(fmt.Sprintf(
			"Validation feedback:\n%v\n\nFix the errors and try again: answer with JSON that matches the %s schema.", cause, rs.out.Name())))
	}
	return nil
}

// request assembles system block + history, tools and the output format.
func (rs *runState[T]) request() openai.ChatCompletionRequest {
	r := rs.r
	hist := window(r.history, r.cfg.Compaction.MaxMessages)
	msgs := make([]openai.ChatCompletionMessage, 0, len(rs.system)+len(hist))
	msgs = append(msgs, rs.system...)
	for _, m := range hist {
		msgs = append(msgs, m.toOpenAI())
	}
	req := openai.ChatCompletionRequest{Messages: msgs, Tools: r.wireTools, ResponseFormat: rs.format}
	if p := r.cfg.Runtime.ParallelToolCalls; p != nil && len(r.wireTools) > 0 {
		req.ParallelToolCalls = *p
	}
	return req
}

// window returns the last max entries of h (all of h when max is 0),
// extended backwards while the first one is a tool reply, so that no reply
// is sent without the assistant message that called it.
func window(h []Message, max int) []Message {
	if max <= 0 || len(h) <= max {
		return h
	}
	start := len(h) - max
	for start > 0 && h[start].Role == roleTool {
		start--
	}
	return h[start:]
}

func (r *Runner) systemMessages(ctx context.Context) []openai.ChatCompletionMessage {
	out := make([]openai.ChatCompletionMessage, 0, 2+len(r.system))
	add := func(s string) {
		if strings.TrimSpace(s) != "" {
			out = append(out, openai.ChatCompletionMessage{Role: roleSystem, Content: s})
		}
	}
	add(r.cfg.Backstory)
	add(r.date.at(r.now()))
	for _, p := range r.system {
		add(p(ctx))
	}
	return out
}

// dateLine is the system prompt's line naming the current date, kept
// with the day it names: every run of that day reuses it.
type dateLine struct {
	year, day int
	month     time.Month
	text      string
}

// at returns the line for the day of t, made anew when the day changed.
func (d *dateLine) at(t time.Time) string {
	y, m, day := t.Date()
	if d.text == "" || y != d.year || m != d.month || day != d.day {
		*d = dateLine{year: y, month: m, day: day, text: "The current date is " + t.Format(time.DateOnly) + "."}
	}
	return d.text
}

// complete sends one chat completion of run runID, once the guards admit
// it (spend ceilings and rate limit), and notes, for its usage
// event, how long it took and how many HTTP attempts it needed (the retry
// doer counts them through ctx; for a stream, those of its last sending).
func (r *Runner) complete(ctx context.Context, runID string, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	ctx, settle, err := r.admit(ctx, req)
	if err != nil {
		return openai.ChatCompletionResponse{}, err
	}
	var attempts int
	start := time.Now()
	resp, err := r.send(withAttemptCount(ctx, &attempts), runID, req)
	r.lastCall = callStats{latency: time.Since(start), attempts: attempts}
	settle(resp, err)
	if err != nil && attempts > 0 { // a call that was sent and failed: say so, and how
		r.emit(r.failedCallEvent(runID, err))
	}
	return resp, err
}

// failedCallEvent is the usage event of a model call that failed: no
// tokens, no request counted, and ErrorType saying how it failed.
func (r *Runner) failedCallEvent(runID string, err error) UsageEvent {
	c := r.client
	return UsageEvent{RunID: runID, ModelName: c.model.Model, RequestModel: c.model.Model, ProviderName: c.provider,
		ServerAddress: c.host, ServerPort: c.port,
		Latency: r.lastCall.latency, Attempts: r.lastCall.attempts, ErrorType: callErrorType(err)}
}

// callErrorType names how a model call failed, in few words: the
// provider's error code (context_length_exceeded, rate_limit_exceeded…)
// or, without one, its HTTP status; timeout; canceled; or _OTHER.
func callErrorType(err error) string {
	var api *openai.APIError
	isAPI := errors.As(err, &api)
	code, _ := func() (string, bool) {
		if !isAPI {
			return "", false
		}
		c, ok := api.Code.(string)
		return c, ok
	}()
	switch {
	case code != "":
		return code
	case isAPI && api.HTTPStatusCode > 0:
		return strconv.Itoa(api.HTTPStatusCode)
	case errors.Is(err, ErrAttemptTimeout), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "_OTHER"
}

// callStats is what complete measured of the last call.
type callStats struct {
	latency  time.Duration
	attempts int
}

func (r *Runner) usageEvent(runID string, resp openai.ChatCompletionResponse) UsageEvent {
	c := r.client
	e := UsageEvent{RunID: runID, ModelName: resp.Model, RequestModel: c.model.Model, ProviderName: c.provider,
		ServerAddress: c.host, ServerPort: c.port, ResponseID: resp.ID, Requests: 1,
		InputTokens: resp.Usage.PromptTokens, OutputTokens: resp.Usage.CompletionTokens,
		Latency: r.lastCall.latency, Attempts: r.lastCall.attempts}
	if len(resp.Choices) > 0 {
		e.FinishReason = string(resp.Choices[0].FinishReason)
	}
	if e.ModelName == "" {
		e.ModelName = r.client.model.Model
	}
	if d := resp.Usage.PromptTokensDetails; d != nil {
		e.CacheReadTokens = d.CachedTokens
	}
	if d := resp.Usage.CompletionTokensDetails; d != nil {
		e.ReasoningTokens = d.ReasoningTokens
	}
	e.Cost = r.prices.Cost(e.ModelName, e.InputTokens, e.OutputTokens, e.CacheReadTokens, e.CacheWriteTokens)
	return e
}
