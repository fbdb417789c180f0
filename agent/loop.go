package agent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
)

// Loop detection.
//
// Design: the chain travels with the message. Every AgentMessage an agent
// sends from a turn carries AgentMessage.Chain: the names of the agents
// the chain of turns went through since the last message from a person (or
// from the program), oldest first, the sending agent last. The receiver
// appends itself (chainOf) and counts, in that one slice, how many times
// it is in the chain and how many messages it and the sender exchanged in
// it. No ledger query, no shared state: the cost is a scan of a slice the
// limits themselves keep short (an agent appears at most MaxRounds+1
// times before the chain is stopped), and the chain survives a restore in
// the log, since it is part of the message.
//
// With both limits off (negative) nothing keeps a chain short, so it
// carries only its last maxChainHops agents (the oldest are dropped): it
// is stored in every message and in the log. With a limit on, the limit
// keeps it short (at most about the team's size times the limit) and the
// chain is whole, so the counts are exact.
//
// A chain is a path, not a tree: a message that fans out to ten members
// gives ten chains of two agents each, so a wide fan-out is never a loop.
// The counts are by name: two members with the same name count as one,
// which can only stop a chain earlier.

// The loop limits a team has unless its Guards set them.
const (
	defaultMaxRounds       = 5
	defaultMaxPairMessages = 10
)

// maxChainHops is how many agents a chain carries when both loop limits
// are off: the last ones.
const maxChainHops = 64

// ErrLoop is wrapped by the warning of a turn that was not given to the
// model because its message continued a loop between agents: a chain that
// came back to the same agent more than Guards.MaxRounds times, or two
// agents that exchanged more than Guards.MaxPairMessages messages, without
// a person's message in between. The team's person is told which agents
// and how many hops.
var ErrLoop = errors.New("loop between agents stopped")

// chainOf returns the chain of m as received by self: the sender's chain
// plus self, its last keep agents only when keep > 0. A message from a
// person, from the program (no sender) or from outside self's team starts
// a new chain; one from an agent that sent no chain (not a BaseAgent)
// starts with that agent.
func chainOf(self string, selfTeam uuid.UUID, m *AgentMessage, keep int) []string {
	s := m.Sender
	if s == nil || s.IsUserProxy() || s.TeamID() != selfTeam {
		return []string{self}
	}
	prev := m.Chain
	if len(prev) == 0 {
		prev = []string{s.Name()}
	}
	if keep > 0 && len(prev) >= keep {
		prev = prev[len(prev)-keep+1:]
	}
	out := make([]string, len(prev)+1)
	copy(out, prev)
	out[len(prev)] = self
	return out
}

// loopIn reports the limit the last hop of chain (a message to its last
// agent) passes, or "" when it passes none: rounds is how many times the
// chain may come back to an agent, pair how many messages two agents may
// exchange in it; a limit below 0 is off.
func loopIn(chain []string, rounds, pair int) string {
	n := len(chain)
	if n < 2 {
		return ""
	}
	self, from := chain[n-1], chain[n-2]
	visits, exchanged := 0, 0
	for i, name := range chain {
		if name == self {
			visits++
		}
		if i > 0 && (name == self && chain[i-1] == from || name == from && chain[i-1] == self) {
			exchanged++
		}
	}
	switch {
	case pair >= 0 && exchanged > pair:
		return fmt.Sprintf("%s and %s exchanged %d messages (limit %d)", from, self, exchanged, pair)
	case rounds >= 0 && visits-1 > rounds:
		return fmt.Sprintf("the chain came back to %s %d times (limit %d)", self, visits-1, rounds)
	}
	return ""
}

// guardLoop is the loop check of a message before its turn: it sets the
// chain the turn's messages carry, or, when m continues a loop, tells the
// team's person and returns the turn's warning; the model is not called.
func (a *BaseAgent) guardLoop(c *actor.Context, m *AgentMessage) error {
	self := c.Self()
	rounds, pair := a.env().Guards.loopLimits()
	keep := 0
	if rounds < 0 && pair < 0 {
		keep = maxChainHops
	}
	a.chain = chainOf(self.Name(), self.TeamID(), m, keep)
	what := loopIn(a.chain, rounds, pair)
	if what == "" {
		return nil
	}
	text := fmt.Sprintf("Loop stopped: %s without a message from a person, in a chain of %d hops: %s. "+
		"The message from %s to %s was not given to the model.",
		what, len(a.chain)-1, strings.Join(a.chain, " → "), a.chain[len(a.chain)-2], self.Name())
	a.tellPerson(c, "loop stopped", text+" \nPlease review the agents' activity and give your instruction.")
	return &actor.WarningError{Msg: fmt.Sprintf("agent %s: %s", self.Name(), text), Err: ErrLoop}
}
