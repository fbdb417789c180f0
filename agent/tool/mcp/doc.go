// Package mcp is the MCPTool card: the tools of MCP (Model Context
// Protocol) servers as model tools of an agent, on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// # Servers
//
// A [Server] is a command run as a child process that speaks MCP on its
// stdin and stdout (Command, Env), or a streamable HTTP endpoint (URL,
// Headers; "${NAME}" in their values is read from the agent's environment
// when connecting, so that the config, which the team's log keeps, need
// not hold a secret; Headers go only to the URL's scheme, host and port,
// not to another host a redirect leads to). When the agent starts, the
// card connects to all its servers at once, lists their tools and offers
// the model those their Allow and Deny lists let through; a server that
// cannot be reached is a start error naming it. A tool the server runs
// only as a task (execution.taskSupport "required") is not offered: the
// card does not speak tasks, and the server refuses any other call of
// it. The list is taken once: tools a server adds later are not offered
// until the agent starts again. The card advertises no client
// capabilities (no roots, sampling or elicitation), so a server asks it
// nothing. A child's stderr is not logged; its last 1 KiB is quoted in
// the errors about that child (a server that exits at once says why).
// When the agent stops, the connections are closed, all at once: a
// child's stdin is closed, it is sent SIGTERM after 2 s and SIGKILL 2 s
// later, and it is reaped; a child that ends by that SIGTERM (a Node
// server outlives its closed stdin) is no error.
//
// The instructions a server gives when connecting (how to use its tools)
// are a section of the agent's system prompt, cut to 8 KiB, unless
// Server.NoInstructions. A tool's annotations set the model tool's
// llm.Tool.ReadOnly (readOnlyHint) and llm.Tool.Destructive (not
// read-only, and destructiveHint not false: the spec's default): hints a
// rule can use to have a person approve a destructive tool's calls.
//
// # Tool names
//
// An MCP tool t of server s is the model tool "s_t", with every character
// outside A-Z, a-z, 0-9, '_' and '-' replaced by '_' and the whole cut to
// 64 bytes (OpenAI's rules). The prefix keeps two servers' tools, and the
// other cards' tools, apart; two tools of a card that still end up with
// one name are a start error naming both, as is a name another card of the
// agent provides.
//
// # Schemas
//
// Each tool's input schema is sent strict when OpenAI's strict mode can
// say it without changing what the server accepts, else as the server
// wrote it (with "type": "object" added at the root if it left it out),
// non-strict. The rule:
//
//   - only the keywords type, enum, const, title, description, $ref,
//     properties, required, additionalProperties, items (one schema),
//     anyOf and $defs; annotations ($schema, $id, $comment, examples,
//     deprecated, readOnly, writeOnly) are dropped, and a default is
//     folded into the description as "(default: ...)";
//   - every schema typed: a type, anyOf, $ref, enum or const; one
//     without (any value: {} or a description alone) keeps the schema
//     non-strict, as OpenAI's strict mode refuses it;
//   - additionalProperties false on every object; an object whose
//     additionalProperties is true or a schema (free-form keys, a map)
//     keeps the schema non-strict, as does an object below the root with
//     no properties (or empty ones) and no additionalProperties false,
//     which JSON Schema reads as free-form keys and strict mode would
//     narrow to {} (a root without properties is a tool without
//     arguments, strict);
//   - every property required: one that was optional becomes nullable
//     (type [T, "null"], or anyOf with {"type": "null"}) and a null the
//     model sends for it is dropped before the call, so the server sees
//     the property absent. This is done along properties and items from
//     the root; an optional property inside anyOf or $defs keeps the
//     schema non-strict.
//
// Any other keyword (minimum, pattern, format, oneOf, allOf, ...) keeps it
// non-strict: the server then checks the arguments itself, and its refusal
// reaches the model as a tool error.
//
// # Results and failures
//
// A result's text items are joined one per line; images, audio and binary
// resources are described ("[image image/png, 1234 bytes]": the chat API's
// tool message is text only); an embedded text resource comes as a
// "[resource uri]" line and its text. Structured content follows as JSON
// only when it adds to that: not when a text item holds the same value,
// nor when all it holds is the content again (server-filesystem sends
// every file as text and as {"content": text}); in that JSON a copy of a
// long text item is "[the text above]" and binary data is described,
// never inlined. The text is cut at Server.MaxResultBytes (64 KiB by
// default), ending then with a line "[truncated at N bytes]". A result the
// server flags as an error (isError) reaches the model as a retry error
// (llm.Retry) carrying that text, as does a JSON-RPC error answer (an
// unknown tool, invalid parameters).
//
// A server that fails to answer (its process died, the connection broke,
// the call outlasted Server.Timeout, 60 s by default) gives the model a
// retry error saying so, and the agent a warning record
// (a WarningMessage on the team's ledger, through tool.AgentContext's
// Report); the connection is dropped and the next call connects again (a
// new child process for a command). A call that never reached the server
// ran nothing and is made again at once on a new session, without the
// model or a warning: a stdio server that died between calls (the card
// saw its end, or writing to it failed), an HTTP server that no longer
// knows the session (it restarted: 404 as the protocol says, or 400 with
// a message about the session, as the reference server answers; the
// message is kept in the error if the new session fails too). Retry errors count
// against the run's
// retry budget per tool (llm.RuntimeConfig.Retries): a tool that keeps
// failing ends the run. The end of the run's own context (the agent
// stopping) ends the call and the run, as with every tool.
//
// The tools do not touch the owning agent except to report, so an agent
// may run them concurrently.
package mcp
