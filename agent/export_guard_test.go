package agent

// Test-only access to loop detection's parts (issue 16).

// LoopIn reports the limit the last hop of chain passes, "" for none.
var LoopIn = loopIn

// TeamsHeld is how many teams' spend g holds.
func (g *Guards) TeamsHeld() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.teams)
}
