package llmtest

import (
	"encoding/json"
	"strings"
)

// Request is one chat-completions request as the server received it. Only
// the fields tests usually assert on are decoded; Body holds the exact bytes.
type Request struct {
	// Agent is the routing key the request was matched to ("" for none).
	Agent string `json:"-"`
	// Summarizer is true for a request with neither tools nor response_format.
	Summarizer bool `json:"-"`
	// Body is the raw request body.
	Body []byte `json:"-"`
	// Authorization is the Authorization header value as sent.
	Authorization string `json:"-"`

	Model               string          `json:"model"`
	Messages            []Message       `json:"messages"`
	ResponseFormat      json.RawMessage `json:"response_format,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	Seed                *int            `json:"seed,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	ReasoningEffort     string          `json:"reasoning_effort,omitempty"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls,omitempty"`
	ToolChoice          json.RawMessage `json:"tool_choice,omitempty"`
	Stream              bool            `json:"stream"`
	// StreamOptions is stream_options; with IncludeUsage a streamed answer
	// ends with a usage chunk.
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`

	// N is the number of choices asked for (n); 0 when not sent, which
	// means 1.
	N int `json:"n,omitempty"`

	// Tools are the tool declarations, in order: Type "function" with
	// Function, or "custom" with Custom.
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Strict      bool            `json:"strict,omitempty"`
			Parameters  json.RawMessage `json:"parameters,omitempty"`
		} `json:"function"`
		Custom *struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Format      json.RawMessage `json:"format,omitempty"`
		} `json:"custom,omitempty"`
	} `json:"tools,omitempty"`
}

// Message is one entry of a request's messages array.
type Message struct {
	Role string `json:"role"`
	// Content is the raw content: a JSON string, an array of parts (it then
	// starts with '['), or absent.
	Content    json.RawMessage `json:"content,omitempty"`
	Refusal    string          `json:"refusal,omitempty"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// Text returns the message's text: the content string, or the text parts of
// a multipart content joined together. It is "" when content is absent.
func (m Message) Text() string {
	if len(m.Content) == 0 {
		return ""
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s
	}
	var b strings.Builder
	for _, p := range m.Parts() {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// Part is one part of a multipart content as it went over the wire: a
// "text" part (Text) or an "image_url" part (ImageURL, often a data: URL,
// and its Detail).
type Part struct {
	Type     string
	Text     string
	ImageURL string
	Detail   string
}

// Parts returns the parts of a multipart content, in order; nil when the
// content is a plain string or absent.
func (m Message) Parts() []Part {
	if len(m.Content) == 0 || m.Content[0] != '[' {
		return nil
	}
	var wire []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL    string `json:"url"`
			Detail string `json:"detail"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(m.Content, &wire); err != nil {
		return nil
	}
	out := make([]Part, len(wire))
	for i, w := range wire {
		out[i] = Part{Type: w.Type, Text: w.Text, ImageURL: w.ImageURL.URL, Detail: w.ImageURL.Detail}
	}
	return out
}

// ToolCall is a function call as it appears on the wire, in an assistant
// message of a request or in a scripted response.
type ToolCall struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// Function names the function and carries its arguments, a JSON
	// string that need not be valid JSON.
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// SystemTexts returns the text of every system message, in order.
func (r *Request) SystemTexts() []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role == "system" || m.Role == "developer" {
			out = append(out, m.Text())
		}
	}
	return out
}

// History returns the messages that are not system messages, in order.
func (r *Request) History() []Message {
	var out []Message
	for _, m := range r.Messages {
		if m.Role != "system" && m.Role != "developer" {
			out = append(out, m)
		}
	}
	return out
}

// wire response shapes: content and refusal are explicit nulls, as OpenAI
// sends them.
type wireResponse struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []wireChoice `json:"choices"`
	Usage             *wireUsage   `json:"usage,omitempty"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

type wireChoice struct {
	Index        int         `json:"index"`
	FinishReason string      `json:"finish_reason"`
	Logprobs     any         `json:"logprobs"`
	Message      wireMessage `json:"message"`
}

type wireMessage struct {
	Role      string     `json:"role"`
	Content   *string    `json:"content"`
	Refusal   *string    `json:"refusal"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

type wireError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// errorBody returns an OpenAI error body:
// {"error":{"message":…,"type":…,"param":…,"code":…}}. Empty param and code
// are sent as null.
func errorBody(typ, code, param, message string) []byte {
	var e wireError
	e.Error.Message = message
	e.Error.Type = typ
	if param != "" {
		e.Error.Param = &param
	}
	if code != "" {
		e.Error.Code = &code
	}
	b, _ := json.Marshal(e) // cannot fail: plain strings
	checkContract(schemaError, b)
	return b
}
