package llm_test

import (
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// An explicit temperature 0 reaches the wire; seed and max tokens too.
func TestModelSettingsOnTheWire(t *testing.T) {
	h := newHarness(t, func(c *llm.Config) {
		c.Model.Temperature = new(float32(0))
		c.Model.Seed = new(7)
		c.Model.MaxTokens = 4096
	})
	h.mustRun("x")
	r := h.requests()[0]
	if r.Temperature == nil || *r.Temperature != 0 || r.Seed == nil || *r.Seed != 7 || r.MaxTokens != 4096 || r.MaxCompletionTokens != 0 {
		t.Fatalf("request %+v", r)
	}
	h2 := newHarness(t, func(c *llm.Config) { c.Model.Temperature = new(float32(0.3)) })
	h2.mustRun("x")
	if tp := h2.requests()[0].Temperature; tp == nil || *tp < 0.29 || *tp > 0.31 {
		t.Fatalf("temperature %v", tp)
	}
}

// Reasoning models take max_completion_tokens and reasoning_effort.
func TestReasoningModelSettings(t *testing.T) {
	h := newHarness(t, func(c *llm.Config) {
		c.Model.Model = "gpt-5.2"
		c.Model.MaxTokens = 100
		c.Model.ReasoningEffort = "low"
	})
	h.mustRun("x")
	r := h.requests()[0]
	if r.MaxTokens != 0 || r.MaxCompletionTokens != 100 || r.ReasoningEffort != "low" || r.Model != "gpt-5.2" {
		t.Fatalf("request %+v", r)
	}
}

// Configs are validated at creation with errors that name
// the field.
func TestConfigValidation(t *testing.T) {
	cases := map[string]struct {
		mutate func(*llm.Config)
		want   string
	}{
		"provider":             {func(c *llm.Config) { c.Model.Provider = "anthropic" }, "Provider"},
		"model":                {func(c *llm.Config) { c.Model.Model = "" }, "Model.Model"},
		"azure needs base url": {func(c *llm.Config) { c.Model.Provider = "azure" }, "BaseURL"},
		"temperature range":    {func(c *llm.Config) { c.Model.Temperature = new(float32(3)) }, "Temperature"},
		"reasoning temp":       {func(c *llm.Config) { c.Model.Model = "o3-mini"; c.Model.Temperature = new(float32(0.2)) }, "reasoning model"},
		"effort on gpt-4.1":    {func(c *llm.Config) { c.Model.Model = "gpt-4.1"; c.Model.ReasoningEffort = "high" }, "reasoning_effort"},
		"end strategy":         {func(c *llm.Config) { c.Runtime.EndStrategy = "late" }, "EndStrategy"},
		"strategy":             {func(c *llm.Config) { c.Compaction.Strategy = "magic" }, "Strategy"},
		"ratio":                {func(c *llm.Config) { c.Compaction.TriggerRatio = 1.5 }, "TriggerRatio"},
		"retries":              {func(c *llm.Config) { c.Runtime.Retries = -1 }, "Retries"},
	}
	for name, tc := range cases {
		cfg := llm.DefaultConfig()
		tc.mutate(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want mention of %q", name, err, tc.want)
		}
		if _, err := llm.NewRunner(cfg, llm.Options{}); err == nil {
			t.Errorf("%s: NewRunner accepted it", name)
		}
	}
	if err := llm.DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := llm.NewClient(llm.ModelConfig{}, llm.HTTPConfig{}, llm.Options{}); err == nil {
		t.Fatal("NewClient accepted an empty model")
	}
}

// The key comes from the environment when APIKey is empty; azure sends it
// as api-key to the deployment URL.
func TestAPIKeyFromEnvironmentAndAzure(t *testing.T) {
	srv := llmtest.NewServer()
	defer srv.Close()
	t.Setenv("TEST_LLM_KEY", "sk-from-env")
	c, err := llm.NewClient(llm.ModelConfig{Provider: "openai-compatible", BaseURL: srv.URL(), Model: "m", APIKeyEnv: "TEST_LLM_KEY"},
		llm.HTTPConfig{}, llm.Options{HTTPClient: srv.HTTPClient()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CreateChatCompletion(t.Context(), plainRequest()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0].Authorization; got != "Bearer sk-from-env" || c.Model().Model != "m" {
		t.Fatalf("authorization %q", got)
	}
	az, err := llm.NewClient(llm.ModelConfig{Provider: "azure", BaseURL: srv.URL(), Model: "dep", APIKey: "k", AzureAPIVersion: "2024-10-21"},
		llm.HTTPConfig{}, llm.Options{HTTPClient: srv.HTTPClient()})
	if err != nil {
		t.Fatal(err)
	}
	defer az.Close()
	// The fake serves any path ending in /chat/completions.
	if _, err := az.CreateChatCompletion(t.Context(), plainRequest()); err != nil {
		t.Fatal(err)
	}
	// A client built without an HTTP client owns one; Close releases it.
	own, err := llm.NewClient(llm.DefaultConfig().Model, llm.HTTPConfig{}, llm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := own.Close(); err != nil {
		t.Fatal(err)
	}
}

// The provider and server of a model config, as the usage events and the
// OpenTelemetry spans report them.
func TestProviderNameAndServer(t *testing.T) {
	cases := []struct {
		cfg      llm.ModelConfig
		provider string
		host     string
		port     int
	}{
		{llm.ModelConfig{Model: "gpt-4.1"}, "openai", "api.openai.com", 443},
		{llm.ModelConfig{Provider: "openai", Model: "gpt-4.1"}, "openai", "api.openai.com", 443},
		{llm.ModelConfig{Provider: "azure", BaseURL: "https://acme.openai.azure.com", Model: "dep"}, "azure.ai.openai", "acme.openai.azure.com", 443},
		{llm.ModelConfig{Provider: "openai-compatible", BaseURL: "https://api.groq.com/openai/v1", Model: "llama"}, "groq", "api.groq.com", 443},
		{llm.ModelConfig{Provider: "openai-compatible", BaseURL: "http://localhost:11434/v1", Model: "llama3"}, "openai-compatible", "localhost", 11434},
		{llm.ModelConfig{Provider: "openai-compatible", BaseURL: "http://vllm.internal/v1", Model: "m"}, "openai-compatible", "vllm.internal", 80},
	}
	for _, c := range cases {
		host, port := c.cfg.Server()
		if got := c.cfg.ProviderName(); got != c.provider || host != c.host || port != c.port {
			t.Errorf("%v: provider %q, server %s:%d; want %q, %s:%d", c.cfg, got, host, port, c.provider, c.host, c.port)
		}
	}
}
