package agui

import (
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool/planning"
	"github.com/akgentic/akgentic-go/internal/lineage"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// A run follows the team through its log, as an A2A task does: the
// person's message that starts it (or answers a question) has an id
// chosen before it is sent, and every message sent while a member handles
// one of the run's belongs to the run too, with the events and errors of
// those turns. The run finishes when the entry member answers the person
// (success), when an agent asks the person a question (an interrupt,
// whose id is the question's message id: the client's resume answers
// it), or when the last message of the run has been handled with no
// answer (an error if a turn of the run failed, else success).

// runBuffer is how many events a run's stream may fall behind the team.
const runBuffer = 1024

// maxQuestions bounds the questions to the person kept for a resume.
const maxQuestions = 1000

// stateMember is one member in the state the endpoint shares.
type stateMember struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Role   string `json:"role"`
	Person bool   `json:"person,omitempty"`
}

// teamState is the state the client is sent: the roster and the task
// board (the planning tool's, empty without one).
type teamState struct {
	Members []stateMember   `json:"members"`
	Tasks   []planning.Task `json:"tasks"`
}

// run is one AG-UI run and what the hub knows of its messages.
type run struct {
	threadID, runID string
	ch              chan event
	done            bool
	answer          llm.StreamedAnswer // the entry member's answer being streamed
	textID          string             // the open text message, "" when none
	streamed        string             // its text sent so far
	approvals       []interrupt        // the approval requests of a turn, sent when it ends
	asker           uuid.UUID          // the message of that turn
}

// hub follows the team for its runs and keeps the shared state. Its
// OnRecord runs on the subscriber goroutine the team gives it and never
// waits. It is a lossless subscriber: a run is followed through every
// record of its work, so none may be dropped for it.
type hub struct {
	mu        sync.Mutex
	person    uuid.UUID
	entry     uuid.UUID
	tree      *lineage.Tree[*run]
	questions map[uuid.UUID]message.Message // open questions to the person
	asked     []uuid.UUID                   // their ids, oldest first
	state     teamState
}

var (
	_ orchestrator.RecordSubscriber      = (*hub)(nil)
	_ orchestrator.StopSubscriber        = (*hub)(nil)
	_ orchestrator.StopRequestSubscriber = (*hub)(nil)
)

func newHub(person, entry uuid.UUID) *hub {
	return &hub{person: person, entry: entry, tree: lineage.New[*run](), questions: map[uuid.UUID]message.Message{},
		state: teamState{Members: []stateMember{}, Tasks: []planning.Task{}}}
}

// open starts a run.
func (h *hub) open(threadID, runID string) *run {
	return &run{threadID: threadID, runID: runID, ch: make(chan event, runBuffer)}
}

// expect returns the id of a message of r about to be sent to member to:
// r owns it, and runs until to has handled it (so that another of r's,
// handled before this one is recorded as sent, does not end r).
func (h *hub) expect(r *run, to *message.Address) uuid.UUID {
	h.mu.Lock()
	defer h.mu.Unlock()
	id := message.NewID()
	h.tree.Adopt(r, id, to)
	return id
}

// snapshot returns a copy of the shared state.
func (h *hub) snapshot() teamState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return teamState{Members: slices.Clone(h.state.Members), Tasks: slices.Clone(h.state.Tasks)}
}

// question returns the open question to the person with id.
func (h *hub) question(id uuid.UUID) message.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.questions[id]
}

// send queues e on r's stream; a stream that fell behind is closed
// without its final event (the handler reports it). The lock is held.
func (h *hub) send(r *run, e event) {
	if r.done {
		return
	}
	e.Timestamp = time.Now().UnixMilli()
	select {
	case r.ch <- e:
	default:
		h.close(r)
	}
}

// close ends r: no more events, its messages forgotten. The lock is held.
func (h *hub) close(r *run) {
	if r.done {
		return
	}
	r.done = true
	close(r.ch)
	h.tree.Forget(r)
}

// abandon closes a run whose client left.
func (h *hub) abandon(r *run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.close(r)
}

// finish sends r's last event (after closing its open text message) and
// closes it. The lock is held.
func (h *hub) finish(r *run, last event) {
	h.endText(r)
	last.ThreadID, last.RunID = r.threadID, r.runID
	h.send(r, last)
	h.close(r)
}

// end finishes r with last.
func (h *hub) end(r *run, last event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.finish(r, last)
}

// fail finishes r with a run error.
func (h *hub) fail(r *run, why string) { h.end(r, event{Type: runError, Message: why}) }

// endText closes r's open text message. The lock is held.
func (h *hub) endText(r *run) {
	if r.textID != "" {
		h.send(r, event{Type: textMessageEnd, MessageID: r.textID})
		r.textID, r.streamed = "", ""
	}
}

// text sends a whole message to the person as one text message: the rest
// of the streamed one when it began it, else a message of its own.
func (h *hub) text(r *run, id, content string) {
	if r.textID != "" {
		if rest, ok := strings.CutPrefix(content, r.streamed); ok {
			if rest != "" {
				h.send(r, event{Type: textMessageContent, MessageID: r.textID, Delta: rest})
			}
			h.endText(r)
			return
		}
		h.endText(r) // the streamed text was another message (to a member)
	}
	if content == "" {
		return
	}
	h.send(r, event{Type: textMessageStart, MessageID: id, Role: "assistant"})
	h.send(r, event{Type: textMessageContent, MessageID: id, Delta: content})
	h.send(r, event{Type: textMessageEnd, MessageID: id})
}

// delta sends every open run a change of the shared state. The lock is
// held.
func (h *hub) delta(path string, value any) {
	h.tree.Each(func(r *run) {
		h.send(r, event{Type: stateDelta, Delta: []patchOp{{Op: "replace", Path: path, Value: value}}})
	})
}

// OnMessage is for what is not a record (metadata changes): nothing.
func (h *hub) OnMessage(message.Message) {}

// OnStopRequest ends the runs under way: the team is stopping (its
// members' turns end without answering).
func (h *hub) OnStopRequest(team uuid.UUID) { h.OnStop(team) }

// OnStop ends the runs under way: the team has stopped.
func (h *hub) OnStop(uuid.UUID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var runs []*run
	h.tree.Each(func(r *run) { runs = append(runs, r) })
	for _, r := range runs {
		h.finish(r, event{Type: runError, Message: "the team stopped"})
	}
}

// OnRecord follows one record of the team.
func (h *hub) OnRecord(rec *orchestrator.Record) {
	switch rec.Type() {
	case "SentMessage", "ReceivedMessage", "ProcessedMessage", "HandledMessage", "ErrorMessage", "WarningMessage",
		"EventMessage", "StartMessage", "StopMessage", "StateChangedMessage":
	default:
		return
	}
	m := rec.Message()
	h.mu.Lock()
	defer h.mu.Unlock()
	switch m := m.(type) {
	case *message.SentMessage:
		h.sent(m)
	case *message.ReceivedMessage:
	case *message.ProcessedMessage:
		h.handled(m.MessageID)
	case *message.HandledMessage:
		h.handled(m.MessageID)
	case *message.ErrorMessage:
		h.tree.Failure(m.NotificationMessage)
	case *message.WarningMessage:
		h.tree.Failure(m.NotificationMessage)
	case *message.EventMessage:
		h.event(m)
	case *message.StartMessage:
		h.join(m.Sender)
	case *message.StopMessage:
		h.leave(m.Sender)
	case *message.StateChangedMessage:
		if m.Sender != nil && m.Sender.IsTool() {
			if tasks, ok := planning.TasksOf(m.State); ok && !reflect.DeepEqual(tasks, h.state.Tasks) {
				h.state.Tasks = tasks
				h.delta("/tasks", tasks)
			}
		}
	}
}

// shown reports whether a is a member the state lists (not the team's
// root, not a tool actor).
func shown(a *message.Address) bool { return a != nil && !a.IsOrchestrator() && !a.IsTool() }

// join adds a member to the roster. The lock is held.
func (h *hub) join(a *message.Address) {
	if !shown(a) {
		return
	}
	id := a.AgentID().String()
	if slices.ContainsFunc(h.state.Members, func(m stateMember) bool { return m.ID == id }) {
		return
	}
	h.state.Members = append(h.state.Members, stateMember{ID: id, Name: a.Name(), Role: a.Role(), Person: a.IsUserProxy()})
	h.delta("/members", slices.Clone(h.state.Members))
}

// leave removes a member from the roster. The lock is held.
func (h *hub) leave(a *message.Address) {
	if !shown(a) {
		return
	}
	id := a.AgentID().String()
	h.state.Members = slices.DeleteFunc(h.state.Members, func(m stateMember) bool { return m.ID == id })
	h.delta("/members", slices.Clone(h.state.Members))
}

// remember keeps an open question to the person, for a resume. The lock
// is held.
func (h *hub) remember(q message.Message) {
	id := q.Envelope().ID
	if len(h.asked) >= maxQuestions {
		delete(h.questions, h.asked[0])
		h.asked = h.asked[1:]
	}
	h.questions[id] = q
	h.asked = append(h.asked, id)
}

// sent follows a message sent in the team. The lock is held.
func (h *hub) sent(sm *message.SentMessage) {
	if sm.Message == nil || sm.Recipient == nil {
		return
	}
	b := sm.Message.Envelope()
	am, isAgent := sm.Message.(*agent.AgentMessage)
	toPerson := sm.Recipient.AgentID() == h.person
	fromPerson := b.Sender != nil && b.Sender.AgentID() == h.person
	if isAgent && toPerson && !fromPerson && (am.Type == agent.Request || am.Type == agent.Instruction) {
		h.remember(sm.Message) // a question (an approval request is one too: its answer's text decides it)
	}
	if fromPerson && b.ParentID.Valid {
		delete(h.questions, b.ParentID.UUID) // answered
	}
	r, ok := h.tree.Sent(sm, h.person)
	if !ok || r.done || !toPerson || !isAgent || fromPerson {
		return
	}
	h.text(r, b.ID.String(), am.Content)
	switch {
	case am.Type == agent.Request || am.Type == agent.Instruction:
		in := interrupt{ID: b.ID.String(), Reason: "input_required", Message: am.Content}
		if ap := am.Approval; ap != nil {
			d := lineage.NewApproval(b.Sender.Name(), ap.Tool, ap.CallID, ap.Arguments, ap.Deadline)
			in.Reason, in.ToolCallID, in.ExpiresAt, in.ResponseSchema = "tool_approval", ap.CallID, d.Deadline, decisionSchema
			in.Metadata = map[string]any{"approval": d}
			if b.ParentID.Valid { // the turn may ask for more (one per call): the run ends with it
				r.approvals, r.asker = append(r.approvals, in), b.ParentID.UUID
				return
			}
		}
		h.interrupt(r, in)
	case am.Type == agent.Response && b.Sender != nil && b.Sender.AgentID() == h.entry:
		h.finish(r, event{Type: runFinished, Outcome: &outcome{Type: "success"}})
	}
}

// interrupt finishes r with the approval requests it holds and more.
// The lock is held.
func (h *hub) interrupt(r *run, more ...interrupt) {
	in := append(r.approvals, more...)
	r.approvals = nil
	h.finish(r, event{Type: runFinished, Outcome: &outcome{Type: "interrupt", Interrupts: in}})
}

// handled follows the end of a member's handling of a message: the end of
// a turn that asked for approvals finishes the run with them, the run's
// last message finishes it if nothing else did. The lock is held.
func (h *hub) handled(id uuid.UUID) {
	r, quiet := h.tree.Handled(id)
	if r == nil || r.done {
		return
	}
	if len(r.approvals) > 0 && (id == r.asker || quiet) {
		h.interrupt(r)
		return
	}
	if !quiet {
		return
	}
	if why := h.tree.LastErr(r); why != "" {
		h.finish(r, event{Type: runError, Message: why})
		return
	}
	h.finish(r, event{Type: runFinished, Outcome: &outcome{Type: "success"}})
}

// event follows an event of a turn of a run: the entry member's answer
// streamed as a text message, every member's tool calls and results. The
// lock is held.
func (h *hub) event(ev *message.EventMessage) {
	if d, isDenial := message.EventAs[llm.ApprovalDeniedEvent](ev); isDenial && d.Expired {
		h.expired(ev.Sender, d.ToolCallID)
	}
	r, ok := h.tree.Event(ev)
	if !ok || r.done {
		return
	}
	if d, ok := message.EventAs[llm.TextDeltaEvent](ev); ok && ev.Sender.AgentID() == h.entry {
		h.stream(r, d)
		return
	}
	if c, ok := message.EventAs[llm.ToolCallEvent](ev); ok {
		h.send(r, event{Type: toolCallStart, ToolCallID: c.ToolCallID, ToolCallName: c.ToolName})
		if c.Arguments != "" {
			h.send(r, event{Type: toolCallArgs, ToolCallID: c.ToolCallID, Delta: c.Arguments})
		}
		h.send(r, event{Type: toolCallEnd, ToolCallID: c.ToolCallID})
		return
	}
	if m, ok := message.EventAs[llm.MessageEvent](ev); ok && m.Message.Role == "tool" && m.Message.ToolCallID != "" {
		content := m.Message.Content
		if content == "" {
			content = "(no output)"
		}
		h.send(r, event{Type: toolCallResult, MessageID: uuid.NewString(), ToolCallID: m.Message.ToolCallID, Role: "tool", Content: content})
	}
}

// expired forgets the approval request of agent's call callID, denied as
// its deadline passed: its interrupt can no longer be resumed. The lock
// is held.
func (h *hub) expired(agentAt *message.Address, callID string) {
	for id, q := range h.questions {
		am, ok := q.(*agent.AgentMessage)
		if ok && am.Approval != nil && am.Approval.CallID == callID && am.Sender != nil && agentAt != nil && am.Sender.AgentID() == agentAt.AgentID() {
			delete(h.questions, id)
			h.asked = slices.DeleteFunc(h.asked, func(a uuid.UUID) bool { return a == id })
			return
		}
	}
}

// stream sends the text of the entry member's answer as it is written.
// The lock is held.
func (h *hub) stream(r *run, d llm.TextDeltaEvent) {
	if d.Seq == 0 {
		h.endText(r) // a new answer
	}
	if !r.answer.Add(d) {
		return
	}
	text := llm.StreamedText(r.answer.Raw())
	if text == "" || text == r.streamed {
		return
	}
	rest, ok := strings.CutPrefix(text, r.streamed)
	if !ok { // the text so far changed (another message began): a new text message
		h.endText(r)
		rest = text
	}
	if r.textID == "" {
		r.textID = uuid.NewString()
		h.send(r, event{Type: textMessageStart, MessageID: r.textID, Role: "assistant"})
	}
	r.streamed = text
	h.send(r, event{Type: textMessageContent, MessageID: r.textID, Delta: rest})
}
