package studio

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// frame is one encoded event on its way to a page.
type frame struct {
	id    uuid.UUID // the record's message id (Nil: a control event)
	state bool      // from a StateChanged record
	last  bool      // the team has stopped: the stream ends after this frame
	data  []byte    // the SSE frame, ready to write
}

// client is one open event stream: a bounded queue the hub fills without
// ever waiting. A client that falls further behind than its queue holds
// is cut off (behind is closed) and told to catch up from its last event.
//
// The answers being streamed do not go through the queue: writing marks
// the agents whose answer grew since the stream last wrote it (one mark
// per agent, however many deltas came), and wake tells the stream so.
type client struct {
	ch      chan frame
	behind  chan struct{}
	done    bool               // cut off or left (under hub.mu)
	writing map[uuid.UUID]bool // agents whose answer grew (under hub.mu)
	wake    chan struct{}      // capacity 1: writing has marks
}

// hub is the studio's team subscriber: it renders each record once and
// hands the frame to every open stream. With no stream open it does
// nothing (the record is not even materialized).
type hub struct {
	n       atomic.Int32 // open streams, read without the lock
	mu      sync.Mutex
	clients map[*client]struct{}
	answers map[uuid.UUID]*answer // the answers being streamed, by agent
	gen     uint64                // the last answer's number
	stopped bool                  // the team has stopped
	size    int                   // per-client queue size
}

// answer is an agent's answer being streamed (its TextDeltaEvents).
type answer struct {
	name string
	gen  uint64 // numbers the answers: a new one (Seq 0) gets the next
	llm.StreamedAnswer
}

// writing is a snapshot of an answer being streamed, for one page.
type writing struct {
	who       uuid.UUID
	gen       uint64
	name, raw string
}

var (
	_ orchestrator.RecordSubscriber = (*hub)(nil)
	_ orchestrator.StopSubscriber   = (*hub)(nil)
	_ orchestrator.LossySubscriber  = (*hub)(nil)
)

func newHub(size int) *hub {
	return &hub{clients: map[*client]struct{}{}, answers: map[uuid.UUID]*answer{}, size: size}
}

// join opens a stream: from now on every record reaches it. stopped says
// whether the team had already stopped.
func (h *hub) join() (c *client, stopped bool) {
	c = &client{ch: make(chan frame, h.size), behind: make(chan struct{}), writing: map[uuid.UUID]bool{}, wake: make(chan struct{}, 1)}
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
	if len(h.clients) == 0 { // nothing is kept while no page is open
		clear(h.answers)
	}
}

// OnRecord renders a record and queues it on every stream. It runs on the
// studio's own goroutine (the team's queue for it) and never waits: a stream whose queue is
// full is cut off and told to catch up. A streamed answer's delta is not
// queued: it marks the answer as grown on every stream (see client).
func (h *hub) OnRecord(r *orchestrator.Record) {
	if h.n.Load() == 0 {
		return
	}
	h.add(r.Message())
}

// add renders a record and queues it on every stream (see OnRecord).
func (h *hub) add(m message.Message) {
	if h.n.Load() == 0 {
		return
	}
	if ev, ok := m.(*message.EventMessage); ok {
		if d, ok := message.EventAs[llm.TextDeltaEvent](ev); ok {
			h.delta(ev.Sender, d)
			return
		}
	}
	h.publish(m)
}

// delta adds a piece of an answer being streamed, and marks it on every
// stream. The text is decoded by each stream, not here: the team's
// goroutine only appends.
func (h *hub) delta(who *message.Address, d llm.TextDeltaEvent) {
	if !shown(who) {
		return
	}
	id := who.AgentID()
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.answers[id]
	if a == nil {
		a = &answer{name: label(who.Name())}
		h.answers[id] = a
	}
	if !a.Add(d) { // its beginning was missed (no page was open)
		return
	}
	if d.Seq == 0 {
		h.gen++
		a.gen = h.gen
	}
	for c := range h.clients {
		c.writing[id] = true
		select {
		case c.wake <- struct{}{}:
		default: // already told
		}
	}
}

// takeWriting returns the answers that grew since c last took them, and
// how many records c had queued then: the stream writes those records
// first, so an answer is never shown after the record that ended it.
func (h *hub) takeWriting(c *client) (queued int, ws []writing) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range c.writing {
		if a := h.answers[id]; a != nil {
			ws = append(ws, writing{who: id, gen: a.gen, name: a.name, raw: a.Raw()})
		}
	}
	clear(c.writing)
	return len(c.ch), ws
}

// ended forgets the answer the record m ends, if any (under h.mu): the
// agent sent its messages or called a tool (the answer is whole), or its
// turn ended, or it stopped. The page removes its bubble on the same
// records.
func (h *hub) ended(m message.Message) {
	var who *message.Address
	switch t := m.(type) {
	case *message.SentMessage, *message.ProcessedMessage, *message.HandledMessage, *message.StopMessage:
		who = m.Envelope().Sender
	case *message.EventMessage:
		if _, ok := message.EventAs[llm.ToolCallEvent](t); ok {
			who = t.Sender
		}
	}
	if who == nil {
		return
	}
	id := who.AgentID()
	if _, ok := h.answers[id]; !ok {
		return
	}
	delete(h.answers, id)
	for c := range h.clients {
		delete(c.writing, id)
	}
}

// OnMissed is told that the team dropped records for the studio (its
// queue was full: the studio is a lossy subscriber, it never slows the
// team). Every open stream lacks them: each is cut off and told to catch
// up from its last event, as a stream that fell behind is.
func (h *hub) OnMissed(orchestrator.Missed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		h.drop(c)
		close(c.behind)
	}
}

// OnMessage receives what is not a record: a catalog change
// (orchestrator.CatalogChanged, as Team.Register and Restore publish it)
// is pushed to every open page as a cards event; metadata changes are not
// shown.
func (h *hub) OnMessage(m message.Message) {
	if cc, ok := m.(*orchestrator.CatalogChanged); ok {
		h.catalog(cc.Cards)
	}
}

// catalog tells every open stream the team's catalog cs, changed after
// they began: the member panel shows the new cards.
func (h *hub) catalog(cs []*orchestrator.AgentCard) {
	if h.n.Load() == 0 {
		return
	}
	f := control(cardsEvent(cs))
	h.mu.Lock()
	defer h.mu.Unlock()
	h.broadcast(f)
}

// OnStop tells every stream that the team has stopped (each ends after
// writing it).
func (h *hub) OnStop(uuid.UUID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	h.broadcast(stoppedFrame())
}

// person tells every open stream who the team's person is, learnt after
// they began (a Mirror's page opened before its person's record came):
// the page can speak as it from then on.
func (h *hub) person(who *message.Address) {
	if h.n.Load() == 0 {
		return
	}
	f := control(event{K: "person", Who: idOf(who)})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.broadcast(f)
}

// stoppedFrame tells a page that the team has stopped: nothing more will
// come, so the page stops reconnecting, and the stream ends after it.
func stoppedFrame() frame {
	f := control(event{K: "stopped"})
	f.last = true
	return f
}

func (h *hub) publish(m message.Message) {
	ev, ok := render(m)
	var f frame
	if ok {
		f = encode(ev)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ended(m)
	if ok {
		h.broadcast(f)
	}
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

// writingFrame encodes the text so far of an answer being streamed: a
// "writing" event of its own SSE type, live only. It has no id (a page
// resuming from its last event is never sent it again: the answer's
// records are), and it is not in the history.
func writingFrame(w writing, text string) frame {
	f := control(event{K: "writing", Who: w.who.String(), Name: w.name, Text: clipStart(text)})
	f.data = append([]byte("event: writing\n"), f.data...)
	return f
}

// control encodes an event that is not a record (no SSE id).
func control(ev event) frame {
	ev.id = uuid.Nil
	return encode(ev)
}
