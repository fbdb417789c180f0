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
	"time"

	"github.com/google/uuid"
	openai "github.com/sashabaranov/go-openai"
)

// Errors a run can end with besides [*UsageLimitError], API errors and the
// context's error.
var (
	// ErrOutputRetriesExceeded: the model's final output stayed invalid
	// after RuntimeConfig.Retries corrections.
	ErrOutputRetriesExceeded = errors.New("llm: output retries exceeded")
	// ErrToolRetriesExceeded: one tool failed with retry errors more than
	// RuntimeConfig.Retries times in a run.
	ErrToolRetriesExceeded = errors.New("llm: tool retries exceeded")
	// ErrContentFilter: the provider stopped the answer with
	// finish_reason content_filter.
	ErrContentFilter = errors.New("llm: response stopped by the content filter")
	// ErrContextLength: the conversation does not fit the model's context
	// window and compaction is off or did not help.
	ErrContextLength = errors.New("llm: context length exceeded")
	// ErrClosed: the runner was closed.
	ErrClosed = errors.New("llm: runner closed")
)

// SystemPrompt returns one system-prompt section; it is evaluated at the
// start of every run. An empty string omits the section.
type SystemPrompt func(ctx context.Context) string

// Options are the injectable parts of a [Runner].
type Options struct {
	// HTTPClient sends each model request (e.g. llmtest's
	// Server.HTTPClient()); nil uses a private *http.Client. [Runner.Close]
	// releases its idle connections.
	HTTPClient openai.HTTPDoer
	// Sleep waits d between HTTP retries, or until ctx is done, whichever is
	// first, and returns context.Cause(ctx) in the second case (default: a
	// real wait). Tests inject one that records or scales the waits.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter scales the retry backoffs; it must return values in [0, 1)
	// (default math/rand/v2).
	Jitter func() float64
	// Tools the model may call.
	Tools []*Tool
	// SystemPrompts are the sections after the backstory and the date.
	SystemPrompts []SystemPrompt
	// Observer receives every event synchronously, in order, on the
	// goroutine that runs the loop; it must not call back into the Runner.
	// Nil discards.
	Observer func(Event)
	// Prices prices usage events (default [DefaultPriceTable]).
	Prices *PriceTable
	// Logger receives debug and warning lines, one per HTTP retry included;
	// nil discards.
	Logger *slog.Logger
	// Now is the clock for the date section (default time.Now).
	Now func() time.Time
	// NewRunID makes run ids (default random UUIDs).
	NewRunID func() string
	// TeamBudget, when set, is the team's spend ceiling, shared with the
	// other runners of the team: each model call reserves its worst case
	// against it.
	TeamBudget *Budget
	// RateLimiter, when set, paces the model calls.
	RateLimiter *RateLimiter
}

// Runner is the ReAct loop of one agent: its history, tools, budgets and
// compaction. Runs are not concurrent: call [Run], [Runner.Compact],
// [Runner.Clear] and [Runner.Restore] from one goroutine at a time, as an
// actor does.
type Runner struct {
	cfg       Config
	client    *client
	tools     []*Tool
	toolIndex map[string]*Tool
	wireTools []openai.Tool
	system    []SystemPrompt
	observer  func(Event)
	prices    *PriceTable
	logger    *slog.Logger
	now       func() time.Time
	newRunID  func() string

	history         []Message
	pendingOps      []string // operator actions waiting for the next prompt
	budget          agentBudget
	lastInputTokens int       // prompt size of the latest response, 0 if unknown
	lastCall        callStats // the latest model call's latency and HTTP attempts (UsageEvent)
	lastRunID       string    // the latest run's id: Conclude answers for it
	closed          bool
	own, team       *Budget      // the agent's and the team's spend ceilings, nil for none (spend.go)
	limiter         *RateLimiter // nil for none
	cut             *cutRun      // a run cut by a crash, replayable by the next run (RestoreCut)
}

// NewRunner validates cfg and builds a runner.
func NewRunner(cfg Config, opts Options) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Runtime.HTTP = httpConfig(cfg.Runtime.HTTP).withDefaults()
	cfg.Compaction = cfg.Compaction.withDefaults()
	c, err := newClient(cfg.Model, cfg.Runtime.HTTP, opts)
	if err != nil {
		return nil, err
	}
	r := &Runner{cfg: cfg, client: c, system: opts.SystemPrompts, observer: opts.Observer,
		prices: opts.Prices, logger: opts.Logger, now: opts.Now, newRunID: opts.NewRunID,
		team: opts.TeamBudget, limiter: opts.RateLimiter}
	if l := cfg.AgentLimits.SpendLimit; l != nil {
		r.own = NewBudget(*l, 0)
	}
	if r.prices == nil {
		r.prices = DefaultPriceTable()
	}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.newRunID == nil {
		r.newRunID = func() string { return uuid.NewString() }
	}
	if r.observer == nil {
		r.observer = func(Event) {}
	}
	if err := r.setTools(opts.Tools...); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// setTools replaces the tools the model may call.
func (r *Runner) setTools(tools ...*Tool) error {
	index := make(map[string]*Tool, len(tools))
	wire := make([]openai.Tool, 0, len(tools))
	for _, t := range tools {
		if t == nil || t.Call == nil || !namePattern.MatchString(t.Name) {
			return fmt.Errorf("llm: tool %v: needs a valid name and a Call function", toolName(t))
		}
		if _, dup := index[t.Name]; dup {
			return fmt.Errorf("llm: tool %s declared twice", t.Name)
		}
		index[t.Name] = t
		// The schema is encoded once, here, not on every request.
		params := json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false,"required":[]}`)
		switch {
		case len(t.RawParameters) > 0:
			if !json.Valid(t.RawParameters) {
				return fmt.Errorf("llm: tool %s: its raw parameters schema is not valid JSON", t.Name)
			}
			params = t.RawParameters
		case t.Parameters != nil:
			b, err := json.Marshal(t.Parameters)
			if err != nil {
				return fmt.Errorf("llm: tool %s: encoding its parameters schema: %w", t.Name, err)
			}
			params = b
		}
		wire = append(wire, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Strict: t.Strict, Parameters: params}})
	}
	r.tools, r.toolIndex, r.wireTools = tools, index, wire
	return nil
}

func toolName(t *Tool) string {
	if t == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%q", t.Name)
}

// History returns a copy of the history.
func (r *Runner) History() []Message { return append([]Message(nil), r.history...) }

// AgentUsage returns the lifetime tier's counters: runs started, input and
// output tokens.
func (r *Runner) AgentUsage() (runs, input, output int) {
	return r.budget.runs, r.budget.input, r.budget.output
}

// Close releases the idle connections of the runner's HTTP client. It is
// idempotent; later runs fail with [ErrClosed].
func (r *Runner) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	return r.client.Close()
}

// RecordOperatorAction puts a command a person ran into the history as one
// user entry attributed to the human, so that the model reasons about
// it on its next run without mistaking it for its own tool call. With an
// empty history (before the first run, or after a clear) the entry is held
// and prepended to the next run's prompt, so the first request keeps its
// shape; otherwise it is appended (and emitted) at once.
func (r *Runner) RecordOperatorAction(commandText, result string) {
	entry := operatorAction(commandText, result)
	if len(r.history) == 0 {
		r.pendingOps = append(r.pendingOps, entry)
		return
	}
	r.appendMessage("", UserText(entry))
}

// operatorAction renders the history entry for a command a person ran.
func operatorAction(commandText, result string) string {
	return fmt.Sprintf("[Operator action] The human ran %q. \nResult:\n%s", commandText, result)
}

// foldOperatorActions prepends the held operator actions to prompt.
func (r *Runner) foldOperatorActions(prompt Message) Message {
	if len(r.pendingOps) == 0 {
		return prompt
	}
	head := strings.Join(r.pendingOps, "\n\n") + "\n\n"
	r.pendingOps = nil
	if len(prompt.Parts) > 0 {
		prompt.Parts = append([]Part{TextPart(head)}, prompt.Parts...)
	} else {
		prompt.Content = head + prompt.Content
	}
	return prompt
}

func (r *Runner) emit(e Event) { r.observer(e) }

func (r *Runner) appendMessage(runID string, m Message) {
	r.history = append(r.history, m)
	r.emit(MessageEvent{RunID: runID, Message: m})
}

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
	if err := r.budget.preflight(r.cfg.AgentLimits); err != nil {
		return zero, err
	}
	rs := &runState[T]{r: r, ctx: ctx, id: r.newRunID(), out: out, format: out.format}
	r.lastRunID = rs.id
	res, err := rs.run(prompt)
	r.budget.input += rs.usage.input
	r.budget.output += rs.usage.output
	if err != nil {
		r.heal(rs.id, err)
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
	var zero T
	r := rs.r
	if prompt.Role == "" {
		prompt.Role = roleUser
	}
	rs.system = r.systemMessages(rs.ctx)
	prompt = r.foldOperatorActions(prompt)
	rs.replay = r.takeCut(rs.ctx, rs.id, prompt)
	rs.promptIndex = len(r.history)
	r.appendMessage(rs.id, prompt)
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
		return false, res, rs.runTools(msg.ToolCalls)
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
	add("The current date is " + r.now().Format(time.DateOnly) + ".")
	for _, p := range r.system {
		add(p(ctx))
	}
	return out
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
	return resp, err
}

// callStats is what complete measured of the last call.
type callStats struct {
	latency  time.Duration
	attempts int
}

func (r *Runner) usageEvent(runID string, resp openai.ChatCompletionResponse) UsageEvent {
	e := UsageEvent{RunID: runID, ModelName: resp.Model, ProviderName: "openai", Requests: 1,
		InputTokens: resp.Usage.PromptTokens, OutputTokens: resp.Usage.CompletionTokens,
		Latency: r.lastCall.latency, Attempts: r.lastCall.attempts}
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

// toolResult is one executed call.
type toolResult struct {
	content string
	retry   bool  // model-fixable failure: feedback sent, counter spent
	err     error // aborts the run
}

// runTools executes a batch, in parallel when allowed, and appends results
// in call order.
func (rs *runState[T]) runTools(calls []ToolCall) error {
	r := rs.r
	results := make([]toolResult, len(calls))
	if r.parallel(calls) {
		var wg sync.WaitGroup
		for i, c := range calls {
			wg.Go(func() { results[i] = r.callTool(rs.ctx, c) })
		}
		wg.Wait()
	} else {
		for i, c := range calls {
			results[i] = r.callTool(rs.ctx, c)
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
		r.emit(ToolReturnEvent{RunID: rs.id, ToolName: c.Name, ToolCallID: c.ID, Success: !res.retry && res.err == nil})
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
		r.emit(ToolReturnEvent{RunID: runID, ToolName: c.Name, ToolCallID: c.ID, Success: false})
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
