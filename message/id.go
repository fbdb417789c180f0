package message

import (
	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/internal/ids"
)

// NewID returns a fresh unique id for a message, an agent or a team: unique
// within the process, random-looking across processes (a random per-process
// prefix and a counter), a valid version 4 UUID, and one atomic add to draw.
func NewID() uuid.UUID { return ids.New() }
