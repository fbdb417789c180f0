package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/akgentic/akgentic-go/internal/scrub"
	openai "github.com/sashabaranov/go-openai"
)

// TextDeltaEvent is one piece of the text of an answer being streamed
// (RuntimeConfig.Stream), reported as it arrives: join the
// deltas of one answer, in Seq order, and you have its content so far.
// The complete answer is still reported (and validated) as a
// [MessageEvent] once it is whole; a delta is only for watching it being
// written. Seq counts the deltas of one answer from 0: a 0 after others
// starts a new answer (the run's next request, or the same request sent
// again after its stream was cut), so drop what came before.
//
// It is ephemeral (message.Ephemeral): a team's subscribers see it, its
// durable log (orchestrator/eventlog) and its events index do not keep it.
type TextDeltaEvent struct {
	RunID string `json:"run_id"`
	Seq   int    `json:"seq"`
	Delta string `json:"delta"`
}

func (TextDeltaEvent) llmEvent() {}

// Ephemeral marks the event as live only (message.Ephemeral).
func (TextDeltaEvent) Ephemeral() {}

// errStreamCut is wrapped by the error of a stream that ended before its
// answer was complete (no finish_reason, or an error event mid-way).
var errStreamCut = errors.New("llm: the answer's stream was cut")

// send sends one model request of run runID (for complete): streamed when
// RuntimeConfig.Stream is on (each piece of text reported as a
// TextDeltaEvent), in one answer otherwise. Either way it returns the
// whole response, which the caller validates as usual.
func (r *Runner) send(ctx context.Context, runID string, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	if !r.cfg.Runtime.Stream {
		return r.client.CreateChatCompletion(ctx, req)
	}
	return r.client.stream(ctx, req, func(seq int, delta string) {
		r.emit(TextDeltaEvent{RunID: runID, Seq: seq, Delta: delta})
	})
}

// stream sends req with stream on and include_usage, and assembles the
// chunks into the response CreateChatCompletion would have returned,
// calling onDelta with each piece of content as it arrives. A failure
// before the stream starts is retried by the HTTP doer as any request is;
// a stream cut mid-way (an error event, a connection lost before the
// finish_reason) is sent again from the start, up to the attempts of
// RuntimeConfig.HTTP, after the doer's backoff. A cut answer is never
// returned as a whole one.
func (c *client) stream(ctx context.Context, req openai.ChatCompletionRequest, onDelta func(seq int, delta string)) (openai.ChatCompletionResponse, error) {
	c.apply(&req)
	req.Stream = true
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	cfg := c.retry.Config.withDefaults()
	for attempt := 1; ; attempt++ {
		resp, err := c.streamOnce(ctx, req, onDelta)
		if err == nil || !errors.Is(err, errStreamCut) || ctx.Err() != nil || attempt >= cfg.MaxAttempts {
			return resp, err
		}
		wait := c.retry.backoff(cfg, attempt, nil)
		c.retry.logger().LogAttrs(ctx, slog.LevelDebug, "llm: stream cut; sending the request again",
			slog.Int("attempt", attempt), slog.String("error", err.Error()), slog.Duration("wait", wait))
		if err := c.retry.sleep()(ctx, wait); err != nil {
			return openai.ChatCompletionResponse{}, fmt.Errorf("llm: waiting to retry: %w", err)
		}
	}
}

// streamOnce reads one streamed answer.
func (c *client) streamOnce(ctx context.Context, req openai.ChatCompletionRequest, onDelta func(seq int, delta string)) (openai.ChatCompletionResponse, error) {
	s, err := c.oa.CreateChatCompletionStream(ctx, req)
	if err != nil {
		return openai.ChatCompletionResponse{}, asProviderError(err)
	}
	defer s.Close()
	var acc streamAnswer
	for {
		chunk, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return openai.ChatCompletionResponse{}, err
			}
			var ae *openai.APIError
			if errors.As(err, &ae) {
				err = asProviderError(ae)
			}
			return openai.ChatCompletionResponse{}, scrub.Error(fmt.Errorf("%w after %d chunks: %w", errStreamCut, acc.chunks, err))
		}
		if err := acc.add(chunk, onDelta); err != nil {
			return openai.ChatCompletionResponse{}, err // not a cut: the same stream again would fail again
		}
	}
	if acc.finish == "" {
		return openai.ChatCompletionResponse{}, fmt.Errorf("%w after %d chunks: the stream ended without a finish_reason", errStreamCut, acc.chunks)
	}
	return acc.response(), nil
}

// streamAnswer accumulates the chunks of one streamed answer (the first
// choice's).
type streamAnswer struct {
	id, model        string
	created          int64
	content, refusal strings.Builder
	calls            []openai.ToolCall // by the delta's index
	finish           openai.FinishReason
	usage            openai.Usage
	chunks, seq      int
}

func (a *streamAnswer) add(chunk openai.ChatCompletionStreamResponse, onDelta func(int, string)) error {
	a.chunks++
	if a.id == "" {
		a.id, a.model, a.created = chunk.ID, chunk.Model, chunk.Created
	}
	if chunk.Usage != nil { // the last chunk, with empty choices (include_usage)
		a.usage = *chunk.Usage
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue
		}
		d := ch.Delta
		if d.Content != "" {
			a.content.WriteString(d.Content)
			onDelta(a.seq, d.Content)
			a.seq++
		}
		a.refusal.WriteString(d.Refusal)
		for _, tc := range d.ToolCalls {
			if err := a.addCall(tc); err != nil {
				return err
			}
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
	}
	return nil
}

// addCall merges one tool-call fragment, by its index (a fragment after
// the first carries only a piece of the arguments). A server that omits
// the index starts a new call with each id. An index must name a call
// already begun or the next one: anything else (negative, or a gap, which
// could also make the answer grow without bound) is a malformed stream.
func (a *streamAnswer) addCall(tc openai.ToolCall) error {
	i := len(a.calls) - 1
	switch {
	case tc.Index != nil:
		i = *tc.Index
	case tc.ID != "" || i < 0:
		i = len(a.calls)
	}
	if i < 0 || i > len(a.calls) {
		return fmt.Errorf("llm: malformed stream: tool call index %d after %d calls", i, len(a.calls))
	}
	if i == len(a.calls) {
		a.calls = append(a.calls, openai.ToolCall{Type: openai.ToolTypeFunction})
	}
	c := &a.calls[i]
	if tc.ID != "" {
		c.ID = tc.ID
	}
	if tc.Type != "" {
		c.Type = tc.Type
	}
	c.Function.Name += tc.Function.Name
	c.Function.Arguments += tc.Function.Arguments
	return nil
}

// response is the answer as one chat completion.
func (a *streamAnswer) response() openai.ChatCompletionResponse {
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: a.content.String(),
		Refusal: a.refusal.String(), ToolCalls: a.calls}
	return openai.ChatCompletionResponse{ID: a.id, Object: "chat.completion", Created: a.created, Model: a.model,
		Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: a.finish}}, Usage: a.usage}
}
