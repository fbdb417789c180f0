package agent

import (
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/command"
)

// Test-only access to unexported parts, for the package's external tests.

// Prefix returns the prompt the receiver hands the model for m.
var Prefix = prefix

// Protocol returns the reply protocol for an intent.
var Protocol = protocol

// DefaultPrompt is the backstory of an agent configured without one.
const DefaultPrompt = defaultPrompt

// Registry returns the agent's command registry (nil before its start).
func (a *BaseAgent) Registry() *command.Registry { return a.registry }

// Runner returns the agent's LLM runner (nil before its start).
func (a *BaseAgent) Runner() *llm.Runner { return a.runner }

// Test-only access to loop detection's parts.

// LoopIn reports the limit the last hop of chain passes, "" for none.
var LoopIn = loopIn

// ChainOf is the chain of a message as received by self.
var ChainOf = chainOf

// MaxChainHops is what a chain carries with both loop limits off.
const MaxChainHops = maxChainHops

// TeamsHeld is how many teams' spend g holds.
func (g *Guards) TeamsHeld() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.teams)
}

// ParseDecision reads a person's answer to an approval request.
var ParseDecision = parseDecision

// ApprovalText is what the person reads in an approval request.
var ApprovalText = approvalText
