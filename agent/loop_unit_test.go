package agent_test

import (
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent"
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
