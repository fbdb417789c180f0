package llm

import (
	"context"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Test-only access to unexported parts, for the package's external tests.

// Client is the runner's model client.
type Client = client

// NewClient builds a client as NewRunner does.
var NewClient = newClient

// InvalidOutputError is the error of Output.Parse.
type InvalidOutputError = invalidOutputError

// ParsePriceTable reads a price table in the embedded format.
var ParsePriceTable = parsePriceTable

// Lookup returns the price of model and whether any key matched.
func (t *PriceTable) Lookup(model string) (Price, bool) { return t.lookup(model) }

// SetTools replaces the tools the model may call, as NewRunner does.
func (r *Runner) SetTools(tools ...*Tool) error { return r.setTools(tools...) }

// LastInputTokens is the prompt size of the latest response, 0 if
// unknown.
func (r *Runner) LastInputTokens() int { return r.lastInputTokens }

// HTTPConfig is the type of RuntimeConfig.HTTP, named.
type HTTPConfig = httpConfig

// Test-only access to the guard rails' unexported parts.

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

// ProviderName is the provider as the GenAI conventions name it.
func (m ModelConfig) ProviderName() string { return m.providerName() }

// Server is the host and port the model's requests go to.
func (m ModelConfig) Server() (string, int) { return m.server() }
