// Package llm is the LLM layer of akgentic agents: a chat-completions
// client over github.com/sashabaranov/go-openai for any OpenAI-compatible
// endpoint, and the ReAct loop an agent runs on every message.
//
// The pieces:
//
//   - [ModelConfig], [RuntimeConfig], [RunUsageLimits], [AgentUsageLimits]
//     and [CompactionConfig], gathered in [Config] with [DefaultConfig] and
//     [Config.Validate].
//   - The runner's client: go-openai over a retrying HTTP layer (backoff
//     with jitter, Retry-After honoured, fail fast on 4xx other than 408,
//     409 and 429; RuntimeConfig.HTTP, [Options].HTTPClient) with the model
//     settings applied to each request.
//   - [Runner] and [Run]: the loop. A run sends the system prompt (backstory,
//     date, [SystemPrompt] sections), the history and the new prompt with
//     the tools and a strict json_schema response format made from the
//     caller's output type ([Output]); executes tool calls ([Tool],
//     [NewTool], [Retry]); feeds invalid output back to the model; enforces
//     both usage tiers ([UsageLimitError]); and heals the history when a run
//     fails so the next request is valid.
//   - Events ([MessageEvent], [UsageEvent], [ToolCallEvent],
//     [ToolReturnEvent], [CompactedEvent], [ClearedEvent]) reported to
//     Options.Observer; [Runner.Restore] folds them back into a history and
//     a lifetime budget. A streamed answer's [TextDeltaEvent]s are joined
//     by [StreamedAnswer], and [StreamedText] decodes the text of the
//     messages it is writing.
//   - Pricing: an embedded, versioned [PriceTable] and [Aggregate].
//   - Guard rails, checked before every model call: spend
//     ceilings in USD, the agent's (AgentUsageLimits.SpendLimit) and a
//     team's shared [Budget] ([Options].TeamBudget), each reserving the
//     call's worst case and settled from its usage; and a shared
//     [RateLimiter] ([RateLimit] per model; each call charged an estimate
//     reconciled with its usage; a 429's Retry-After pauses every runner
//     sharing it).
//   - Compaction: [Runner.Compact] and [Runner.Clear], and the auto-trigger
//     when the model's context length is known.
//
// A Runner is driven from one goroutine (an agent's); its tools may run
// concurrently. The package's tests speak to the fake server in
// agent/llmtest, never to the network.
package llm
