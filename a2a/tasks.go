package a2a

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/internal/lineage"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// A task follows the team through its log. The message that starts a task
// (sent from the person to the entry member) has an id chosen before it is
// sent; every message sent while a member handles a message of the task
// belongs to the task too (its parent is one of the task's), and so do the
// events and errors of those turns. So the store, a team subscriber, sees
// which task each record is about without the members knowing of tasks:
//
//   - the entry member receiving the first message: working;
//   - a request or an instruction of the task to the person: a question,
//     input-required (the client's next message of the task answers it);
//     an approval request is one, with its details in a data part (the
//     answer's text, or a structured decision in a data part, decides it;
//     its deadline passing denies it, and the task works on). Questions
//     asked while one waits (the calls of one answer each need an
//     approval) wait their turn: each answer shows the next;
//   - a response of the entry member to the person: completed, its text
//     the task's artifact;
//   - the last message of the task handled with no answer to the person:
//     failed with the error or warning that ended a turn of the task, or
//     completed with the last message the person got;
//   - CancelTask: canceled, and a cancel to every member running a turn
//     on a message of the task; a message of the task still queued at
//     its member gets one when its turn begins (its ReceivedMessage), so
//     no turn of a canceled task runs on.
//
// Streamed answers (the entry member's llm.TextDeltaEvents during the
// task) stream as chunks of the task's artifact.

// task is one A2A task and what the store knows of its messages.
type task struct {
	id, contextID string
	status        taskStatus
	history       []wireMessage
	artifacts     []artifact
	updated       time.Time

	asked    []question         // the open questions to the person, oldest first: the first is the status's
	lastNote *wireMessage       // the last message the person got that did not end the task
	usage    llm.UsageEvent     // the model usage of the task's turns, summed
	stream   llm.StreamedAnswer // the entry member's answer being streamed
	streamed string             // its text sent so far
	watchers map[*watcher]struct{}
}

// question is a question of a task to the person: the team's message and
// the status message that shows it.
type question struct {
	m    message.Message
	wire *wireMessage
}

// watcher is one open stream of a task's events. The store closes ch when
// the task ends (or, with interrupt, waits for its client) and when the
// stream falls more than its buffer behind (the client subscribes again).
type watcher struct {
	ch        chan streamResponse
	interrupt bool // the stream of a send: it also ends when the task waits for input
}

// watcherBuffer is how many events a stream may fall behind.
const watcherBuffer = 256

// store holds the server's tasks and follows the team for them. Its
// OnRecord runs on the subscriber goroutine the team gives it and never
// waits. It is a lossless subscriber: a task's state is built from every
// record of its work, so none may be dropped for it.
type store struct {
	mu     sync.Mutex
	tasks  map[string]*task
	order  []*task // oldest first
	tree   *lineage.Tree[*task]
	person uuid.UUID // the person's agent id
	entry  uuid.UUID // the entry member's agent id
	max    int       // how many tasks are kept
	now    func() time.Time

	// queued holds the messages of canceled tasks still waiting in their
	// member's mailbox; recancel the turns on them that began since, whose
	// cancel kick tells the server's goroutine to send (the hook never
	// waits).
	queued   map[uuid.UUID]turn
	recancel []turn
	kick     chan struct{}
}

var (
	_ orchestrator.RecordSubscriber      = (*store)(nil)
	_ orchestrator.StopSubscriber        = (*store)(nil)
	_ orchestrator.StopRequestSubscriber = (*store)(nil)
)

func newStore(person, entry uuid.UUID, max int) *store {
	return &store{tasks: map[string]*task{}, tree: lineage.New[*task](), person: person, entry: entry, max: max, now: time.Now, queued: map[uuid.UUID]turn{}, kick: make(chan struct{}, 1)}
}

// errTooManyTasks is the refusal of a new task while the store is full of
// tasks still under way.
var errTooManyTasks = rpcErr(codeInternal, "too many tasks under way: try again when one has ended")

// create makes a task for a client's first message, whose id will be
// mid, sent to entry: the task owns it from now on, running at entry
// (a cancel that comes before the team's log says the message was sent
// still finds it). The message is the task's history.
func (s *store) create(contextID string, first wireMessage, mid uuid.UUID, entry *message.Address) (*task, *rpcError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.order) >= s.max && !s.evict() {
		return nil, errTooManyTasks
	}
	if contextID == "" {
		contextID = uuid.NewString()
	}
	t := &task{id: uuid.NewString(), contextID: contextID, watchers: map[*watcher]struct{}{}}
	first.TaskID, first.ContextID = t.id, contextID
	t.history = append(t.history, first)
	t.status = taskStatus{State: stateSubmitted, Timestamp: stamp(s.now())}
	t.updated = s.now()
	s.tasks[t.id] = t
	s.order = append(s.order, t)
	s.tree.Adopt(t, mid, entry)
	return t, nil
}

// evict forgets the oldest task that has ended; false when none has.
func (s *store) evict() bool {
	for i, t := range s.order {
		if terminal(t.status.State) {
			s.forget(i)
			return true
		}
	}
	return false
}

// forget removes order[i] and everything it owns.
func (s *store) forget(i int) {
	t := s.order[i]
	s.order = slices.Delete(s.order, i, i+1)
	delete(s.tasks, t.id)
	s.tree.Forget(t)
}

// drop forgets a task whose first message could not be sent.
func (s *store) drop(t *task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.order, t); i >= 0 {
		s.forget(i)
	}
}

// get returns the task with id, nil when there is none.
func (s *store) get(id string) *task {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tasks[id]
}

// continuing takes a client's next message of t (an answer to its
// question, or more input while it works): the message that will carry it
// gets id mid and is owned by t. It returns the question to answer, nil
// when none is pending, or why the task takes no more messages. The task
// works on, or shows its next question. The message goes to the asker of
// the question, else to entry.
func (s *store) continuing(t *task, contextID string, next wireMessage, mid uuid.UUID, entry *message.Address) (message.Message, *rpcError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if terminal(t.status.State) {
		return nil, rpcErr(codeUnsupported, "task %s is %s: it takes no more messages (send a message without taskId to start a new task)", t.id, state03(t.status.State))
	}
	if contextID != "" && contextID != t.contextID {
		return nil, rpcErr(codeInvalidParams, "message.contextId %q is not the context of task %s (%q)", contextID, t.id, t.contextID)
	}
	var q message.Message
	to := entry
	if len(t.asked) > 0 {
		q = t.asked[0].m
		t.asked = t.asked[1:]
		to = q.Envelope().Sender
	}
	next.TaskID, next.ContextID = t.id, t.contextID
	t.history = append(t.history, next)
	s.tree.Adopt(t, mid, to)
	s.next(t)
	return q, nil
}

// next shows t's first open question, or sets it working when none is
// left. The lock is held.
func (s *store) next(t *task) {
	if len(t.asked) == 0 {
		s.setStatus(t, taskStatus{State: stateWorking}, nil)
		return
	}
	s.setStatus(t, taskStatus{State: stateInputRequired}, t.asked[0].wire)
}

// cancel marks t canceled and returns the members handling its messages
// (each gets a cancel) and the approval requests it had not decided
// (each is denied), or why it cannot be canceled.
func (s *store) cancel(t *task) ([]*message.Address, []message.Message, *rpcError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if terminal(t.status.State) {
		return nil, nil, rpcErr(codeNotCancelable, "task %s is %s: it cannot be canceled", t.id, state03(t.status.State))
	}
	busy := s.tree.Busy(t)
	s.tree.Queued(t, func(id uuid.UUID, member *message.Address) { s.queued[id] = turn{task: t.id, member: member} })
	var approvals []message.Message
	for _, q := range t.asked {
		if am, ok := q.m.(*agent.AgentMessage); ok && am.Approval != nil {
			approvals = append(approvals, q.m)
		}
	}
	t.asked = nil
	s.setStatus(t, taskStatus{State: stateCanceled}, nil)
	return busy, approvals, nil
}

// snapshot returns a copy of t for a client, with at most history messages
// of its history (nil: all) and its artifacts unless noArtifacts.
func (s *store) snapshot(t *task, history *int, noArtifacts bool) *wireTask {
	s.mu.Lock()
	defer s.mu.Unlock()
	return t.wire(history, noArtifacts)
}

// wire is t as the protocol writes it; the store's lock is held.
func (t *task) wire(history *int, noArtifacts bool) *wireTask {
	w := &wireTask{ID: t.id, ContextID: t.contextID, Status: t.status}
	if u := t.usage; u.Requests > 0 {
		w.Metadata = map[string]any{"usage": map[string]any{"inputTokens": u.InputTokens, "outputTokens": u.OutputTokens, "cost": u.Cost, "requests": u.Requests}}
	}
	h := t.history
	if history != nil && *history >= 0 && *history < len(h) {
		h = h[len(h)-*history:]
	}
	w.History = slices.Clone(h)
	if !noArtifacts {
		w.Artifacts = slices.Clone(t.artifacts)
	}
	return w
}

// watch opens a stream of t's events, first the task as it is now; nil
// when t has ended (and, for a send's stream, when it waits for input).
func (s *store) watch(t *task, interrupt bool) (*watcher, *wireTask) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := t.status.State
	if terminal(st) || (interrupt && interrupted(st)) {
		return nil, t.wire(nil, false)
	}
	w := &watcher{ch: make(chan streamResponse, watcherBuffer), interrupt: interrupt}
	t.watchers[w] = struct{}{}
	return w, t.wire(nil, false)
}

// unwatch closes a stream its client left.
func (s *store) unwatch(t *task, w *watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := t.watchers[w]; ok {
		delete(t.watchers, w)
		close(w.ch)
	}
}

// list returns the tasks that match, most recently updated first, from
// offset on: a page and the total.
func (s *store) list(contextID, state string, offset, size int, history *int, artifacts bool) ([]wireTask, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var match []*task
	for _, t := range s.order {
		if (contextID == "" || t.contextID == contextID) && (state == "" || t.status.State == state) {
			match = append(match, t)
		}
	}
	slices.SortStableFunc(match, func(a, b *task) int { return b.updated.Compare(a.updated) })
	total := len(match)
	if offset > total {
		offset = total
	}
	match = match[offset:min(total, offset+size)]
	out := make([]wireTask, len(match))
	for i, t := range match {
		out[i] = *t.wire(history, !artifacts)
	}
	return out, total
}

// publish sends e to t's streams; the lock is held. A stream that fell
// behind is closed (its client subscribes again and gets the task).
func (s *store) publish(t *task, e streamResponse) {
	for w := range t.watchers {
		select {
		case w.ch <- e:
		default:
			delete(t.watchers, w)
			close(w.ch)
		}
	}
}

// setStatus changes t's status (timestamp now), adds msg to its history,
// and tells its streams; streams end at the end of the task, and a send's
// stream when it waits for input. The lock is held.
func (s *store) setStatus(t *task, st taskStatus, msg *wireMessage) {
	if msg != nil {
		msg.TaskID, msg.ContextID = t.id, t.contextID
		t.history = append(t.history, *msg)
		st.Message = msg
	}
	t.updated = s.now()
	st.Timestamp = stamp(t.updated)
	t.status = st
	up := &statusUpdate{TaskID: t.id, ContextID: t.contextID, Status: st}
	if terminal(st.State) || interrupted(st.State) {
		up.Metadata = t.wire(new(int), true).Metadata // the usage so far
	}
	s.publish(t, streamResponse{StatusUpdate: up})
	for w := range t.watchers {
		if terminal(st.State) || (w.interrupt && interrupted(st.State)) {
			delete(t.watchers, w)
			close(w.ch)
		}
	}
	if terminal(st.State) {
		s.tree.Forget(t) // nothing of the team changes an ended task: its messages are not followed further
	}
}

// fail ends t as failed with why (a message the team could not take).
func (s *store) fail(t *task, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !terminal(t.status.State) {
		s.setStatus(t, taskStatus{State: stateFailed}, &wireMessage{MessageID: uuid.NewString(), Role: roleAgent, Parts: []part{textPart(why)}})
	}
}

// OnStopRequest fails the tasks under way: the team is stopping (its
// members' turns end without answering).
func (s *store) OnStopRequest(team uuid.UUID) { s.OnStop(team) }

// OnStop fails the tasks under way: the team has stopped.
func (s *store) OnStop(uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.queued)
	for _, t := range s.order {
		if !terminal(t.status.State) {
			s.setStatus(t, taskStatus{State: stateFailed}, &wireMessage{MessageID: uuid.NewString(), Role: roleAgent, Parts: []part{textPart("the team stopped")}})
		}
	}
}

// OnMessage is for what is not a record (metadata changes): nothing.
func (s *store) OnMessage(message.Message) {}

// OnRecord follows a record of the team for the task it is about.
func (s *store) OnRecord(r *orchestrator.Record) {
	switch r.Type() {
	case "SentMessage", "ReceivedMessage", "ProcessedMessage", "HandledMessage", "ErrorMessage", "WarningMessage", "EventMessage":
	default:
		return
	}
	m := r.Message()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch m := m.(type) {
	case *message.SentMessage:
		s.sent(m)
	case *message.ReceivedMessage:
		s.received(m.MessageID)
	case *message.ProcessedMessage:
		s.handled(m.MessageID)
	case *message.HandledMessage:
		s.handled(m.MessageID)
	case *message.ErrorMessage:
		s.tree.Failure(m.NotificationMessage)
	case *message.WarningMessage:
		s.tree.Failure(m.NotificationMessage)
	case *message.EventMessage:
		s.event(m)
	}
}

// sent follows a message sent in the team: one of a task's to the person
// may end the task or ask its client.
func (s *store) sent(sm *message.SentMessage) {
	t, ok := s.tree.Sent(sm, s.person)
	if !ok || terminal(t.status.State) || sm.Recipient.AgentID() != s.person {
		return
	}
	b := sm.Message.Envelope()
	am, ok := sm.Message.(*agent.AgentMessage)
	if !ok || b.Sender == nil || b.Sender.AgentID() == s.person {
		return
	}
	msg := &wireMessage{MessageID: b.ID.String(), Role: roleAgent, Parts: []part{textPart(am.Content)}}
	if ap := am.Approval; ap != nil { // its details for a program, beside the text for a person
		d, _ := json.Marshal(lineage.NewApproval(b.Sender.Name(), ap.Tool, ap.CallID, ap.Arguments, ap.Deadline))
		msg.Parts = append(msg.Parts, part{Data: d, MediaType: "application/json"})
	}
	switch {
	case am.Type == agent.Request || am.Type == agent.Instruction:
		t.asked = append(t.asked, question{m: sm.Message, wire: msg})
		if len(t.asked) == 1 {
			s.setStatus(t, taskStatus{State: stateInputRequired}, msg)
		}
	case am.Type == agent.Response && b.Sender.AgentID() == s.entry:
		s.answer(t, am.Content)
		s.setStatus(t, taskStatus{State: stateCompleted}, msg)
	default:
		t.lastNote = msg
		s.setStatus(t, taskStatus{State: stateWorking}, msg)
	}
}

// received follows the beginning of a member's turn on message id: the
// task's first works it; one of a canceled task is canceled.
func (s *store) received(id uuid.UUID) {
	if tn, ok := s.queued[id]; ok {
		delete(s.queued, id)
		s.recancel = append(s.recancel, tn)
		select {
		case s.kick <- struct{}{}:
		default: // already told: it takes the whole list
		}
		return
	}
	if t, _, ok := s.tree.Received(id); ok && t.status.State == stateSubmitted {
		s.setStatus(t, taskStatus{State: stateWorking}, nil)
	}
}

// turn is a member's turn on a message of a task.
type turn struct {
	task   string
	member *message.Address
}

// takeRecancel returns the turns to cancel and forgets them.
func (s *store) takeRecancel() []turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recancel
	s.recancel = nil
	return r
}

// answer makes text the task's artifact and sends it whole to its
// streams (replacing the chunks streamed before).
func (s *store) answer(t *task, text string) {
	a := artifact{ArtifactID: t.id + "-answer", Name: "answer", Parts: []part{textPart(text)}}
	t.artifacts = []artifact{a}
	s.publish(t, streamResponse{ArtifactUpdate: &artifactUpdate{TaskID: t.id, ContextID: t.contextID, Artifact: a, LastChunk: true}})
}

// handled follows the end of a member's handling of a message: the task's
// last one ends the task if nothing else did.
func (s *store) handled(id uuid.UUID) {
	t, quiet := s.tree.Handled(id)
	if !quiet || terminal(t.status.State) || interrupted(t.status.State) {
		return
	}
	switch {
	case s.tree.LastErr(t) != "":
		s.setStatus(t, taskStatus{State: stateFailed}, &wireMessage{MessageID: uuid.NewString(), Role: roleAgent, Parts: []part{textPart(s.tree.LastErr(t))}})
	case t.lastNote != nil:
		t.artifacts = []artifact{{ArtifactID: t.id + "-answer", Name: "answer", Parts: t.lastNote.Parts}}
		s.setStatus(t, taskStatus{State: stateCompleted, Message: t.lastNote}, nil)
	default:
		s.setStatus(t, taskStatus{State: stateFailed}, &wireMessage{MessageID: uuid.NewString(), Role: roleAgent, Parts: []part{textPart("the team finished its work on the task without answering")}})
	}
}

// event follows an event of a turn of a task: a model's usage is added to
// the task's (its metadata's "usage"), the entry member's answer streams.
func (s *store) event(ev *message.EventMessage) {
	t, ok := s.tree.Event(ev)
	if !ok {
		if d, isDenial := message.EventAs[llm.ApprovalDeniedEvent](ev); isDenial && d.Expired {
			s.expired(ev, d.ToolCallID)
		}
		return
	}
	if terminal(t.status.State) {
		return
	}
	if u, ok := message.EventAs[llm.UsageEvent](ev); ok { // any member's, for the task's metadata
		t.usage.InputTokens += u.InputTokens
		t.usage.OutputTokens += u.OutputTokens
		t.usage.Cost += u.Cost
		t.usage.Requests += max(u.Requests, 1)
		return
	}
	if ev.Sender.AgentID() != s.entry {
		return
	}
	d, ok := message.EventAs[llm.TextDeltaEvent](ev)
	if !ok || !t.stream.Add(d) {
		return
	}
	text := llm.StreamedText(t.stream.Raw())
	if text == t.streamed || text == "" {
		return
	}
	up := artifactUpdate{TaskID: t.id, ContextID: t.contextID, Artifact: artifact{ArtifactID: t.id + "-answer", Name: "answer"}}
	if rest, ok := strings.CutPrefix(text, t.streamed); ok && t.streamed != "" {
		up.Append = true
		up.Artifact.Parts = []part{textPart(rest)}
	} else {
		up.Artifact.Parts = []part{textPart(text)}
	}
	t.streamed = text
	s.publish(t, streamResponse{ArtifactUpdate: &up})
}

// expired follows the denial of a call whose approval deadline passed
// (the agent's turn on its own wake-up, ev's): the task that asked drops
// the question and owns the turn, so what the agent does next (its answer
// to the person) is the task's. The lock is held.
func (s *store) expired(ev *message.EventMessage, callID string) {
	for _, t := range s.order {
		i := slices.IndexFunc(t.asked, func(q question) bool {
			am, ok := q.m.(*agent.AgentMessage)
			return ok && am.Approval != nil && am.Approval.CallID == callID && am.Sender != nil && am.Sender.AgentID() == ev.Sender.AgentID()
		})
		if i < 0 || terminal(t.status.State) {
			continue
		}
		t.asked = slices.Delete(t.asked, i, i+1)
		if ev.ParentID.Valid {
			s.tree.Adopt(t, ev.ParentID.UUID, ev.Sender)
		}
		if i == 0 {
			s.next(t)
		}
		return
	}
}

// pageToken reads a ListTasks page token: the offset it stands for.
func pageToken(tok string) (int, bool) {
	if tok == "" {
		return 0, true
	}
	n, err := strconv.Atoi(tok)
	return n, err == nil && n >= 0
}
