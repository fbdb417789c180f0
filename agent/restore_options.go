package agent

import (
	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// WithHumanDelivery is a Restore option: every HumanProxy the restore
// recreates gets deliver as its Deliver hook before it starts, so no
// message for the person arrives while it has none (a hook is not
// configuration, so the log does not carry it). It composes with WithEnv
// and any other orchestrator.WithPrepare.
func WithHumanDelivery(deliver func(m *AgentMessage)) orchestrator.Option {
	return orchestrator.WithPrepare(func(a actor.Actor) {
		if h, ok := a.(*HumanProxy); ok {
			h.Deliver = deliver
		}
	})
}
