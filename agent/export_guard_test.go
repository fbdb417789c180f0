package agent

// Test-only access to loop detection's parts (issue 16).

// LoopIn reports the limit the last hop of chain passes, "" for none.
var LoopIn = loopIn

// ChainOf is the chain of a message as received by self.
var ChainOf = chainOf

// MaxChainHops is what a chain carries with both loop limits off.
const MaxChainHops = maxChainHops

// TeamsHeld is how many teams' spend g holds.
func (g *Guards) TeamsHeld() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.teams)
}
