package akotel_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// A provider's 401 that echoes the configured key leaves it in no span:
// not in a status, an attribute or an event.
func TestProviderKeyInNoSpan(t *testing.T) {
	tel := newTelemetry(t, false)
	failures := make(chan *message.ErrorMessage, 1)
	tm := newTeam(t, orchestrator.WithSubscribers(tel.sub, errorWaiter(failures)))
	tm.srv.Model("@Manager").Enqueue(llmtest.APIError(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: "+secret))
	if err := agent.Say(actortest.Context(t), tm.human, tm.manager, agent.NewRequest("go")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-failures:
	case <-time.After(actortest.Timeout):
		t.Fatal("timed out waiting for the manager's ErrorMessage")
	}
	tm.stop()
	spans := tel.ended()
	if len(named(spans, "invoke_agent @Manager")) != 1 {
		t.Fatalf("no manager turn:\n%s", tree(spans))
	}
	for _, sp := range spans {
		all := fmt.Sprint(sp.Name(), sp.Status(), sp.Attributes(), sp.Events())
		if strings.Contains(all, secret) {
			t.Errorf("span %s holds the key: %s", sp.Name(), all)
		}
	}
}
