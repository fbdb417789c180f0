package llmtest

import (
	"encoding/json"
	"net/http"
	"unicode/utf8"
)

// streamPiece is the most bytes of text one chunk carries: about a token
// or two, so that an answer arrives in many deltas as from OpenAI.
const streamPiece = 8

// wire shapes of a streamed answer (chat.completion.chunk).
type wireChunk struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Created           int64             `json:"created"`
	Model             string            `json:"model"`
	SystemFingerprint string            `json:"system_fingerprint"`
	Choices           []wireChunkChoice `json:"choices"`
	// Usage is null on every chunk but the last when include_usage is
	// asked for, and absent otherwise.
	Usage json.RawMessage `json:"usage,omitempty"`
}

type wireChunkChoice struct {
	Index        int       `json:"index"`
	Delta        wireDelta `json:"delta"`
	Logprobs     any       `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type wireDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	Refusal   *string         `json:"refusal,omitempty"`
	ToolCalls []wireDeltaCall `json:"tool_calls,omitempty"`
}

type wireDeltaCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// writeStream answers a streamed request with the chat completion body as
// OpenAI streams it: server-sent events, one "data: <chunk>" each (the
// role first, then the content, refusal or tool calls in small pieces,
// then the finish_reason; with include_usage a last chunk with empty
// choices and the usage), then "data: [DONE]". With cutAt >= 0 only the
// first cutAt chunks are sent, then an error event, and the response ends.
// The exchange is recorded as the completion it streamed, so a transcript
// replays streamed or not.
func (s *Server) writeStream(w http.ResponseWriter, req *Request, body []byte, cutAt int) {
	var resp wireResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		writeError(w, http.StatusInternalServerError, nil, "server_error", "", "", "llmtest: cannot stream the answer: "+err.Error())
		return
	}
	withUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	chunks := streamChunks(resp, withUsage)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(data []byte) {
		_, _ = w.Write([]byte("data: "))
		_, _ = w.Write(data)
		_, _ = w.Write([]byte("\n\n"))
		if flusher != nil {
			flusher.Flush()
		}
	}
	for i, c := range chunks {
		if i == cutAt {
			break
		}
		checkContract(schemaChunk, c)
		send(c)
	}
	if cutAt >= 0 {
		send(errorBody("server_error", "", "", "The server had an error while processing your request. Sorry about that!"))
		return
	}
	s.record(req, http.StatusOK, nil, body) // before [DONE]: a client stops reading there
	send([]byte("[DONE]"))
}

// streamChunks cuts a chat completion into the chunks that stream it.
func streamChunks(resp wireResponse, withUsage bool) [][]byte {
	var out [][]byte
	add := func(choices []wireChunkChoice, usage json.RawMessage) {
		c := wireChunk{ID: resp.ID, Object: "chat.completion.chunk", Created: resp.Created, Model: resp.Model,
			SystemFingerprint: resp.SystemFingerprint, Choices: choices, Usage: usage}
		if withUsage && usage == nil {
			c.Usage = json.RawMessage("null")
		}
		b, _ := json.Marshal(c) // cannot fail: plain values
		out = append(out, b)
	}
	for idx, ch := range resp.Choices { // each choice streamed in turn, by its index
		delta := func(d wireDelta) { add([]wireChunkChoice{{Index: idx, Delta: d}}, nil) }
		m := ch.Message
		empty := ""
		switch {
		case len(m.ToolCalls) > 0:
			delta(wireDelta{Role: "assistant"})
			for i, tc := range m.ToolCalls {
				first := wireDeltaCall{Index: i, ID: tc.ID, Type: tc.Type}
				first.Function.Name = tc.Function.Name
				delta(wireDelta{ToolCalls: []wireDeltaCall{first}})
				for _, p := range pieces(tc.Function.Arguments) {
					more := wireDeltaCall{Index: i}
					more.Function.Arguments = p
					delta(wireDelta{ToolCalls: []wireDeltaCall{more}})
				}
			}
		case m.Refusal != nil:
			delta(wireDelta{Role: "assistant", Refusal: &empty})
			for _, p := range pieces(*m.Refusal) {
				delta(wireDelta{Refusal: &p})
			}
		default:
			delta(wireDelta{Role: "assistant", Content: &empty})
			if m.Content != nil {
				for _, p := range pieces(*m.Content) {
					delta(wireDelta{Content: &p})
				}
			}
		}
		finish := ch.FinishReason
		add([]wireChunkChoice{{Index: idx, FinishReason: &finish}}, nil)
	}
	if withUsage && resp.Usage != nil {
		u, _ := json.Marshal(resp.Usage) // cannot fail: plain values
		add([]wireChunkChoice{}, u)
	}
	return out
}

// pieces splits s into pieces of at most streamPiece bytes, never inside
// a UTF-8 sequence.
func pieces(s string) []string {
	var out []string
	for len(s) > 0 {
		n := min(streamPiece, len(s))
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}
