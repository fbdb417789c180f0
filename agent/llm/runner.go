package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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
	// ApprovalTimeout, when positive, is how long a call waits for a
	// person's approval (Tool.NeedsApproval) before it is denied: the
	// deadline its ApprovalRequestedEvent carries. Zero: no deadline.
	ApprovalTimeout time.Duration
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
	paused          *pausedRun   // a run waiting for approvals, nil for none (approval.go)
	approvalTimeout time.Duration
	date            dateLine // the system prompt's date line, made once a day
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
		team: opts.TeamBudget, limiter: opts.RateLimiter, approvalTimeout: opts.ApprovalTimeout}
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
