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
// [ContextLengthExceeded], [Reset] or [Hang], then adjust the answer
// through the fields; [Step.WithUsage] and [Step.WithModel] set the usual
// ones in a chain. The fields other than Check shape the chat completion
// the server builds (Final, ToolCalls, Refusal); the other steps answer
// without one and ignore them. Anything else, such as a 200 with an empty
// choices array, is a [Raw] step.
type Step struct {
	// Model is the model name the response reports; "" reports the
	// requested model.
	Model string
	// FinishReason is the response's finish_reason: "stop" for Final and
	// Refusal, "tool_calls" for ToolCalls; set e.g. "length" or
	// "content_filter".
	FinishReason string
	// PromptTokens, CompletionTokens, CachedTokens and ReasoningTokens are
	// the usage reported: prompt_tokens (100 unless set),
	// completion_tokens (20 unless set), prompt_tokens_details.cached_tokens
	// and completion_tokens_details.reasoning_tokens.
	PromptTokens, CompletionTokens, CachedTokens, ReasoningTokens int
	// NoUsage omits the usage object, as some OpenAI-compatible servers do.
	NoUsage bool
	// Check, when set, checks the request before the step answers it; a
	// non-nil error is answered with a 400 naming it and recorded as a
	// failure ([Server.Failures], [WithReporter]).
	Check func(*Request) error

	kind     stepKind
	cut      bool // streamed: cut after cutAfter chunks (CutAfter)
	cutAfter int
	content  string
	calls    []ToolCall
	status   int
	header   http.Header
	body     []byte
}

func newStep(kind stepKind) Step {
	return Step{kind: kind, PromptTokens: defaultPromptTokens, CompletionTokens: defaultCompletionTokens}
}

// Final answers with content (the model's JSON text, or the plain text of
// a summary) and finish_reason stop.
func Final(content string) Step {
	s := newStep(kindFinal)
	s.content = content
	s.FinishReason = "stop"
	return s
}

// ToolCalls answers with one assistant message carrying the given calls and
// finish_reason tool_calls. A call without an ID gets a fresh
// "call_"+24-digit id.
func ToolCalls(calls ...ToolCall) Step {
	s := newStep(kindToolCalls)
	s.calls = append([]ToolCall(nil), calls...)
	s.FinishReason = "tool_calls"
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
	s.FinishReason = "stop"
	return s
}

// Raw answers with the given status, headers and body verbatim: any answer
// the other constructors do not build, such as a chat completion with an
// empty choices array.
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

// WithUsage returns s reporting prompt, completion and cached tokens
// (PromptTokens, CompletionTokens, CachedTokens).
func (s Step) WithUsage(prompt, completion, cached int) Step {
	s.PromptTokens, s.CompletionTokens, s.CachedTokens = prompt, completion, cached
	return s
}

// CutAfter returns s cut mid-stream: when its request asks for a stream,
// the server sends the answer's first n chunks, then an error event (a
// server_error, as OpenAI reports a failure mid-stream) and ends the
// response without "data: [DONE]". An unstreamed request gets the answer
// whole. It applies to the answers the server builds (Final, ToolCalls,
// Refusal).
func (s Step) CutAfter(n int) Step {
	s.cut, s.cutAfter = true, max(n, 0)
	return s
}

// WithModel returns s reporting the model name (Model).
func (s Step) WithModel(name string) Step {
	s.Model = name
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
