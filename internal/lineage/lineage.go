// Package lineage follows, through a team's log, the work a message
// starts: the protocol endpoints (an A2A task, an AG-UI run) send the
// team's person's message with an id of their own, and every message
// sent while a member handles one of the work's messages belongs to the
// same work (its parent is one of the work's), as do the events and
// errors of those turns. The work is over when the last of its messages
// sent to a member has been handled. The members know nothing of it.
//
// A Tree is not safe for concurrent use: its user holds its own lock.
package lineage

import (
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/message"
)

// Tree maps the messages of a team to the work (a T) they belong to.
type Tree[T comparable] struct {
	owner map[uuid.UUID]T
	work  map[T]*work
}

// work is what one work's messages did so far.
type work struct {
	ids     []uuid.UUID
	running map[uuid.UUID]*message.Address // sent to members, not yet handled: id → recipient
	started map[uuid.UUID]bool             // the running ones whose turn has begun
	lastErr string
}

// New returns an empty tree.
func New[T comparable]() *Tree[T] {
	return &Tree[T]{owner: map[uuid.UUID]T{}, work: map[T]*work{}}
}

// Own records that message id belongs to v (the first message of v, or
// the next, given an id before it is sent).
func (t *Tree[T]) Own(v T, id uuid.UUID) {
	w := t.work[v]
	if w == nil {
		w = &work{running: map[uuid.UUID]*message.Address{}, started: map[uuid.UUID]bool{}}
		t.work[v] = w
	}
	t.owner[id] = v
	w.ids = append(w.ids, id)
}

// Adopt makes message id part of v, running at member until it is
// handled: a message sent outside v's work whose turn is v's (an agent's
// wake-up), or one of v's about to be sent (so that a message of v
// handled before it is recorded as sent does not leave v quiet).
func (t *Tree[T]) Adopt(v T, id uuid.UUID, member *message.Address) {
	t.Own(v, id)
	t.work[v].running[id] = member
}

// Of returns the work message id belongs to.
func (t *Tree[T]) Of(id uuid.UUID) (T, bool) {
	v, ok := t.owner[id]
	return v, ok
}

// Sent follows a sent message: one whose own id or parent belongs to a
// work belongs to it too, and, when it goes to a member other than the
// person, runs until that member has handled it. It returns the work.
func (t *Tree[T]) Sent(sm *message.SentMessage, person uuid.UUID) (T, bool) {
	var zero T
	if sm.Message == nil || sm.Recipient == nil {
		return zero, false
	}
	b := sm.Message.Envelope()
	v, ok := t.owner[b.ID]
	if !ok && b.ParentID.Valid {
		if v, ok = t.owner[b.ParentID.UUID]; ok {
			t.Own(v, b.ID)
		}
	}
	if !ok {
		return zero, false
	}
	if sm.Recipient.AgentID() != person {
		t.work[v].running[b.ID] = sm.Recipient
	}
	return v, true
}

// Handled follows the end of a member's handling of message id: quiet
// reports that it was the last message of its work still running.
func (t *Tree[T]) Handled(id uuid.UUID) (v T, quiet bool) {
	v, ok := t.owner[id]
	if !ok {
		return v, false
	}
	w := t.work[v]
	if _, ok := w.running[id]; !ok {
		return v, false
	}
	delete(w.running, id)
	delete(w.started, id)
	return v, len(w.running) == 0
}

// Received follows the start of a member's turn on message id (its
// ReceivedMessage record): from then on a cancel sent to the member
// reaches that turn. It returns the work and the member when id is one of
// a work's running messages whose turn had not begun.
func (t *Tree[T]) Received(id uuid.UUID) (v T, member *message.Address, ok bool) {
	v, ok = t.owner[id]
	if !ok {
		return v, nil, false
	}
	w := t.work[v]
	member, running := w.running[id]
	if !running || w.started[id] {
		return v, nil, false
	}
	w.started[id] = true
	return v, member, true
}

// Failure keeps the error or warning of a turn of a work (LastErr).
func (t *Tree[T]) Failure(n message.NotificationMessage) {
	if n.CurrentMessage == nil {
		return
	}
	if v, ok := t.owner[n.CurrentMessage.Envelope().ID]; ok {
		t.work[v].lastErr = n.Content
	}
}

// LastErr is the last error or warning of a turn of v, "" for none.
func (t *Tree[T]) LastErr(v T) string {
	if w := t.work[v]; w != nil {
		return w.lastErr
	}
	return ""
}

// Event returns the work an event belongs to: the one of the message its
// turn was handling.
func (t *Tree[T]) Event(ev *message.EventMessage) (T, bool) {
	var zero T
	if !ev.ParentID.Valid || ev.Sender == nil {
		return zero, false
	}
	v, ok := t.owner[ev.ParentID.UUID]
	return v, ok
}

// Busy returns the members running a turn on a message of v, each once:
// their snapshot addresses, as the team's log has them. A cancel sent to
// them now reaches those turns. A message of v still queued at its member
// is not counted: Received reports it when its turn begins.
func (t *Tree[T]) Busy(v T) []*message.Address {
	w := t.work[v]
	if w == nil {
		return nil
	}
	var busy []*message.Address
	seen := map[uuid.UUID]bool{}
	for id, to := range w.running {
		if w.started[id] && !seen[to.AgentID()] {
			seen[to.AgentID()] = true
			busy = append(busy, to)
		}
	}
	return busy
}

// Queued calls fn with each message of v sent to a member whose turn on
// it has not begun, and the member.
func (t *Tree[T]) Queued(v T, fn func(id uuid.UUID, member *message.Address)) {
	w := t.work[v]
	if w == nil {
		return
	}
	for id, to := range w.running {
		if !w.started[id] {
			fn(id, to)
		}
	}
}

// Forget drops v and its messages.
func (t *Tree[T]) Forget(v T) {
	w := t.work[v]
	if w == nil {
		return
	}
	for _, id := range w.ids {
		delete(t.owner, id)
	}
	delete(t.work, v)
}

// Each calls fn with every work the tree holds.
func (t *Tree[T]) Each(fn func(v T)) {
	for v := range t.work {
		fn(v)
	}
}

// Check validates the two members an endpoint's work goes between: the
// team's person (a user proxy), whose messages start it, and the entry
// member they go to, both of team. who names the endpoint in the error.
func Check(who string, team uuid.UUID, person, entry *message.Address) error {
	switch {
	case person == nil:
		return fmt.Errorf("%s: Options.Person is nil: name the team's person the work comes from", who)
	case entry == nil:
		return fmt.Errorf("%s: Options.Entry is nil: name the member the work goes to", who)
	case person.TeamID() != team, entry.TeamID() != team:
		return fmt.Errorf("%s: Options.Person (%s) and Options.Entry (%s) must be members of team %s", who, person.Name(), entry.Name(), team)
	case !person.IsUserProxy():
		return fmt.Errorf("%s: Options.Person %s is not a user proxy (an actor embedding orchestrator.UserProxy, such as agent.HumanProxy)", who, person.Name())
	case entry.AgentID() == person.AgentID():
		return fmt.Errorf("%s: Options.Entry is the person %s: name the member the work goes to", who, entry.Name())
	}
	return nil
}

// IsCancel reports whether a person's text is "/cancel [reason]", which
// agent.Say and agent.Answer send as a message.CancelMessage instead of the
// message given (so not with the id the work owns): it starts no work.
func IsCancel(text string) bool {
	rest, ok := strings.CutPrefix(strings.TrimSpace(text), "/cancel")
	return ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n')
}
