package cards

import (
	"context"
	"sync/atomic"

	"github.com/akgentic/akgentic-go/message"
)

// TurnRoster is the team's roster as an agent's turn last saw it (the
// system prompt's roster section, or a roster tool call in the same run):
// the agent routes "@Name" to a member of it that is still alive instead
// of asking the team again (one orchestrator round trip per routed message
// saved). A miss or a member no longer alive falls back to the query.
// It is safe for concurrent use (parallel tool calls).
type TurnRoster struct {
	members atomic.Pointer[[]*message.Address]
}

type turnRosterKey struct{}

// WithTurnRoster returns ctx carrying a new, empty TurnRoster, and that
// roster.
func WithTurnRoster(ctx context.Context) (context.Context, *TurnRoster) {
	r := new(TurnRoster)
	return context.WithValue(ctx, turnRosterKey{}, r), r
}

// NoteRoster records members, the whole roster just queried in join
// order, in the TurnRoster ctx carries, if any.
func NoteRoster(ctx context.Context, members []*message.Address) {
	if r, ok := ctx.Value(turnRosterKey{}).(*TurnRoster); ok {
		r.members.Store(&members)
	}
}

// Find returns the first member named name when it is still alive, nil
// when there is none or it has stopped. Alive, it is what the team's
// Member query would answer: its Stop record is not in the log yet, and
// whoever joined since comes after it in join order.
func (r *TurnRoster) Find(name string) *message.Address {
	p := r.members.Load()
	if p == nil {
		return nil
	}
	for _, m := range *p {
		if m.Name() == name {
			if m.IsAlive() {
				return m
			}
			return nil
		}
	}
	return nil
}
