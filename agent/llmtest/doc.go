// Package llmtest is an in-process, OpenAI-compatible chat-completions server
// for tests, demos and users' own test suites: no network, no API key.
//
// A [Server] answers POST /v1/chat/completions the way the real API does
// (same JSON envelope, same error bodies) from scripted models: each agent
// has a FIFO of [Step] values (tool calls, final outputs, refusals, raw HTTP
// errors, connection resets), and every request is recorded for assertions.
//
// The server refuses what OpenAI's API refuses, with OpenAI's 400 body (and
// its wording where the API's is known), so client code is tested on the
// real go-openai path: unknown parameters and roles; a message missing what
// its role requires (a tool message's content, a tool call's arguments, an
// assistant message with neither content nor tool calls); values out of
// their range or enumeration (temperature, top_p, the penalties, n,
// reasoning_effort, response_format's type, a tool's type); tool_choice
// without tools; more than 128 tools; a json_object format without the word
// "json" in any message; a history in which an assistant tool call has no
// tool reply, or a tool message answers an unknown call; and a strict
// schema OpenAI's structured-output rules refuse (a root that is not an
// object, an object without "additionalProperties": false or whose
// "required" does not name exactly its properties, a dangling $ref, an
// unsupported keyword or format, more than 10 levels of nested objects,
// 5,000 properties, 1,000 enum values or 120,000 characters of names and
// values). It accepts what the API accepts: the constraints strict mode
// supports (pattern, format, minimum and maximum, multipleOf, minItems and
// maxItems), strict tools without parameters, custom tools, and n choices
// (answered with n copies of the scripted answer). Model names are not
// checked. The package's own tests validate every request they send that
// the server accepts, and every body it serves, against the request,
// response, stream-chunk and error schemas of OpenAI's OpenAPI document
// (testdata/openai).
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
