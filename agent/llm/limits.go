package llm

import "fmt"

// The two usage tiers, as UsageLimitError.Tier names them.
const (
	tierRun   = "run"
	tierAgent = "agent"
)

// UsageLimitError is the one error both tiers raise. Match it with
// errors.As; Limit names the limit (e.g. "run_request_limit") and the text
// says which value was crossed.
type UsageLimitError struct {
	// Tier is the budget crossed: "run" ([RunUsageLimits]), "agent"
	// ([AgentUsageLimits]) or "team" (a team spend ceiling,
	// [Options].TeamBudget).
	Tier   string
	Limit  string
	Reason string
}

// Error describes the failure.
func (e *UsageLimitError) Error() string { return e.Reason }

// runUsage counts one run.
type runUsage struct {
	requests, toolCalls, input, output int
}

// beforeRequest is the run-tier check before each model request.
func (l RunUsageLimits) beforeRequest(u runUsage) error {
	if l.RequestLimit != nil && u.requests >= *l.RequestLimit {
		return &UsageLimitError{Tier: tierRun, Limit: "run_request_limit",
			Reason: fmt.Sprintf("The next request would exceed the run_request_limit of %d", *l.RequestLimit)}
	}
	return nil
}

// afterResponse is the run-tier token check after each response.
func (l RunUsageLimits) afterResponse(u runUsage) error {
	return tokenBreach(tierRun, l.InputTokensLimit, l.OutputTokensLimit, l.TotalTokensLimit, u.input, u.output)
}

// beforeTools is the run-tier check before a batch of tool calls.
func (l RunUsageLimits) beforeTools(u runUsage, batch int) error {
	if l.ToolCallsLimit != nil && u.toolCalls+batch > *l.ToolCallsLimit {
		return &UsageLimitError{Tier: tierRun, Limit: "tool_calls_limit",
			Reason: fmt.Sprintf("The next tool calls would exceed the tool_calls_limit of %d (tool_calls=%d)", *l.ToolCallsLimit, u.toolCalls+batch)}
	}
	return nil
}

func tokenBreach(tier string, in, out, total *int, input, output int) error {
	prefix := ""
	if tier == tierAgent {
		prefix = "agent "
	}
	switch {
	case in != nil && input > *in:
		return &UsageLimitError{Tier: tier, Limit: "input_tokens_limit",
			Reason: fmt.Sprintf("Exceeded the %sinput_tokens_limit of %d (input_tokens=%d)", prefix, *in, input)}
	case out != nil && output > *out:
		return &UsageLimitError{Tier: tier, Limit: "output_tokens_limit",
			Reason: fmt.Sprintf("Exceeded the %soutput_tokens_limit of %d (output_tokens=%d)", prefix, *out, output)}
	case total != nil && input+output > *total:
		return &UsageLimitError{Tier: tier, Limit: "total_tokens_limit",
			Reason: fmt.Sprintf("Exceeded the %stotal_tokens_limit of %d (total_tokens=%d)", prefix, *total, input+output)}
	}
	return nil
}

// agentBudget is the lifetime tier's state. It is not persisted:
// Restore recomputes it from usage events.
type agentBudget struct {
	runs, input, output int
}

// preflight refuses a run when lifetime tokens are already over a limit or
// the run count is used up; otherwise it counts the run before it starts.
func (b *agentBudget) preflight(l AgentUsageLimits) error {
	if err := tokenBreach(tierAgent, l.InputTokensLimit, l.OutputTokensLimit, l.TotalTokensLimit, b.input, b.output); err != nil {
		return err
	}
	if l.RequestLimit != nil && b.runs >= *l.RequestLimit {
		return &UsageLimitError{Tier: tierAgent, Limit: "agent_request_limit",
			Reason: fmt.Sprintf("Exceeded the agent_request_limit of %d (run_count=%d)", *l.RequestLimit, b.runs)}
	}
	b.runs++
	return nil
}
