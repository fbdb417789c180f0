package llmtest

import (
	"net/http"
	"sync"
)

// stepKind says how a Step is answered.
type stepKind int

const (
	kindFinal stepKind = iota
	kindToolCalls
	kindRefusal
	kindRaw
	kindReset
	kindHang
	kindEmptyChoices
)

// Default usage reported for every scripted response unless a step says
// otherwise (acceptance-scenario harness defaults).
const (
	defaultPromptTokens     = 100
	defaultCompletionTokens = 20
)

// emptyFinal is what a model with an empty queue answers: a structured
// output with no messages.
const emptyFinal = `{"messages":[]}`

// Step is one scripted model answer. Build steps with [Final],
// [ToolCalls], [Refusal], [Raw], [APIError], [RateLimited], [ServerError],
// [ContextLengthExceeded], [Reset], [Hang]
// or [EmptyChoices], and adjust them with the With… methods. A response
// reports 100 prompt and 20 completion tokens unless [Step.WithUsage] or
// [Step.WithoutUsage] says otherwise.
type Step struct {
	kind         stepKind
	content      string
	calls        []ToolCall
	finish       string
	status       int
	header       http.Header
	body         []byte
	prompt       int
	completion   int
	cached       int
	reasoning    int
	noUsage      bool
	model        string
	checkRequest func(*Request) error
}

func newStep(kind stepKind) Step {
	return Step{kind: kind, prompt: defaultPromptTokens, completion: defaultCompletionTokens}
}

// Final answers with content (the model's JSON text, or the plain text of
// a summary) and finish_reason stop.
func Final(content string) Step {
	s := newStep(kindFinal)
	s.content = content
	s.finish = "stop"
	return s
}

// ToolCalls answers with one assistant message carrying the given calls and
// finish_reason tool_calls. A call without an ID gets a fresh
// "call_"+24-digit id.
func ToolCalls(calls ...ToolCall) Step {
	s := newStep(kindToolCalls)
	s.calls = append([]ToolCall(nil), calls...)
	s.finish = "tool_calls"
	return s
}

// Call builds a tool call for [ToolCalls]: the function name and its
// arguments (a JSON string, which need not be valid). An empty id is
// assigned by the server.
func Call(id, name, arguments string) ToolCall {
	c := ToolCall{ID: id, Type: "function"}
	c.Function.Name, c.Function.Arguments = name, arguments
	return c
}

// Refusal answers with content null and the refusal text (finish_reason
// stop), as a strict-schema refusal looks on the wire.
func Refusal(text string) Step {
	s := newStep(kindRefusal)
	s.content = text
	s.finish = "stop"
	return s
}

// Raw answers with the given status, headers and body verbatim.
func Raw(status int, header http.Header, body string) Step {
	s := newStep(kindRaw)
	s.status = status
	s.header = header
	s.body = []byte(body)
	return s
}

// APIError answers with status and OpenAI's error body.
func APIError(status int, typ, code, message string) Step {
	s := newStep(kindRaw)
	s.status = status
	s.body = errorBody(typ, code, "", message)
	return s
}

// RateLimited answers 429 with OpenAI's rate-limit body; retryAfter, when
// not empty, is sent as the Retry-After header (seconds or an HTTP date).
func RateLimited(retryAfter string) Step {
	s := APIError(http.StatusTooManyRequests, "tokens", "rate_limit_exceeded",
		"Rate limit reached for gpt-4.1 in organization org-fake on tokens per min (TPM): Limit 30000, Used 29500, Requested 900. Please try again in 1.8s.")
	if retryAfter != "" {
		s.header = http.Header{"Retry-After": []string{retryAfter}}
	}
	return s
}

// ServerError answers 500 with OpenAI's server_error body.
func ServerError() Step {
	return APIError(http.StatusInternalServerError, "server_error", "",
		"The server had an error while processing your request. Sorry about that!")
}

// ContextLengthExceeded answers OpenAI's 400 context_length_exceeded.
func ContextLengthExceeded() Step {
	s := newStep(kindRaw)
	s.status = http.StatusBadRequest
	s.body = errorBody("invalid_request_error", "context_length_exceeded", "messages",
		"This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.")
	return s
}

// Reset closes the connection without answering, as a connection reset
// looks to the client.
func Reset() Step { return newStep(kindReset) }

// Hang never answers; the request ends when the client gives up (its
// timeout or context) or the server closes.
func Hang() Step { return newStep(kindHang) }

// EmptyChoices answers 200 with an empty choices array.
func EmptyChoices() Step { return newStep(kindEmptyChoices) }

// WithUsage sets the usage reported by the step.
func (s Step) WithUsage(prompt, completion, cached int) Step {
	s.prompt, s.completion, s.cached = prompt, completion, cached
	return s
}

// WithReasoningTokens sets completion_tokens_details.reasoning_tokens.
func (s Step) WithReasoningTokens(n int) Step {
	s.reasoning = n
	return s
}

// WithoutUsage omits the usage object, as some OpenAI-compatible servers do.
func (s Step) WithoutUsage() Step {
	s.noUsage = true
	return s
}

// WithModel sets the model name reported in the response (default: the
// requested model).
func (s Step) WithModel(name string) Step {
	s.model = name
	return s
}

// WithFinishReason overrides finish_reason (e.g. "length" or
// "content_filter").
func (s Step) WithFinishReason(reason string) Step {
	s.finish = reason
	return s
}

// Expect makes the step check the request before answering; a non-nil
// error is answered with a 400 naming it and recorded as a failure.
func (s Step) Expect(check func(*Request) error) Step {
	s.checkRequest = check
	return s
}

// Model is one agent's scripted model: a FIFO of steps. It is safe for
// concurrent use.
type Model struct {
	mu    sync.Mutex
	steps []Step
	// fallback answers when the queue is empty.
	fallback Step
}

// Enqueue appends steps to the model's queue and returns the model.
func (m *Model) Enqueue(steps ...Step) *Model {
	m.mu.Lock()
	m.steps = append(m.steps, steps...)
	m.mu.Unlock()
	return m
}

// Otherwise sets the step answered whenever the queue is empty (default: a
// structured output with no messages, {"messages":[]}) and returns the
// model.
func (m *Model) Otherwise(step Step) *Model {
	m.mu.Lock()
	m.fallback = step
	m.mu.Unlock()
	return m
}

func (m *Model) pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.steps)
}

func (m *Model) next() Step {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.steps) == 0 {
		return m.fallback
	}
	s := m.steps[0]
	m.steps[0] = Step{}
	m.steps = m.steps[1:]
	return s
}
