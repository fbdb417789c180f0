package llm

import (
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Message roles, as sent on the wire.
const (
	roleSystem    = "system"
	roleUser      = "user"
	roleAssistant = "assistant"
	roleTool      = "tool"
)

// Message is one history entry. It is our own type, converted to
// go-openai's at the edge, so it serializes the same way in events and
// transcripts whatever the client library does.
type Message struct {
	// Role is "system", "user", "assistant" or "tool"; [Run] sends a prompt
	// without a role as "user".
	Role string `json:"role"`
	// Content is the text; for an assistant final output, its JSON.
	Content string `json:"content,omitempty"`
	// Parts, when set, replaces Content with multipart content (text and
	// images).
	Parts []Part `json:"parts,omitempty"`
	// Refusal is an assistant refusal text.
	Refusal string `json:"refusal,omitempty"`
	// ToolCalls are an assistant's function calls.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ToolName is the tool a tool message comes from; kept for summaries,
	// never sent.
	ToolName string `json:"tool_name,omitempty"`
}

// Part is one part of multipart content.
type Part struct {
	// Type is "text" or "image_url".
	Type string `json:"type"`
	// Text is the text of a text part.
	Text string `json:"text,omitempty"`
	// ImageURL is an https or data: URL for an image part.
	ImageURL string `json:"image_url,omitempty"`
}

// ToolCall is one function call requested by the model. Arguments is the
// raw JSON string as the model sent it, which may be invalid.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// UserText returns a plain-text user message. A multipart one (text and
// images) is a Message with Role "user" and Parts.
func UserText(text string) Message { return Message{Role: roleUser, Content: text} }

// TextPart returns a text part.
func TextPart(text string) Part { return Part{Type: "text", Text: text} }

// ImagePart returns an image part for an https or data: URL.
func ImagePart(url string) Part { return Part{Type: "image_url", ImageURL: url} }

// Text returns the message text: Content, or the text parts joined.
func (m Message) Text() string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	var s string
	for _, p := range m.Parts {
		if p.Type == "text" {
			s += p.Text
		}
	}
	return s
}

// emptyContent stands for an empty content in a message handed to
// go-openai, whose encoder leaves out an empty content: wireDoer turns
// its encoding back into "content":"" in the request body. The API
// requires a content in every message but an assistant's with tool calls
// or a refusal.
const emptyContent = "\x00akgentic:empty-content\x00"

// emptyContentJSON is emptyContent as go-openai's encoder writes it, and
// what wireDoer puts in its place.
var emptyContentJSON, emptyContentWire = []byte(`"content":"\u0000akgentic:empty-content\u0000"`), []byte(`"content":""`)

func (m Message) toOpenAI() openai.ChatCompletionMessage {
	out := openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, Refusal: m.Refusal, ToolCallID: m.ToolCallID}
	if m.Content == "" && len(m.Parts) == 0 && (m.Role != roleAssistant || m.Refusal == "" && len(m.ToolCalls) == 0) {
		out.Content = emptyContent
	}
	if len(m.Parts) > 0 {
		out.Content = ""
		out.MultiContent = make([]openai.ChatMessagePart, len(m.Parts))
		for i, p := range m.Parts {
			op := openai.ChatMessagePart{Type: openai.ChatMessagePartType(p.Type), Text: p.Text}
			if p.ImageURL != "" {
				op.ImageURL = &openai.ChatMessageImageURL{URL: p.ImageURL}
			}
			out.MultiContent[i] = op
		}
	}
	if len(m.ToolCalls) > 0 {
		out.ToolCalls = make([]openai.ToolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			args := c.Arguments
			if args == "" { // the API requires arguments; the runner called the tool with {}
				args = "{}"
			}
			out.ToolCalls[i] = openai.ToolCall{ID: c.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: c.Name, Arguments: args}}
		}
	}
	return out
}

func fromOpenAI(m openai.ChatCompletionMessage) Message {
	out := Message{Role: roleAssistant, Content: m.Content, Refusal: m.Refusal}
	if len(m.ToolCalls) > 0 {
		out.ToolCalls = make([]ToolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			out.ToolCalls[i] = ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments}
		}
	}
	return out
}

// Event is what a [Runner] reports to its Options.Observer: [MessageEvent],
// [UsageEvent], [ToolCallEvent], [ToolReturnEvent], [CompactedEvent],
// [ClearedEvent], [ApprovalRequestedEvent], [ApprovalGrantedEvent],
// [ApprovalDeniedEvent] and, when the answers are streamed, [TextDeltaEvent]. The
// set is closed.
type Event interface{ llmEvent() }

// MessageEvent reports one history append; replaying these rebuilds
// the history.
type MessageEvent struct {
	RunID   string  `json:"run_id"`
	Message Message `json:"message"`
}

// UsageEvent reports one model response: tokens as the provider
// counted them and the cost from the price table. A call that was sent and
// failed is reported too, with ErrorType set, no tokens and Requests 0.
type UsageEvent struct {
	RunID string `json:"run_id"`
	// ModelName is the model that answered, as the response named it (a
	// dated name such as gpt-4.1-2025-04-14 for a configured gpt-4.1); the
	// configured name when the response named none. Prices are looked up
	// by it.
	ModelName string `json:"model_name"`
	// RequestModel is the model name the request asked for: the configured
	// one. Empty in logs written before it was recorded.
	RequestModel string `json:"request_model,omitempty"`
	// ProviderName is the provider as the OpenTelemetry GenAI conventions
	// name it: openai, azure.ai.openai, or for another compatible server
	// the provider its host is known to belong to (groq, deepseek,
	// mistral_ai, x_ai, perplexity, gcp.gemini), else openai-compatible.
	ProviderName string `json:"provider_name"`
	// ResponseID is the completion's id as the provider gave it.
	ResponseID string `json:"response_id,omitempty"`
	// FinishReason is why the answer ended (stop, length, tool_calls,
	// content_filter), as the provider said it.
	FinishReason string `json:"finish_reason,omitempty"`
	// ServerAddress and ServerPort are the host and port the request was
	// sent to (the port is the URL's, or 443 or 80 by its scheme).
	ServerAddress string `json:"server_address,omitempty"`
	ServerPort    int    `json:"server_port,omitempty"`
	// InputTokens is prompt_tokens, cached tokens included.
	InputTokens int `json:"input_tokens"`
	// OutputTokens is completion_tokens, reasoning tokens included.
	OutputTokens     int     `json:"output_tokens"`
	CacheReadTokens  int     `json:"cache_read_tokens"`
	CacheWriteTokens int     `json:"cache_write_tokens"`
	ReasoningTokens  int     `json:"reasoning_tokens"`
	Requests         int     `json:"requests"`
	Cost             float64 `json:"cost"`
	// Latency is how long the model call took, from its first HTTP attempt
	// to the decoded response (retry waits included); the event is emitted
	// when it ends, so the call started Latency before the event's record.
	// Zero in logs written before it was recorded.
	Latency time.Duration `json:"latency_ns,omitempty"`
	// ErrorType is set when the call failed: the provider's error code
	// (context_length_exceeded, rate_limit_exceeded, …) or, without one,
	// its HTTP status (e.g. "500"); "timeout"; "canceled"; or "_OTHER".
	ErrorType string `json:"error_type,omitempty"`
	// Attempts is the number of HTTP attempts the call took: 1, or more
	// when a 429, a 5xx or a transport error was retried. Zero in logs
	// written before it was recorded.
	Attempts int `json:"attempts,omitempty"`
}

// ToolCallEvent reports one tool call of a response, in call order.
type ToolCallEvent struct {
	RunID      string `json:"run_id"`
	ToolName   string `json:"tool_name"`
	ToolCallID string `json:"tool_call_id"`
	// Arguments is the raw JSON string as sent by the model.
	Arguments string `json:"arguments"`
}

// ToolReturnEvent reports one tool result; Success is false when the
// result is retry feedback or an abort notice.
type ToolReturnEvent struct {
	RunID      string `json:"run_id"`
	ToolName   string `json:"tool_name"`
	ToolCallID string `json:"tool_call_id"`
	Success    bool   `json:"success"`
	// ErrorType says how an unsuccessful call failed: "tool_retry" (the
	// model must fix the call: unknown tool, invalid arguments, a
	// RetryError), "tool_error" (the tool failed and the run ended), "tool_denied" (a
	// person denied the call) or
	// "tool_aborted" (the call did not execute: the run ended first, or the
	// answer's limit of tool calls was reached); empty on
	// success, and in logs written before it was recorded.
	ErrorType string `json:"error_type,omitempty"`
}

// The ways a tool call fails (ToolReturnEvent.ErrorType).
const (
	// toolErrorRetry: the model must fix the call (unknown tool, invalid
	// arguments, a RetryError); it was told what was wrong.
	toolErrorRetry = "tool_retry"
	// toolErrorFailed: the tool failed (an error or a panic) and the run
	// ended.
	toolErrorFailed = "tool_error"
	// toolErrorAborted: the call did not execute: the run ended first, or
	// the answer asked for more calls than MaxToolCallsPerAnswer.
	toolErrorAborted = "tool_aborted"
	// toolErrorDenied: a person denied the call, which never ran.
	toolErrorDenied = "tool_denied"
)

// LimitEvent reports a limit of [RuntimeConfig] reached in a run: Limit
// is the setting's JSON name (e.g. "max_tool_result_bytes"), Reason says
// what was cut or not run. The model is told in the same words.
type LimitEvent struct {
	RunID  string `json:"run_id"`
	Limit  string `json:"limit"`
	Reason string `json:"reason"`
}

// CompactedEvent reports a compaction; replaying it folds the history
// the same way.
type CompactedEvent struct {
	// RunID is empty outside a run.
	RunID                   string `json:"run_id,omitempty"`
	StrategyID              string `json:"strategy_id"`
	Summary                 string `json:"summary"`
	ReplacedMessageCount    int    `json:"replaced_message_count"`
	SummarizerPromptVersion string `json:"summarizer_prompt_version,omitempty"`
	TokensBefore            int    `json:"tokens_before"`
	TokensAfter             int    `json:"tokens_after"`
}

// ClearedEvent reports that the history was dropped.
type ClearedEvent struct {
	RunID               string `json:"run_id,omitempty"`
	ClearedMessageCount int    `json:"cleared_message_count"`
}

func (MessageEvent) llmEvent()    {}
func (UsageEvent) llmEvent()      {}
func (ToolCallEvent) llmEvent()   {}
func (ToolReturnEvent) llmEvent() {}
func (LimitEvent) llmEvent()      {}
func (CompactedEvent) llmEvent()  {}
func (ClearedEvent) llmEvent()    {}
