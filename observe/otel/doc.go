// Package akotel turns a team's records into OpenTelemetry spans and
// metrics: add a [Subscriber] to a team and every turn, model
// call and tool call becomes a span, and messages, turns, errors, tokens,
// cost, latencies and live members become metrics.
//
//	sub, err := akotel.New(akotel.Options{}) // the global providers
//	team, err := orchestrator.New(sys, orchestrator.WithSubscribers(sub))
//
// The package is named akotel, not otel, although it lives at observe/otel:
// a program that uses it also imports go.opentelemetry.io/otel (to set up
// its providers), and two packages named otel in one file would need an
// alias. The import path says what it is about; the name says it is
// akgentic's side of it. Only programs that import this package depend on
// OpenTelemetry: nothing else in the module imports it.
//
// # Spans
//
// The spans and metrics follow the OpenTelemetry GenAI semantic
// conventions, with the constants of go.opentelemetry.io/otel/semconv
// (v1.41.0, the latest to define them); the scope carries this module's
// version and the conventions' schema URL.
//
// One span per turn: an actor handling a message, from its Received record
// to its Processed record. An agent's turn (an actor of kind BaseAgent, or
// any actor once it calls a model) is an invoke_agent span, named
// "invoke_agent <agent name>" (kind internal, gen_ai.agent.name and .id,
// gen_ai.provider.name, gen_ai.conversation.id: the team's id); another
// actor's turn is "turn <actor name>". An Error record for the message sets
// the span's status to Error, with error.type (the error's class) and an
// exception event; a Warning record is a span event. A message consumed by
// a running turn (a Handled record) is an event of that turn, linked to the
// turn that sent it.
//
// A turn on message M is a child of the turn that sent M (M's parent id is
// the message that turn was handling), so one person's request is one
// trace through every member it reached. A message sent outside any turn
// (a person's, the program's) starts a new trace.
//
// Under a turn, one span per model call, named "chat <model as
// configured>" (kind client, operation chat), with gen_ai.provider.name,
// gen_ai.request.model (as configured) and gen_ai.response.model (as
// answered), gen_ai.response.id, gen_ai.response.finish_reasons,
// server.address and server.port, and the usage under the conventions'
// names (input, output, cache-read input and reasoning output tokens); its
// start is the usage event's time less its latency (retry waits included),
// and akgentic.llm.attempts counts its HTTP attempts (2 for a 429 then a
// success). A call that failed has status Error and error.type (the
// provider's error code, else its HTTP status, timeout or canceled). And one span per tool call, named "execute_tool <tool>"
// (operation execute_tool, gen_ai.tool.name, gen_ai.tool.call.id,
// gen_ai.tool.type function), from the model's call to the tool's return,
// with status Error and error.type (tool_retry, tool_error, tool_aborted)
// when the call failed. The runner reports the returns of one batch of
// tool calls together, when the batch is done, so the calls of a batch end
// at the same time.
//
// Every time comes from the records, so spans have their real durations
// (at the ledger's 1 ms resolution). Prompt, completion, tool argument and
// message texts are recorded only with [Options.CaptureContent], in the
// conventions' message format (a model call's input is the chat history
// rebuilt from the member's events, without the system prompt); the text
// of an Error or Warning record always is (it says what failed, and may
// quote a model's invalid output). Configs are never read, so no API key
// can reach a span.
//
// A turn's span ends when the actor's next record arrives, when a record of
// the team comes 1 s (record time) after the turn's end, or when the team
// stops, whichever is first: the record that fails a turn comes right
// after its Processed record. An Error that arrives later still shows, as a
// short "error" span under the turn.
//
// # Metrics
//
// akgentic.messages (sent, by sender kind and role and message type),
// akgentic.turns, akgentic.errors and akgentic.warnings (by actor kind and
// role), akgentic.turn.duration (s), gen_ai.client.token.usage (by
// gen_ai.token.type) and gen_ai.client.operation.duration (s, model calls),
// both by operation, provider, requested and response model, server and
// role, akgentic.llm.cost (USD, by requested model and role) and
// akgentic.team.members (live members, by team id: the members whose Start
// record the subscriber saw, so a subscriber added to a running team counts
// only those that join after). No metric is labelled with a member's name:
// names are made per hire, so they are on the spans only.
//
// # Restore and memory
//
// Records replayed by orchestrator.Restore (between SetRestoring(true) and
// SetRestoring(false)) produce no span and no metric: they were exported
// when they happened. Memory stays bounded for a team running for days: a
// span is open only while its turn is, a sent message is remembered only
// until its recipient receives it (at most 4,096 per recipient), and a
// member's bookkeeping is freed at its Stop record, a team's at its stop.
// With CaptureContent, the subscriber keeps a copy of each agent's model
// history (as large as the one the agent's runner keeps, compacted and
// cleared with it); a restore does not replay it, so after a restore a
// model call's input holds only the messages since.
package akotel
