package agent_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/message"
)

// Issue 16: the counts loop detection makes of one chain.
func TestLoopCounts(t *testing.T) {
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

// Issue 16 (review): with both loop limits off nothing stops a chain, and
// it is stored in every message and the log: it carries its last
// MaxChainHops agents only. With a limit on (keep 0) it is whole.
func TestChainCappedWithLimitsOff(t *testing.T) {
	team := uuid.New()
	long := make([]string, 100)
	for i := range long {
		long[i] = fmt.Sprintf("@A%d", i%2)
	}
	m := &agent.AgentMessage{Chain: long}
	m.Sender = message.NewSnapshotAddress(message.Identity{Name: "@A1", TeamID: team})
	got := agent.ChainOf("@A0", team, m, agent.MaxChainHops)
	want := append(slices.Clone(long[100-agent.MaxChainHops+1:]), "@A0")
	if !slices.Equal(got, want) {
		t.Fatalf("capped chain (%d) %v, want the last %d: %v", len(got), got, agent.MaxChainHops, want)
	}
	if got := agent.ChainOf("@A0", team, m, 0); len(got) != 101 || got[100] != "@A0" {
		t.Fatalf("uncapped chain has %d agents, want 101", len(got))
	}
	short := &agent.AgentMessage{Chain: []string{"@A0", "@A1"}}
	short.Sender = m.Sender
	if got := agent.ChainOf("@A0", team, short, agent.MaxChainHops); !slices.Equal(got, []string{"@A0", "@A1", "@A0"}) {
		t.Fatalf("short chain %v", got)
	}
}
