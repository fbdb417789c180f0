package studio

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// memberInfo is what the member panel shows of a member's recorded
// config: a summary of chosen fields, never the config itself (no key,
// no header, no credential in a URL can reach the page).
type memberInfo struct {
	Model   string   `json:"model,omitempty"`   // the model's name
	Where   string   `json:"where,omitempty"`   // its provider, and the endpoint's host
	Window  int      `json:"window,omitempty"`  // its context window in tokens (0: not configured)
	Tools   []string `json:"tools,omitempty"`   // the tool cards' kinds
	Prompt  string   `json:"prompt,omitempty"`  // the backstory, rendered (clipped)
	Retries int      `json:"retries,omitempty"` // output retries
	Stream  bool     `json:"stream,omitempty"`
	Limits  []string `json:"limits,omitempty"` // "run_request_limit 50", …
}

// infoOf summarizes an agent's recorded config (a StartMessage's: the
// *agent.AgentConfig of a live team, or its JSON in a restored one); nil
// for any other actor.
func infoOf(cfg any) *memberInfo {
	if cfg == nil {
		return nil
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil
	}
	var c struct { // the fields shown, whatever tools the config names
		Prompt      agent.PromptTemplate `json:"prompt"`
		Model       llm.ModelConfig      `json:"model_cfg"`
		Runtime     llm.RuntimeConfig    `json:"runtime_cfg"`
		RunLimits   json.RawMessage      `json:"run_usage_limits"`
		AgentLimits json.RawMessage      `json:"agent_usage_limits"`
		Tools       []struct {
			Kind string `json:"kind"`
		} `json:"tools"`
	}
	if json.Unmarshal(raw, &c) != nil || c.Model.Model == "" {
		return nil
	}
	info := &memberInfo{Model: c.Model.Model, Window: c.Model.ContextLength, Retries: c.Runtime.Retries, Stream: c.Runtime.Stream}
	info.Where = c.Model.Provider
	if u, err := url.Parse(c.Model.BaseURL); err == nil && u.Host != "" {
		info.Where = strings.TrimSpace(info.Where + " at " + u.Host) // the host only: no path, query or user info
	}
	for _, t := range c.Tools {
		info.Tools = append(info.Tools, t.Kind)
	}
	if p, err := c.Prompt.Render(); err == nil {
		info.Prompt = clipTo(p, 600)
	}
	info.Limits = append(limits(c.RunLimits), limits(c.AgentLimits)...)
	return info
}

// limits lists the limits set in raw (a usage-limits object), by their
// JSON names.
func limits(raw json.RawMessage) []string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	var out []string
	for k, v := range m {
		if n, ok := v.(float64); ok {
			out = append(out, fmt.Sprintf("%s %g", k, n))
		}
	}
	sort.Strings(out)
	return out
}

// clipTo cuts s to n runes, saying so.
func clipTo(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// cardInfo is what the member panel shows of a role's card.
type cardInfo struct {
	Role     string   `json:"role"`
	Desc     string   `json:"desc,omitempty"`
	Skills   []string `json:"skills,omitempty"`
	Hireable bool     `json:"hireable,omitempty"`
	RoutesTo []string `json:"routesTo,omitempty"`
}

// cards is the cards event: the team's catalog, for the member panel.
func (s *Studio) cards(ctx context.Context) event {
	cs, _ := s.team.Cards(ctx)
	return cardsEvent(cs)
}

// cardsEvent is the cards event of the catalog cs: the whole catalog, so
// a page replaces the cards it had with it.
func cardsEvent(cs []*orchestrator.AgentCard) event {
	ev := event{K: "cards"}
	for _, c := range cs {
		ev.Cards = append(ev.Cards, cardInfo{Role: c.Role(), Desc: c.Description, Skills: c.Skills, Hireable: c.CanBeHired, RoutesTo: c.RoutesTo})
	}
	return ev
}
