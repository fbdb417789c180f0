package agent_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor/actortest"
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

// A ping-pong between two agents is stopped when the chain comes back to
// an agent more than MaxRounds times without a person: the message is not
// given to the model, the person is told which agents and how many hops,
// and the turn's warning says the same.
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

// One message fanned out to ten members, each answering, is not a loop,
// even with tight limits: each branch is its own chain.
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

// With both limits off a ping-pong goes on, and its chain, carried in
// every message and stored in the log, keeps only the last
// agent.MaxChainHops agents instead of growing with each hop.
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
	if err := h.team.Stop(actortest.Context(t)); err != nil {
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

// LoopIn names the limit the last hop of a chain passes: the rounds (how
// many times the chain came back to an agent) or the messages a pair
// exchanged; a negative limit is off.
func TestLoopInNamesTheLimitPassed(t *testing.T) {
	for _, tc := range []struct {
		chain       string
		rounds      int
		pair        int
		wantPassing string // "" for none
	}{
		{"A", 0, 0, ""},
		{"A B", 0, 1, ""},
		{"A B A", 0, 5, "came back to A 1 times (limit 0)"},
		{"A B A", 1, 2, ""},
		{"A B A", 1, 1, "B and A exchanged 2 messages (limit 1)"},
		// A triangle: each pair exchanges once a round.
		{"A B C A B C A", 2, 2, ""},
		{"A B C A B C A B", 2, 2, "A and B exchanged 3 messages (limit 2)"},
		{"A B C A B C A B", 1, 5, "came back to B 2 times (limit 1)"},
		{"A B C A B C A B", 5, 2, "A and B exchanged 3 messages (limit 2)"},
		// Off.
		{"A B A B A B A B", -1, -1, ""},
	} {
		got := agent.LoopIn(strings.Fields(tc.chain), tc.rounds, tc.pair)
		if (tc.wantPassing == "") != (got == "") || !strings.Contains(got, tc.wantPassing) {
			t.Errorf("chain %q rounds %d pair %d: %q, want %q", tc.chain, tc.rounds, tc.pair, got, tc.wantPassing)
		}
	}
}

// With both loop limits off nothing stops a chain, and it is stored in
// every message and the log: it carries its last MaxChainHops agents only.
// With a limit on (keep 0) it is whole.
func TestChainOfKeepsTheLastHopsWithLimitsOff(t *testing.T) {
	team := uuid.New()
	long := make([]string, 100)
	for i := range long {
		long[i] = fmt.Sprintf("@N%d", i%2)
	}
	m := &agent.AgentMessage{Chain: long}
	m.Sender = message.NewSnapshotAddress(message.Identity{Name: "@N1", TeamID: team})
	got := agent.ChainOf("@N0", team, m, agent.MaxChainHops)
	want := append(slices.Clone(long[100-agent.MaxChainHops+1:]), "@N0")
	if !slices.Equal(got, want) {
		t.Fatalf("capped chain (%d) %v, want the last %d: %v", len(got), got, agent.MaxChainHops, want)
	}
	if got := agent.ChainOf("@N0", team, m, 0); len(got) != 101 || got[100] != "@N0" {
		t.Fatalf("uncapped chain has %d agents, want 101", len(got))
	}
	short := &agent.AgentMessage{Chain: []string{"@N0", "@N1"}}
	short.Sender = m.Sender
	if got := agent.ChainOf("@N0", team, short, agent.MaxChainHops); !slices.Equal(got, []string{"@N0", "@N1", "@N0"}) {
		t.Fatalf("short chain %v", got)
	}
}
