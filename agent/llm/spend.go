package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	openai "github.com/sashabaranov/go-openai"
)

// Spend ceilings (issue 16): before each model call its worst case is
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
// defaultMaxOutput), both at the model's price.

// bytesPerToken is the prompt estimate's divisor.
const bytesPerToken = 3

// defaultMaxOutput is the completion cap assumed for a model whose price
// has no MaxOutput and that is called without max_tokens.
const defaultMaxOutput = 16384

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
// when spent + reserved + worst would pass the ceiling. settle replaces
// the reservation with the call's real cost; call it once.
func (b *Budget) reserve(tier string, worst float64) (settle func(cost float64), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.spent+b.reserved+worst > b.limit {
		return nil, &UsageLimitError{Tier: tier, Limit: "spend_limit_usd", Reason: fmt.Sprintf(
			"The next model call would pass the %s spend ceiling of $%.6f: spent $%.6f, reserved $%.6f for calls in flight, this call's worst case $%.6f",
			tier, b.limit, b.spent, b.reserved, worst)}
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
	promptTokens int // estimated
	maxOutput    int
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
	if p.maxOutput == 0 {
		price, _ := r.prices.lookup(p.model)
		p.maxOutput = orDefault(price.MaxOutput, defaultMaxOutput)
	}
	size := 0
	for _, part := range []any{req.Messages, req.Tools, req.ResponseFormat} {
		b, err := json.Marshal(part)
		if err == nil {
			size += len(b)
		}
	}
	p.promptTokens = (size + bytesPerToken - 1) / bytesPerToken
	return p
}

// orDefault returns v, or def when v is 0.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// admit is the guard of one model call (issue 16), shared by every call
// path: it reserves the call's worst case against the agent's and the
// team's spend ceilings, then waits for the rate limiter. It returns the
// context to send the call with (it carries the rate limiter's pause, for
// a 429's Retry-After) and done, to call once with the response (or the
// zero response on an error), which settles the reservations. With no
// ceiling and no limiter it does nothing.
func (r *Runner) admit(ctx context.Context, req openai.ChatCompletionRequest) (context.Context, func(openai.ChatCompletionResponse), error) {
	if r.own == nil && r.team == nil && r.limiter == nil {
		return ctx, func(openai.ChatCompletionResponse) {}, nil
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
		settle, err := b.budget.reserve(b.tier, worst)
		if err != nil {
			release(0)
			return ctx, nil, err
		}
		settles = append(settles, settle)
	}
	ctx, refund, err := r.limiter.wait(ctx, r.client.model, p.model, p.promptTokens+p.maxOutput)
	if err != nil {
		release(0)
		return ctx, nil, err
	}
	return ctx, func(resp openai.ChatCompletionResponse) {
		model := resp.Model
		if model == "" {
			model = p.model
		}
		cached := 0
		if d := resp.Usage.PromptTokensDetails; d != nil {
			cached = d.CachedTokens
		}
		release(r.prices.Cost(model, resp.Usage.PromptTokens, resp.Usage.CompletionTokens, cached, 0))
		refund(resp.Usage.TotalTokens)
	}, nil
}

// restoreSpend sets the agent's spend from its replayed usage events
// (issue 16, like A37: assigned, not added), priced with the runner's
// table.
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
