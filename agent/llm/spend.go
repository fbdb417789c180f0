package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	openai "github.com/sashabaranov/go-openai"
)

// Spend ceilings: before each model call its worst case is
// reserved against the agent's ceiling (AgentUsageLimits.SpendLimit) and
// the team's ([Options].TeamBudget); after it the reservation is settled
// from the real usage. A call whose worst case could pass a ceiling is not
// made: the run ends with a [*UsageLimitError] carrying the amounts.
//
// The worst case is the prompt, estimated at one token per
// bytesPerToken bytes of the request's messages, tools and response
// format as JSON (no tokenizer: English text and JSON run about four bytes
// a token, so this over-counts them; it can under-count scripts of
// multi-byte characters), plus the completion's cap: ModelConfig.MaxTokens,
// else the model's default maximum output (Price.MaxOutput, else
// defaultMaxOutput), both at the model's price. Without MaxTokens that
// cap is large (gpt-5: 128,000 tokens, $1.02): a ceiling below it refuses
// every call, and the refusal says so and names the setting.
//
// An answer without usage (a stream whose server sent no usage chunk, a
// server that never reports it) is settled at its worst case, the
// reservation, not at 0: the ceiling never under-counts it. Its usage
// event still reports what the provider said (no tokens), so a restored
// agent or team, which recomputes its spend from those events, counts it
// as 0. A failed call (no answer) is settled at 0.

// bytesPerToken is the prompt estimate's divisor.
const bytesPerToken = 3

// defaultMaxOutput is the completion cap assumed for a model whose price
// has no MaxOutput and that is called without max_tokens.
const defaultMaxOutput = 16384

// rateOutputEstimate is the completion the rate limiter charges a call
// without max_tokens until its usage is known (it reconciles then): a
// modest answer, not the model's maximum, which would let one call empty
// a bucket of 30,000 tokens a minute.
const rateOutputEstimate = 1024

// maxTokensSetting names the setting that caps a call's completion, as a
// user writes it (Go and JSON).
const maxTokensSetting = "Model.MaxTokens (JSON model_cfg.max_tokens)"

// tierTeam is the UsageLimitError.Tier of a team ceiling.
const tierTeam = "team"

// Budget is a spend ceiling in USD shared by several runners, a team's
// ([Options].TeamBudget): what they spent, what their calls in flight have
// reserved, and the ceiling. It is safe for concurrent use.
type Budget struct {
	mu                     sync.Mutex
	limit, spent, reserved float64
}

// NewBudget returns a budget with a ceiling of limit USD of which spent is
// already spent (e.g. what a restored team's log says it spent).
func NewBudget(limit, spent float64) *Budget { return &Budget{limit: limit, spent: spent} }

// Spent returns what the settled calls cost, in USD.
func (b *Budget) Spent() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent
}

// reserve reserves worst USD, or refuses with the tier's usage-limit error
// when spent + reserved + worst would pass the ceiling; when worst alone
// passes it (the call could never be made) the error says so, followed by
// tooBig, what to do about it. settle replaces the reservation with the
// call's real cost; call it once.
func (b *Budget) reserve(tier string, worst float64, tooBig string) (settle func(cost float64), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.spent+b.reserved+worst > b.limit {
		reason := fmt.Sprintf(
			"The next model call would pass the %s spend ceiling of $%.6f: spent $%.6f, reserved $%.6f for calls in flight, this call's worst case $%.6f",
			tier, b.limit, b.spent, b.reserved, worst)
		if worst > b.limit {
			reason += ". Its worst case alone is more than the ceiling: no call like it can ever be made. " + tooBig
		}
		return nil, &UsageLimitError{Tier: tier, Limit: "spend_limit_usd", Reason: reason}
	}
	b.reserved += worst
	return func(cost float64) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.reserved -= worst
		b.spent += cost
	}, nil
}

// callPlan is what admit works out of one request before it is sent.
type callPlan struct {
	model        string
	promptTokens int  // estimated
	maxOutput    int  // the completion's cap
	capped       bool // maxOutput is the call's max_tokens, not the model's maximum
}

// plan estimates req's worst case; req is the request before the client
// applies the model settings.
func (r *Runner) plan(req openai.ChatCompletionRequest) callPlan {
	p := callPlan{model: req.Model, maxOutput: r.client.model.MaxTokens}
	if p.model == "" {
		p.model = r.client.model.Model
	}
	if p.maxOutput == 0 {
		p.maxOutput = max(req.MaxTokens, req.MaxCompletionTokens)
	}
	p.capped = p.maxOutput > 0
	if !p.capped {
		price, _ := r.prices.lookup(p.model)
		p.maxOutput = orDefault(price.MaxOutput, defaultMaxOutput)
	}
	p.promptTokens = estimateTokens(req.Messages, req.Tools, req.ResponseFormat)
	return p
}

// rateTokens is what the rate limiter charges the call before it is sent:
// the prompt plus max_tokens, or plus rateOutputEstimate without it.
func (p callPlan) rateTokens() int {
	if p.capped {
		return p.promptTokens + p.maxOutput
	}
	return p.promptTokens + min(p.maxOutput, rateOutputEstimate)
}

// tooBig is what a refusal whose worst case alone passes the ceiling tells
// the user to do.
func (p callPlan) tooBig() string {
	if p.capped {
		return fmt.Sprintf("Lower the completion cap (%d tokens; %s) or raise the ceiling.", p.maxOutput, maxTokensSetting)
	}
	return fmt.Sprintf("Without max_tokens a call reserves the model's whole default output (%d tokens for %s): set %s to cap it, or raise the ceiling.",
		p.maxOutput, p.model, maxTokensSetting)
}

// estimateTokens estimates the tokens of parts: one per bytesPerToken
// bytes of their JSON.
func estimateTokens(parts ...any) int {
	size := 0
	for _, part := range parts {
		b, err := json.Marshal(part)
		if err == nil {
			size += len(b)
		}
	}
	return (size + bytesPerToken - 1) / bytesPerToken
}

// answerTokens estimates the tokens of resp's answer (0 for none): its
// messages' content and tool calls.
func answerTokens(resp openai.ChatCompletionResponse) int {
	if len(resp.Choices) == 0 {
		return 0
	}
	parts := make([]any, 0, 2*len(resp.Choices))
	for _, c := range resp.Choices {
		parts = append(parts, c.Message.Content, c.Message.ToolCalls)
	}
	return estimateTokens(parts...)
}

// hasUsage reports whether the provider said what resp used.
func hasUsage(u openai.Usage) bool {
	return u.PromptTokens > 0 || u.CompletionTokens > 0 || u.TotalTokens > 0
}

// orDefault returns v, or def when v is 0.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// admit is the guard of one model call, shared by every call
// path: it reserves the call's worst case against the agent's and the
// team's spend ceilings, then waits for the rate limiter. It returns the
// context to send the call with (it carries the rate limiter's pause, for
// a 429's Retry-After) and done, to call once with the response and the
// call's error, which settles the reservations and reconciles the rate
// limiter's charge. With no ceiling and no limiter it does nothing.
func (r *Runner) admit(ctx context.Context, req openai.ChatCompletionRequest) (context.Context, func(openai.ChatCompletionResponse, error), error) {
	if r.own == nil && r.team == nil && r.limiter == nil {
		return ctx, func(openai.ChatCompletionResponse, error) {}, nil
	}
	p := r.plan(req)
	worst := r.prices.Cost(p.model, p.promptTokens, p.maxOutput, 0, 0)
	var settles []func(float64)
	release := func(cost float64) {
		for _, s := range settles {
			s(cost)
		}
	}
	for _, b := range []struct {
		budget *Budget
		tier   string
	}{{r.own, tierAgent}, {r.team, tierTeam}} {
		if b.budget == nil {
			continue
		}
		settle, err := b.budget.reserve(b.tier, worst, p.tooBig())
		if err != nil {
			release(0)
			return ctx, nil, err
		}
		settles = append(settles, settle)
	}
	ctx, reconcile, err := r.limiter.wait(ctx, r.client.model, p.model, p.rateTokens())
	if err != nil {
		release(0)
		return ctx, nil, err
	}
	return ctx, func(resp openai.ChatCompletionResponse, callErr error) {
		u := resp.Usage
		if !hasUsage(u) {
			if callErr == nil { // an answer without usage: its worst case, never less
				release(worst)
			} else {
				release(0)
			}
			reconcile(p.promptTokens + answerTokens(resp))
			return
		}
		model := resp.Model
		if model == "" {
			model = p.model
		}
		cached := 0
		if d := u.PromptTokensDetails; d != nil {
			cached = d.CachedTokens
		}
		release(r.prices.Cost(model, u.PromptTokens, u.CompletionTokens, cached, 0))
		reconcile(max(u.TotalTokens, u.PromptTokens+u.CompletionTokens))
	}, nil
}

// restoreSpend sets the agent's spend from its replayed usage events
// (assigned, not added, as the lifetime budget is), priced with the
// runner's table.
func (r *Runner) restoreSpend(events []Event) {
	if r.own == nil {
		return
	}
	spent := 0.0
	for _, e := range events {
		if u, ok := e.(UsageEvent); ok {
			spent += r.prices.Cost(u.ModelName, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens)
		}
	}
	r.own.mu.Lock()
	r.own.spent = spent
	r.own.mu.Unlock()
}
