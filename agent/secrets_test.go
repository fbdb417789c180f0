package agent_test

import (
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
)

// A provider's 401 that echoes the key (a proxy or a compatible server
// may) leaves no trace of it in the log lines or in any record: both the
// key the agent was configured with and a key-shaped one are scrubbed.
func TestProviderErrorEchoingTheKeyIsScrubbed(t *testing.T) {
	const configured = "proxy-credential-7Yq2Lm9Xw4"
	const shaped = "sk-proj-Zq8vN3mK7pL2wX9tR4yB6cD1"
	h := newHarness(t)
	cfg := h.config("@Keyed", "Developer")
	cfg.Model.APIKey = configured
	keyed := h.spawnAgent(cfg)
	h.srv.Model("@Keyed").Enqueue(llmtest.APIError(401, "invalid_request_error", "invalid_api_key",
		"Incorrect API key provided: "+configured+" (also tried "+shaped+")"))
	h.say(keyed, agent.Request, "go")
	h.sub.waitFor(t, "the ErrorMessage", func([]message.Message) bool { return len(of[*message.ErrorMessage](h.sub, keyed)) > 0 })
	h.barrier()
	errs := of[*message.ErrorMessage](h.sub, keyed)
	if len(errs) != 1 || !strings.Contains(errs[0].Content, "provider error 401") || !strings.Contains(errs[0].Content, "[REDACTED]") {
		t.Fatalf("errors %+v, want one provider error 401 with the key redacted", errs)
	}
	for _, m := range h.sub.all() {
		b, err := message.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{configured, shaped} {
			if strings.Contains(string(b), secret) {
				t.Errorf("a %T record holds the key: %s", m, b)
			}
		}
	}
	logs := h.logs.Text()
	for _, secret := range []string{configured, shaped} {
		if strings.Contains(logs, secret) {
			t.Errorf("a log line holds the key %s", secret)
		}
	}
}
