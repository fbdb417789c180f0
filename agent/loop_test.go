package agent_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/message"
)

// processedBy waits until the agent at who has processed n messages.
func (h *harness) processedBy(who *message.Address, n int) {
	h.t.Helper()
	h.sub.waitFor(h.t, fmt.Sprintf("%s to process %d messages", who.Name(), n), func([]message.Message) bool {
		return len(of[*message.ProcessedMessage](h.sub, who)) >= n
	})
}

// Issue 16: a ping-pong between two agents is stopped when the chain comes
// back to an agent more than MaxRounds times without a person: the
// message is not given to the model, the person is told which agents and
// how many hops, and the turn's warning says the same.
func TestLoopPingPongStoppedAtMaxRounds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		guards    *agent.Guards
		managerIn int // the Manager's model calls before the stop
		hops      int
		what      string
	}{
		// Hops: person → M, M → D, D → M (round 1), M → D, D → M (2), M → D,
		// D → M (3 > 2): stopped at the sixth hop between agents.
		{"rounds", &agent.Guards{MaxRounds: 2}, 3, 6, "the chain came back to @Manager 3 times (limit 2)"},
		// M → D, D → M, M → D, D → M: the fourth message between them passes 3.
		{"pair", &agent.Guards{MaxRounds: -1, MaxPairMessages: 3}, 2, 4, "@Developer and @Manager exchanged 4 messages (limit 3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.env.Guards = tc.guards
			h.spawnAgent(h.config("@Developer", "Developer"))
			h.srv.Model("@Manager").Otherwise(final(out(agent.Request, "@Developer", "check it again")))
			h.srv.Model("@Developer").Otherwise(final(out(agent.Response, "@Manager", "checked")))
			h.say(h.manager, agent.Request, "review the code")
			n := h.expectHuman()
			if n.Type != agent.Notification || !strings.Contains(n.Content, tc.what) ||
				!strings.Contains(n.Content, fmt.Sprintf("a chain of %d hops", tc.hops)) ||
				!strings.Contains(n.Content, "The message from @Developer to @Manager was not given to the model") {
				t.Fatalf("notice %q", n.Content)
			}
			h.sub.waitFor(t, "the manager's warning", func([]message.Message) bool {
				return len(of[*message.WarningMessage](h.sub, h.manager)) > 0
			})
			h.barrier()
			if got := len(h.srv.RequestsFor("@Manager")); got != tc.managerIn {
				t.Fatalf("manager made %d model calls, want %d: the looping message reached the model", got, tc.managerIn)
			}
			if got := len(h.srv.RequestsFor("@Developer")); got != tc.managerIn {
				t.Fatalf("developer made %d model calls, want %d", got, tc.managerIn)
			}
			warns := of[*message.WarningMessage](h.sub, h.manager)
			if len(warns) != 1 || !strings.Contains(warns[0].Content, tc.what) {
				t.Fatalf("warnings %+v", warns)
			}
			// The chain travels with the messages: the developer's last
			// answer carries the path so far.
			sent := h.sub.sentTo("@Manager")
			last := sent[len(sent)-1]
			if len(last.Chain) != tc.hops || last.Chain[0] != "@Manager" || last.Chain[len(last.Chain)-1] != "@Developer" {
				t.Fatalf("last message's chain %q", last.Chain)
			}
			h.noHuman()
		})
	}
}

// Issue 16: one message fanned out to ten members, each answering, is not
// a loop, even with tight limits: each branch is its own chain.
func TestLoopFanOutIsNotALoop(t *testing.T) {
	h := newHarness(t)
	h.env.Guards = &agent.Guards{MaxRounds: 1, MaxPairMessages: 2}
	var reqs []agent.OutboundRequest
	for i := range 10 {
		name := fmt.Sprintf("@Dev%d", i)
		h.spawnAgent(h.config(name, "Developer"))
		h.srv.Model(name).Otherwise(final(out(agent.Response, "@Manager", "done "+name)))
		reqs = append(reqs, out(agent.Request, name, "build part "+name))
	}
	h.srv.Model("@Manager").Enqueue(final(reqs...))
	h.say(h.manager, agent.Request, "build it all")
	h.processedBy(h.manager, 11) // the request, then the ten answers
	h.barrier()
	for _, w := range of[*message.WarningMessage](h.sub, nil) {
		t.Errorf("warning %q", w.Content)
	}
	if got := len(h.srv.RequestsFor("@Manager")); got != 11 {
		t.Fatalf("manager made %d model calls, want 11 (each answer reached the model)", got)
	}
	h.noHuman()
}

// Issue 16 (review): with both limits off a ping-pong goes on, and its
// chain, carried in every message and stored in the log, keeps only the
// last agent.MaxChainHops agents instead of growing with each hop.
func TestLoopChainCappedWithLimitsOff(t *testing.T) {
	h := newHarness(t)
	h.env.Guards = &agent.Guards{MaxRounds: -1, MaxPairMessages: -1}
	h.spawnAgent(h.config("@Developer", "Developer"))
	h.srv.Model("@Manager").Otherwise(final(out(agent.Request, "@Developer", "check it again")))
	h.srv.Model("@Developer").Otherwise(final(out(agent.Response, "@Manager", "checked")))
	h.say(h.manager, agent.Request, "review the code")
	const answers = agent.MaxChainHops/2 + 4 // more hops than a chain carries
	h.sub.waitFor(t, "the ping-pong to pass the cap", func([]message.Message) bool {
		return len(h.sub.sentTo("@Manager")) >= answers
	})
	if err := h.team.Stop(h.ctx()); err != nil {
		t.Fatal(err)
	}
	longest := 0
	for _, m := range append(h.sub.sentTo("@Manager"), h.sub.sentTo("@Developer")...) {
		longest = max(longest, len(m.Chain))
	}
	if longest != agent.MaxChainHops {
		t.Fatalf("the longest chain carried %d agents, want the cap of %d", longest, agent.MaxChainHops)
	}
}
