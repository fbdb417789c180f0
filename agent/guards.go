package agent

// Guards are a team's guard rails (issue 16): loop limits, a spend ceiling
// for the whole team and a rate limiter shared by its agents. Set them on
// the Env the team's agents share (Env.Guards): hired agents inherit their
// hirer's Env and orchestrator.Restore gives every recreated agent the one
// of WithEnv, so every agent of the team uses the same values and the
// same counters. An agent without Guards has the default loop limits, no
// team ceiling and no rate limiter. The per-agent spend ceiling is the
// agent's own: llm.AgentUsageLimits.SpendLimit in its config.
//
// A Guards is safe for concurrent use; do not copy one once used. Several
// teams may share one: the team spend is counted per team.
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
