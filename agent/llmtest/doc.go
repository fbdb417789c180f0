// Package llmtest is an in-process, OpenAI-compatible chat-completions server
// for tests, demos and users' own test suites: no network, no API key.
//
// A [Server] answers POST /v1/chat/completions the way the real API does
// (same JSON envelope, same error bodies) from scripted models: each agent
// has a FIFO of [Step] values (tool calls, final outputs, refusals, raw HTTP
// errors, connection resets), and every request is recorded for assertions.
//
// The server is as strict as OpenAI where strictness catches our bugs: a
// history in which an assistant tool call has no tool reply, a tool message
// answering an unknown tool call id, or a strict json_schema that is not
// strict-valid is answered with OpenAI's 400 body, so client code is tested on
// the real go-openai path.
//
// Requests are routed to a scripted model by agent name: the default router
// looks in the system messages for a roster line ending in " - [you]" and uses
// the name before " (role:". Requests without tools and without a
// response_format are summarizer requests and go to [Server.Summarizer].
//
// Retries without waiting: a scripted 429 or 5xx makes the client retry
// after a backoff (or the answer's Retry-After). Give the agents an Env
// whose Sleep returns at once, keeping the waits if the test checks them:
//
//	var waits []time.Duration
//	env := &agent.Env{HTTPClient: srv.HTTPClient(),
//		Sleep: func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return ctx.Err() }}
//
// (llm.Options.Sleep is the same hook for a bare llm.Runner.) Recorded
// requests give their messages' text with Message.Text and the parts of a
// multipart content (text and images) with Message.Parts.
//
// A server can also record its exchanges as a JSON Lines transcript
// ([WithRecorder]) and replay one ([Server.Replay]): each request must match
// the next recorded one, and any request the transcript does not expect
// fails with a 400 and is reported.
//
// A request with "stream": true is answered as OpenAI streams:
// server-sent "data:" chunks carrying the answer in small pieces (a tool
// call's id and name first, then its arguments, each fragment with its
// index), the finish_reason, a last chunk with the usage when
// stream_options.include_usage asks for it, and "data: [DONE]". Scripted
// and replayed answers stream alike; a streamed answer is recorded as the
// chat completion it streamed. [Step.CutAfter] cuts a stream with an error
// event, as a server failing mid-answer does.
package llmtest
