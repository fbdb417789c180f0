// Package agent holds the LLM agents of akgentic for Go: actors that talk
// with AgentMessages carrying one of five intents, run one ReAct loop of a
// model per message, and route the model's answer to team members, hiring
// new ones by role.
//
// The receive path of a BaseAgent, for each AgentMessage:
//
//  1. a message starting with "/" from a person (a user proxy) or from the
//     program is a slash command: run it (the registry built from the
//     agent's tool cards, plus compact and clear), answer the sender with a
//     notification, record it in the model's context as the person's
//     action. From another agent, the text goes to the model instead and a
//     WarningMessage records the refusal (AgentConfig.AllowAgentCommands
//     opts in);
//  2. the reply protocol for the message's intent is put before the raw
//     content: "You received a|an <intent> from <sender>. <protocol>", a
//     blank line, then the content (the reply protocols below);
//  3. one run of the model with the static StructuredOutput schema, the
//     tool cards' tools and system-prompt sections (Act);
//  4. each OutboundRequest of the answer is delivered, raw, with its intent:
//     "@Name" to that member (an unknown name is skipped with a warning), a
//     bare role to a member hired from the team's AgentCard catalog.
//
// The reply protocol of each intent, {sender} being the sender's name (or
// "unknown"):
//
//	request         Carry out the task, then respond to {sender}. You may also delegate to others.
//	response        Analyse the response, then continue or end the exchange.
//	instruction     Carry out the task, then acknowledge to {sender} if requested.
//	notification    Informational message. No reply is expected.
//	acknowledgment  No further action needed.
//
// A usage-limit breach (either tier of AgentConfig, or a spend ceiling)
// notifies the team's person and ends the turn with a warning; so does a
// loop between agents (ErrLoop). The team's guard rails (loop limits, the
// team spend ceiling, a shared rate limiter) are its Env's Guards. HumanProxy is the person in the
// team; orchestrator.ProcessHumanInput answers an agent's question on their
// behalf and Say sends their message. UsageSummary prices an agent's usage from the
// team's log, and a restored agent gets its model context back from it.
//
// A turn can be cancelled while it runs: a message.CancelMessage sent to
// the agent (a person's "/cancel [reason]" through Say or
// HumanProxy.Reply) cancels its model call and tool calls at once; the
// turn ends with a warning naming who cancelled, the history stays one the
// model accepts, and what was queued behind it is handled as usual. With
// AgentConfig.Runtime.Stream the answers stream: the team's subscribers
// see each one being written as ephemeral llm.TextDeltaEvents, and the
// whole answer is validated and routed as before.
//
// Agents reach their model through Env (an HTTP client; agent/llmtest's
// fake server in tests and offline demos); hired agents inherit their
// hirer's Env, and orchestrator.Restore gives the agents it recreates the
// one passed with WithEnv.
package agent
