package cards

import (
	"sync"

	"github.com/akgentic/akgentic-go/internal/link"
	"github.com/akgentic/akgentic-go/orchestrator"
)

var names = link.Names[*orchestrator.Team]()

// Versioned keeps one value read from a team and the team's
// roster-and-catalog version it was read at (link.TeamNames.Version: it
// moves when a member's Start or Stop record is appended to the team's
// ledger and when cards are registered). While the version holds, the
// value is what reading it again would give, so it is not read again: a
// turn whose team did not change asks the orchestrator nothing. A team not
// running in this process has no version and is read every time. The zero
// Versioned is empty and ready; it is safe for concurrent use.
type Versioned[T any] struct {
	mu      sync.Mutex
	ok      bool
	version uint64
	v       T
}

// Get returns the value kept at team's current version, else what read
// returns, kept when read succeeds. read must make its queries after Get
// read the version (it does: it is called after): a change during them
// moves the version, so the next Get reads again.
func (c *Versioned[T]) Get(team *orchestrator.Team, read func() (T, error)) (T, error) {
	version, known := names.Version(team)
	if known {
		c.mu.Lock()
		v, ok := c.v, c.ok && c.version == version
		c.mu.Unlock()
		if ok {
			return v, nil
		}
	}
	v, err := read()
	if err != nil || !known {
		return v, err
	}
	c.mu.Lock()
	c.ok, c.version, c.v = true, version, v
	c.mu.Unlock()
	return v, nil
}
