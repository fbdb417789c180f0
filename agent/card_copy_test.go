package agent_test

import (
	"testing"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// orchestrator.ConfigCopier: a card copies an AgentConfig with its API key,
// which JSON never carries, so that members hired from the card keep it.
func TestCardKeepsAPIKey(t *testing.T) {
	cfg := agent.NewConfig("@Dev", "Developer")
	cfg.Model.APIKey = "sk-team-key"
	card, err := orchestrator.NewAgentCard(orchestrator.AgentCard{AgentClass: agent.Kind, Description: "dev", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	cp, _ := card.ConfigCopy()
	if got := cp.(*agent.AgentConfig).Model.APIKey; got != "sk-team-key" {
		t.Fatalf("hired member's APIKey = %q", got)
	}
}
