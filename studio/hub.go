package studio

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// frame is one encoded event on its way to a page.
type frame struct {
	id    uuid.UUID // the record's message id (Nil: a control event)
	state bool      // from a StateChanged record
	data  []byte    // the SSE frame, ready to write
}

// client is one open event stream: a bounded queue the hub fills without
// ever waiting. A client that falls further behind than its queue holds
// is cut off (behind is closed) and told to catch up from its last event.
type client struct {
	ch     chan frame
	behind chan struct{}
	done   bool // cut off or left (under hub.mu)
}

// hub is the studio's team subscriber: it renders each record once and
// hands the frame to every open stream. With no stream open it does
// nothing (the record is not even materialized).
type hub struct {
	n       atomic.Int32 // open streams, read without the lock
	mu      sync.Mutex
	clients map[*client]struct{}
	stopped bool // the team has stopped
	size    int  // per-client queue size
}

var (
	_ orchestrator.RecordSubscriber = (*hub)(nil)
	_ orchestrator.StopSubscriber   = (*hub)(nil)
)

func newHub(size int) *hub {
	return &hub{clients: map[*client]struct{}{}, size: size}
}

// join opens a stream: from now on every record reaches it. stopped says
// whether the team had already stopped.
func (h *hub) join() (c *client, stopped bool) {
	c = &client{ch: make(chan frame, h.size), behind: make(chan struct{})}
	h.mu.Lock()
	h.clients[c] = struct{}{}
	h.n.Add(1)
	stopped = h.stopped
	h.mu.Unlock()
	return c, stopped
}

// leave closes a stream.
func (h *hub) leave(c *client) {
	h.mu.Lock()
	h.drop(c)
	h.mu.Unlock()
}

// drop removes c (under h.mu).
func (h *hub) drop(c *client) {
	if c.done {
		return
	}
	c.done = true
	delete(h.clients, c)
	h.n.Add(-1)
}

// OnRecord renders a record and queues it on every stream. It runs on the
// team's orchestrator goroutine and never waits: a stream whose queue is
// full is cut off and told to catch up.
func (h *hub) OnRecord(r *orchestrator.Record) {
	if h.n.Load() == 0 {
		return
	}
	h.publish(r.Message())
}

// OnMessage receives what is not a record (metadata changes): not shown.
func (h *hub) OnMessage(message.Message) {}

// OnStop tells every stream that the team has stopped.
func (h *hub) OnStop(uuid.UUID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	h.broadcast(control(event{K: "stopped"}))
}

func (h *hub) publish(m message.Message) {
	ev, ok := render(m)
	if !ok {
		return
	}
	f := encode(ev)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.broadcast(f)
}

// broadcast queues f on every stream (under h.mu).
func (h *hub) broadcast(f frame) {
	for c := range h.clients {
		select {
		case c.ch <- f:
		default:
			h.drop(c)
			close(c.behind)
		}
	}
}

// encode makes the SSE frame of ev: its id line (record events) and one
// data line (JSON never holds a raw newline). A board (a state change)
// has no id line: the history a page resumes from (Team.Messages) does not
// list state changes, and every board event carries the whole board.
func encode(ev event) frame {
	data, err := json.Marshal(ev)
	if err != nil { // every field is plain data: not reached
		data, _ = json.Marshal(event{K: "error", Text: "studio: an event could not be encoded: " + err.Error()})
	}
	b := make([]byte, 0, len(data)+64)
	if ev.id != uuid.Nil && !ev.state {
		b = append(b, "id: "...)
		b = append(b, ev.id.String()...)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	return frame{id: ev.id, state: ev.state, data: b}
}

// control encodes an event that is not a record (no SSE id).
func control(ev event) frame {
	ev.id = uuid.Nil
	return encode(ev)
}
