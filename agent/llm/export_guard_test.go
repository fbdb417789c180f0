package llm

import (
	"context"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Test-only access to the guard rails' unexported parts (issue 16).

// Reserve reserves worst USD against b as a model call does.
func (b *Budget) Reserve(tier string, worst float64) (func(cost float64), error) {
	return b.reserve(tier, worst, "(what to do)")
}

// Wait waits for the turn of one call of model at the endpoint of mc.
func (l *RateLimiter) Wait(ctx context.Context, mc ModelConfig, model string, tokens int) (context.Context, func(int), error) {
	return l.wait(ctx, mc, model, tokens)
}

// SharePause applies a 429's Retry-After as the retry doer does.
func SharePause(ctx context.Context, d time.Duration) {
	if pause, ok := ctx.Value(pauseKey{}).(func(time.Duration)); ok {
		pause(d)
	}
}

// Admit admits one call of r as complete does: done settles it with the
// response and the call's error.
func (r *Runner) Admit(ctx context.Context, req openai.ChatCompletionRequest) (context.Context, func(openai.ChatCompletionResponse, error), error) {
	return r.admit(ctx, req)
}
