package agent

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Guards are a team's guard rails: loop limits, a spend ceiling for the
// whole team and a rate limiter shared by its agents. Set them on the Env
// the team's agents share (Env.Guards): hired agents inherit their hirer's
// Env and orchestrator.Restore gives every recreated agent the one of
// WithEnv, so every agent of the team uses the same values and the same
// counters. An agent without Guards has the default loop limits, no team
// ceiling and no rate limiter. The per-agent spend ceiling is the agent's
// own: llm.AgentUsageLimits.SpendLimit in its config.
//
// A Guards is safe for concurrent use; do not copy one once used. Several
// teams may share one: the team spend is counted per team, and a team's
// count is dropped when its last agent stops (the next agent of that team
// to start recounts it from the team's log).
type Guards struct {
	// MaxRounds is how many times a chain of messages between agents may
	// come back to the same agent without a message from a person in it
	// (default 5; negative: no limit). The message that would take it
	// around once more is not given to the model: the person is told and
	// the turn ends with a warning (ErrLoop).
	MaxRounds int
	// MaxPairMessages is how many messages two agents may exchange in one
	// chain without a message from a person (default 10; negative: no
	// limit).
	MaxPairMessages int
	// TeamSpendLimit is the team's ceiling on model spend in USD, priced
	// with the agents' Env.Prices (0: none). Before each model call the
	// call's worst case is reserved against it (its prompt plus the
	// agent's Model.MaxTokens, else the model's whole default output:
	// gpt-5's 128,000 tokens are $1.02, so give the agents a MaxTokens
	// under a small ceiling); a call that could pass it is not made and
	// the person is told, with the amounts. A restored team starts from
	// what its log says it spent.
	TeamSpendLimit float64
	// RateLimiter, when set, paces every model call of the agents that
	// share it (llm.NewRateLimiter): requests and tokens per minute per
	// provider and model, and a 429's Retry-After pausing all of them.
	// Give several teams the same one to share the provider's limits
	// across the process.
	RateLimiter *llm.RateLimiter
	// Approval marks the tool calls that wait for a person's approval
	// before they run (always, or by a predicate on their arguments), and
	// how long they wait: see tool.Approval.
	Approval *tool.Approval
	// MaxMessagesPerAnswer is how many messages one answer of a model may
	// send (default 50; negative: no limit). The messages past it are not
	// sent: a warning names the limit and the person is told.
	MaxMessagesPerAnswer int
	// MaxMessageBytes bounds the text of one message an answer sends
	// (default 256 KiB; negative: no limit): a longer one is cut at a
	// character boundary and ends with a line saying so; a warning names
	// the limit.
	MaxMessageBytes int
	// MaxHiresPerTurn is how many members an agent may hire in one turn,
	// by the hire tool, a hire command or a message to a role (default
	// 10; negative: no limit). A hire past it is refused: the model gets
	// a retry error naming the limit and a warning is recorded.
	MaxHiresPerTurn int
	// MaxMembers is how many members a team may have for an agent's hire
	// to go through (default 100, counting the whole roster: the person,
	// the tools such as the planning board and the members a program
	// spawned included; negative: no limit). Refused as MaxHiresPerTurn is.
	MaxMembers int

	mu    sync.Mutex
	teams map[uuid.UUID]*teamSpend // per team id, while one of its agents runs
}

// teamSpend is one team's spend ceiling and how many of its agents (in
// this process) use it: the last one to stop removes it, so a Guards
// shared by many teams over a long process holds only the running ones.
type teamSpend struct {
	budget *llm.Budget
	agents int
}

// loopLimits returns the loop limits of g, nil meaning the defaults.
func (g *Guards) loopLimits() (rounds, pair int) {
	rounds, pair = defaultMaxRounds, defaultMaxPairMessages
	if g == nil {
		return rounds, pair
	}
	if g.MaxRounds != 0 {
		rounds = g.MaxRounds
	}
	if g.MaxPairMessages != 0 {
		pair = g.MaxPairMessages
	}
	return rounds, pair
}

// teamBudget returns the spend ceiling of team shared by the agents of g
// (nil for none) and release, which the agent calls once when it stops.
// The first agent of a team to ask (in this process, since the team's
// last agent stopped) makes it, with what the team's log says the team
// spent: its usage events, priced with prices, whoever emitted them (fired
// agents included), so a restored team goes on from there. The last
// agent's release drops it; the next one to start recomputes it from the
// log.
func (g *Guards) teamBudget(ctx context.Context, team *orchestrator.Team, prices *llm.PriceTable) (*llm.Budget, func(), error) {
	if g == nil || g.TeamSpendLimit == 0 {
		return nil, func() {}, nil
	}
	if g.TeamSpendLimit < 0 {
		return nil, nil, fmt.Errorf("agent: Guards.TeamSpendLimit is %g USD: want 0 (none) or a positive ceiling", g.TeamSpendLimit)
	}
	id := team.ID()
	g.mu.Lock()
	defer g.mu.Unlock()
	ts := g.teams[id]
	if ts == nil {
		evs, err := team.Events(ctx, orchestrator.EventFilter{})
		if err != nil {
			return nil, nil, fmt.Errorf("agent: the team's spend so far: %w", err)
		}
		if prices == nil {
			prices = llm.DefaultPriceTable()
		}
		spent := 0.0
		for _, ev := range evs {
			if u, ok := asLLMEvent(ev.Event).(llm.UsageEvent); ok {
				spent += prices.Cost(u.ModelName, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens)
			}
		}
		ts = &teamSpend{budget: llm.NewBudget(g.TeamSpendLimit, spent)}
		if g.teams == nil {
			g.teams = map[uuid.UUID]*teamSpend{}
		}
		g.teams[id] = ts
	}
	ts.agents++
	var once sync.Once
	return ts.budget, func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if ts.agents--; ts.agents == 0 && g.teams[id] == ts {
				delete(g.teams, id)
			}
		})
	}, nil
}

// Defaults of the answer and hire limits of Guards.
const (
	defaultMaxMessagesPerAnswer = 50
	defaultMaxMessageBytes      = 256 << 10
	defaultMaxHiresPerTurn      = 10
	defaultMaxMembers           = 100
)

// answerLimits returns the limits of g on one answer and its hires, nil
// meaning the defaults; 0 is no limit.
func (g *Guards) answerLimits() (messages, bytes, hires, members int) {
	pick := func(v, def int) int {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	if g == nil {
		g = &Guards{}
	}
	return pick(g.MaxMessagesPerAnswer, defaultMaxMessagesPerAnswer), pick(g.MaxMessageBytes, defaultMaxMessageBytes),
		pick(g.MaxHiresPerTurn, defaultMaxHiresPerTurn), pick(g.MaxMembers, defaultMaxMembers)
}

// rateLimiter returns g's rate limiter, nil for none.
func (g *Guards) rateLimiter() *llm.RateLimiter {
	if g == nil {
		return nil
	}
	return g.RateLimiter
}
