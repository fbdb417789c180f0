package tool

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/akgentic/akgentic-go/agent/llm"
)

// Approval says which tool calls wait for a person's approval before they
// run. Tools are named as the model sees them, whatever card gives them: a
// card's own (update_planning, workspace_write), a search's (web_search,
// web_fetch), an MCP server's (<server>_<tool>). A name no tool of an
// agent has marks nothing for that agent. Set it on the team's guards
// (agent.Guards.Approval): hired and restored agents get it with the Env,
// predicates included.
//
// A card's author can also mark a tool in Go (llm.Tool.NeedsApproval); a
// rule here adds to that mark, it never removes one.
type Approval struct {
	// Always names the tools every call of which waits for approval.
	Always []string
	// When decides per call, by tool name, from the call's arguments (valid
	// JSON): true waits for approval. A tool in Always waits whatever its
	// predicate says.
	When map[string]func(args json.RawMessage) bool
	// Destructive makes every call wait of every tool its author says may
	// delete or overwrite (llm.Tool.Destructive: an MCP tool's
	// destructiveHint), whatever its name.
	Destructive bool
	// Timeout, when positive, denies a call nobody decided on within it
	// (the model is told it was not approved in time). Zero: a call waits
	// until a person decides.
	Timeout time.Duration
}

// Mark returns tools with the calls a marks as needing approval: the
// tools it names are copies with NeedsApproval set (the originals, which
// a card may share, are left alone); the others are returned as they
// are. A nil Approval marks nothing.
func (a *Approval) Mark(tools []*llm.Tool) []*llm.Tool {
	if a == nil || (len(a.Always) == 0 && len(a.When) == 0 && !a.Destructive) {
		return tools
	}
	out := make([]*llm.Tool, len(tools))
	for i, t := range tools {
		out[i] = t
		if t == nil {
			continue
		}
		always := slices.Contains(a.Always, t.Name) || (a.Destructive && t.Destructive)
		when := a.When[t.Name]
		if !always && when == nil {
			continue
		}
		own := t.NeedsApproval
		c := *t
		c.NeedsApproval = func(args json.RawMessage) bool {
			return always || (own != nil && own(args)) || (when != nil && when(args))
		}
		out[i] = &c
	}
	return out
}
