package actor

import (
	"weak"

	"github.com/akgentic/akgentic-go/message"
)

// NewCollectableAddressForTest returns a live address over a cell that was
// never started and that nothing else references, so a GC collects it
// without it ever being stopped.
func NewCollectableAddressForTest() *message.Address {
	c := &cell{life: &lifecycle{done: make(chan struct{})}}
	h := &handle{w: weak.Make(c), life: c.life}
	addr := addrs.NewLive(message.Identity{AgentID: message.NewID(), Name: "ghost", Role: "Ghost"}, h)
	h.addr = addr
	return addr
}

// CollectedForTest reports whether the address's cell was collected.
func CollectedForTest(a *message.Address) bool {
	return addrs.HandleOf(a).(*handle).w.Value() == nil
}

// QueuedForTest returns how many entries wait in the shared queue of the
// actor at a (not yet pulled into its private batch).
func QueuedForTest(a *message.Address) int {
	h, ok := addrs.HandleOf(a).(*handle)
	if !ok {
		return 0
	}
	c := h.cell()
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.q)
}

// IsLiveForTest reports whether a is a live address (one that delivers to
// an actor or an endpoint), as opposed to a snapshot or a stopped record.
func IsLiveForTest(a *message.Address) bool { return addrs.HandleOf(a) != nil }

// The kind registry's lookups are the restore's (reached through
// internal/link); the tests call them here.
var (
	NewKindForTest      = newKind
	KindOfForTest       = kindOf
	DecodeConfigForTest = decodeConfig
)

// QueueCapsForTest returns the capacities of the shared queue and of the
// spare buffer the actor at a keeps while parked; call it when the actor
// is idle.
func QueueCapsForTest(a *message.Address) (queue, idle bool, spare int) {
	h, ok := addrs.HandleOf(a).(*handle)
	if !ok {
		return false, false, 0
	}
	c := h.cell()
	if c == nil {
		return false, false, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return cap(c.q) <= maxIdleQueue, c.idle, cap(c.pending)
}
