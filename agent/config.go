package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
)

// PromptTemplate is the agent's backstory template: {key} placeholders
// filled from Params; {{ and }} are literal braces.
type PromptTemplate struct {
	// Template is the backstory; "" means "You are a useful assistant."
	Template string            `json:"template"`
	Params   map[string]string `json:"params,omitempty"`
}

// defaultPrompt is the backstory of an agent configured without one.
const defaultPrompt = "You are a useful assistant."

// Render fills the placeholders. A placeholder without a param is an
// error naming it; an unclosed brace too.
func (p PromptTemplate) Render() (string, error) {
	t := p.Template
	if t == "" {
		t = defaultPrompt
	}
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		ch := t[i]
		switch {
		case ch == '{' && i+1 < len(t) && t[i+1] == '{':
			b.WriteByte('{')
			i++
		case ch == '}' && i+1 < len(t) && t[i+1] == '}':
			b.WriteByte('}')
			i++
		case ch == '{':
			end := strings.IndexByte(t[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("agent: prompt template: unclosed { at byte %d", i)
			}
			key := t[i+1 : i+end]
			v, ok := p.Params[key]
			if !ok {
				return "", fmt.Errorf("agent: prompt template: no param for placeholder {%s}", key)
			}
			b.WriteString(v)
			i += end
		default:
			b.WriteByte(ch)
		}
	}
	return b.String(), nil
}

// AgentConfig configures a BaseAgent: the core config plus the prompt, the
// model, the loop's knobs, both usage tiers, compaction and the tool
// cards. It is serializable (a restored agent gets it back from its
// StartMessage); the API key never is.
type AgentConfig struct {
	actor.Config
	Prompt      PromptTemplate       `json:"prompt"`
	Model       llm.ModelConfig      `json:"model_cfg"`
	Runtime     llm.RuntimeConfig    `json:"runtime_cfg"`
	RunLimits   llm.RunUsageLimits   `json:"run_usage_limits"`
	AgentLimits llm.AgentUsageLimits `json:"agent_usage_limits"`
	Compaction  llm.CompactionConfig `json:"compaction_cfg"`
	// Tools are the agent's tool cards; a TeamTool is added in front when
	// none is configured.
	Tools tool.Cards `json:"tools"`
	// AllowAgentCommands lets other agents' messages run slash commands.
	// By default only a person (a user proxy) and the program itself (a
	// message from outside the team) may: a model writing "/fire_member
	// @X" into a message is not obeyed.
	AllowAgentCommands bool `json:"allow_agent_commands,omitempty"`
}

// NewConfig returns an AgentConfig with every default.
func NewConfig(name, role string) *AgentConfig {
	d := llm.DefaultConfig()
	return &AgentConfig{
		Config:     actor.Config{Name: name, Role: role},
		Model:      d.Model,
		Runtime:    d.Runtime,
		RunLimits:  d.RunLimits,
		Compaction: d.Compaction,
	}
}

// CopyConfig returns a deep copy that keeps the API key, which JSON never
// carries (orchestrator.ConfigCopier: members hired from a card keep it).
// The copy is what a JSON round trip gives (an empty map or card list
// comes back as JSON leaves it), made field by field: the team's catalog
// copies every card's config on each query, once per agent turn for the
// roles section, and the round trip was a tenth of a turn. Only the tool
// cards, values of any registered type, go through JSON.
func (c *AgentConfig) CopyConfig() (any, error) {
	out := *c
	out.Prompt.Params = nil
	if len(c.Prompt.Params) > 0 {
		out.Prompt.Params = maps.Clone(c.Prompt.Params)
	}
	m, rt, run, ag := &out.Model, &out.Runtime, &out.RunLimits, &out.AgentLimits
	m.Temperature, m.Seed = clonePtr(m.Temperature), clonePtr(m.Seed)
	rt.ParallelToolCalls = clonePtr(rt.ParallelToolCalls)
	run.RequestLimit, run.ToolCallsLimit = clonePtr(run.RequestLimit), clonePtr(run.ToolCallsLimit)
	run.InputTokensLimit, run.OutputTokensLimit = clonePtr(run.InputTokensLimit), clonePtr(run.OutputTokensLimit)
	run.TotalTokensLimit = clonePtr(run.TotalTokensLimit)
	ag.RequestLimit, ag.InputTokensLimit = clonePtr(ag.RequestLimit), clonePtr(ag.InputTokensLimit)
	ag.OutputTokensLimit, ag.TotalTokensLimit = clonePtr(ag.OutputTokensLimit), clonePtr(ag.TotalTokensLimit)
	ag.SpendLimit = clonePtr(ag.SpendLimit)
	out.Tools = tool.Cards{}
	if len(c.Tools) > 0 {
		data, err := json.Marshal(c.Tools)
		if err != nil {
			return nil, fmt.Errorf("agent: copy config of %s: %w", c.Name, err)
		}
		if err := json.Unmarshal(data, &out.Tools); err != nil {
			return nil, fmt.Errorf("agent: copy config of %s: %w", c.Name, err)
		}
	}
	return &out, nil
}

// clonePtr returns a pointer to a copy of *p, nil for nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// llmConfig returns the runner config the agent's settings make.
func (c *AgentConfig) llmConfig(backstory string) llm.Config {
	return llm.Config{Model: c.Model, Runtime: c.Runtime, RunLimits: c.RunLimits,
		AgentLimits: c.AgentLimits, Compaction: c.Compaction, Backstory: backstory}
}

// Validate checks the config: the LLM settings (llm.Config.Validate), the
// prompt template, the cards.
func (c *AgentConfig) Validate() error {
	var errs []error
	if _, err := c.Prompt.Render(); err != nil {
		errs = append(errs, err)
	}
	if err := c.llmConfig("").Validate(); err != nil {
		errs = append(errs, err)
	}
	for i, card := range c.Tools {
		if card == nil {
			errs = append(errs, fmt.Errorf("agent: tools[%d] is nil", i))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("agent: invalid config for %s: %w", c.Name, errors.Join(errs...))
	}
	return nil
}

// AgentState is what an agent publishes (README AgentState): its rendered
// backstory.
type AgentState struct {
	Backstory string `json:"backstory"`
}

// Env is what an agent needs at run time that is not configuration: how to
// reach the model and the clocks. It is never serialized: hired agents
// inherit their hirer's Env, and agents recreated by orchestrator.Restore
// get the one given with WithEnv. The zero Env (an agent spawned without
// one) uses a private HTTP client, the real clock and the default prices.
type Env struct {
	// HTTPClient sends the model requests (e.g. llmtest.Server's
	// HTTPClient()); nil uses a private client.
	HTTPClient *http.Client
	// Prices prices usage (default llm.DefaultPriceTable()).
	Prices *llm.PriceTable
	// Now is the clock for the date section (default time.Now).
	Now func() time.Time
	// NewRunID makes run ids (default random UUIDs).
	NewRunID func() string
	// Sleep waits between HTTP retries (default: a timer that honours the
	// context).
	Sleep func(ctx context.Context, d time.Duration) error
	// Guards are the team's guard rails: loop limits, the team spend
	// ceiling and the shared rate limiter (nil: the default loop limits
	// only).
	Guards *Guards
	// Rand, when set, returns a number in [0, n): it makes generated member
	// names (TeamTool) reproducible, e.g. for a recorded demo.
	Rand func(n int) int
}
