package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent/internal/cards"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// A tool call that needs a person's approval (Guards.Approval,
// llm.Tool.NeedsApproval) pauses the agent's run before the response's
// calls run. The pause is state, not a waiting goroutine: the turn ends,
// the runner keeps the paused run (and the team's log its
// llm.ApprovalRequestedEvent, so a restored agent waits again), and the
// team's person gets one request (intent request, Approval set) per
// waiting call. The person's answer to that request (Answer, with
// Decision's text) decides it: once every waiting call is decided the run
// goes on in the answer's turn: an approved call runs once, a denied one
// gets its refusal as its result. A deadline (tool.Approval.Timeout)
// wakes the agent with a message to itself and denies what is left.
// Messages that come while the run waits are held and handled, in order,
// once it is over.

func init() {
	message.Register[llm.ApprovalRequestedEvent]("ToolApprovalRequestedEvent")
	message.Register[llm.ApprovalGrantedEvent]("ToolApprovalGrantedEvent")
	message.Register[llm.ApprovalDeniedEvent]("ToolApprovalDeniedEvent")
}

// ApprovalRequest is a tool call an agent asks the team's person to
// approve: it travels in the AgentMessage the agent sends the person
// (AgentMessage.Approval). The agent is the message's sender.
type ApprovalRequest struct {
	Tool   string `json:"tool"`
	CallID string `json:"call_id"`
	// Arguments is the raw JSON the model gave the call.
	Arguments string `json:"arguments"`
	// Deadline, when set, is when the call is denied if nobody decided.
	Deadline time.Time `json:"deadline,omitzero"`
}

// Decision is the text of a person's answer to an approval request:
// "approve" or "deny", then the reason if there is one. Send it as the
// answer to the request (Answer, orchestrator.ProcessHumanInput, a
// cluster's Client.Answer): the agent reads an answer whose first word is
// approve, approved, yes, y or ok as an approval, and any other answer as
// a denial whose reason is the rest of the text ("deny", "denied", "no",
// "n" or "reject" first) or all of it, so that a person who answers in
// their own words is heard and nothing runs unapproved.
func Decision(approve bool, reason string) string {
	word := "deny"
	if approve {
		word = "approve"
	}
	if reason = strings.TrimSpace(reason); reason != "" {
		return word + " " + reason
	}
	return word
}

// parseDecision reads a person's answer to an approval request (Decision).
func parseDecision(text string) (approved bool, reason string) {
	text = strings.TrimSpace(text)
	first, rest := text, ""
	if i := strings.IndexFunc(text, unicode.IsSpace); i >= 0 {
		first, rest = text[:i], text[i:]
	}
	switch strings.ToLower(strings.TrimRight(first, ".,:;!")) {
	case "approve", "approved", "yes", "y", "ok":
		return true, strings.TrimSpace(rest)
	case "deny", "denied", "no", "n", "reject":
		return false, strings.TrimSpace(rest)
	}
	return false, text
}

// PendingApprovals returns the approval requests of team that wait for a
// decision, oldest first, from its log: each is the message an agent sent
// the team's person (its Approval set, the agent its sender); answer one
// with Decision's text, as the team's person (Answer). A request is no
// longer pending once its call is approved or denied (by the person or
// its deadline).
func PendingApprovals(ctx context.Context, team *orchestrator.Team) ([]*AgentMessage, error) {
	sent, err := team.Messages(ctx, orchestrator.Filter{Type: "SentMessage"})
	if err != nil {
		return nil, fmt.Errorf("agent: pending approvals: %w", err)
	}
	var asked []*AgentMessage
	agents := map[uuid.UUID]bool{}
	for _, r := range sent {
		s, ok := r.(*message.SentMessage)
		if !ok {
			continue
		}
		if m, ok := s.Message.(*AgentMessage); ok && m.Approval != nil && m.Sender != nil {
			asked = append(asked, m)
			agents[m.Sender.AgentID()] = true
		}
	}
	decided := map[[2]string]bool{}
	for id := range agents {
		evs, err := LLMEvents(ctx, team, id)
		if err != nil {
			return nil, fmt.Errorf("agent: pending approvals: %w", err)
		}
		for _, e := range evs {
			switch ev := e.(type) {
			case llm.ApprovalGrantedEvent:
				decided[[2]string{id.String(), ev.ToolCallID}] = true
			case llm.ApprovalDeniedEvent:
				decided[[2]string{id.String(), ev.ToolCallID}] = true
			}
		}
	}
	var out []*AgentMessage
	for _, m := range asked {
		if !decided[[2]string{m.Sender.AgentID().String(), m.Approval.CallID}] {
			out = append(out, m)
		}
	}
	return out, nil
}

// approvals is what an agent keeps of the approvals it waits for.
type approvals struct {
	asked map[uuid.UUID]string // the request sent to the person -> its call id
	held  []*AgentMessage      // messages that came while the run waited
	timer *time.Timer          // the deadline's wake-up, nil for none
	// rerun is the message of a turn a crash cut (restoreHeld): a durable
	// inbox delivers it again, and while the run waits that copy is not
	// held a second time.
	rerun *AgentMessage
}

// wakeText is the content of the message an agent sends itself when an
// approval's deadline passes.
const wakeText = "[approval deadline] A tool call's approval deadline passed."

// paused handles the end of a run that paused for approvals (err is an
// *llm.ApprovalPendingError): the person is asked, and the turn ends.
func (a *BaseAgent) paused(ctx context.Context, c *actor.Context, err error) (bool, error) {
	if err == nil {
		return false, nil
	}
	var pe *llm.ApprovalPendingError
	if !errors.As(err, &pe) {
		return false, nil
	}
	if len(pe.Calls) == 0 { // every call decided: the run goes on
		return true, a.resume(ctx, c)
	}
	return true, a.ask(ctx, c, pe.Calls)
}

// ask sends the person one request per waiting call and arms the
// deadline. With no person to ask, the calls are denied and the run goes
// on.
func (a *BaseAgent) ask(ctx context.Context, c *actor.Context, calls []llm.ApprovalRequestedEvent) error {
	person, err := a.person()
	if err != nil {
		return err
	}
	if person == nil {
		for _, w := range calls {
			if err := a.runner.Decide(w.ToolCallID, false, "", "the team has no person to approve it", false); err != nil {
				return err
			}
		}
		c.Report(actor.NewWarning("agent %s: %d tool call(s) need a person's approval and the team has no person: denied", c.Self().Name(), len(calls)))
		return a.resume(ctx, c)
	}
	if a.approvals.asked == nil {
		a.approvals.asked = map[uuid.UUID]string{}
	}
	for _, w := range calls {
		m := &AgentMessage{Type: Request, Content: approvalText(c.Self().Name(), w), Approval: &ApprovalRequest{
			Tool: w.ToolName, CallID: w.ToolCallID, Arguments: w.Arguments, Deadline: w.Deadline}}
		if err := c.Send(person, m); err != nil {
			return fmt.Errorf("agent %s: asking %s to approve %s: %w", c.Self().Name(), person.Name(), w.ToolName, err)
		}
		a.approvals.asked[m.ID] = w.ToolCallID
	}
	a.arm(c, calls)
	return nil
}

// maxShownArguments is how much of a call's arguments an approval
// request's text shows (its Approval holds them all).
const maxShownArguments = 2000

// approvalText is what the person reads in an approval request.
func approvalText(agent string, w llm.ApprovalRequestedEvent) string {
	args := w.Arguments
	if len(args) > maxShownArguments {
		args = strings.ToValidUTF8(args[:maxShownArguments], "") + fmt.Sprintf("… (%d bytes in all)", len(w.Arguments))
	}
	s := fmt.Sprintf("%s asks your approval to call the tool %s with the arguments %s. Answer approve or deny, with a reason if you like.",
		agent, w.ToolName, args)
	if !w.Deadline.IsZero() {
		s += " Without an answer by " + w.Deadline.Format(time.RFC3339) + " it is denied."
	}
	return s
}

// approvalTurn takes a message that belongs to the approvals: a person's
// answer to a request, the deadline's wake-up, and, while the run waits,
// anything else (held). done means it was taken.
func (a *BaseAgent) approvalTurn(ctx context.Context, c *actor.Context, m *AgentMessage) (bool, error) {
	if m.Sender != nil && m.Sender.AgentID() == c.Self().AgentID() && m.Content == wakeText {
		return true, a.wake(ctx, c)
	}
	if m.ParentID.Valid && m.Sender != nil && m.Sender.IsUserProxy() {
		if call, ok := a.approvals.asked[m.ParentID.UUID]; ok {
			return true, a.decide(ctx, c, m, call)
		}
	}
	if a.runner.Pending() == nil {
		a.drainHeld(c) // left by a cancelled turn: they came first
		if a.runner.Pending() == nil {
			return false, nil
		}
	}
	if r := a.approvals.rerun; r != nil && r.Type == m.Type && r.Content == m.Content && sameSender(r, m) {
		a.approvals.rerun = nil
		c.Logger().LogAttrs(ctx, slog.LevelInfo, "agent: a message a crash cut is delivered again while its tool call waits: not held twice",
			slog.String("from", senderOf(m.Sender)))
		return true, nil
	}
	a.approvals.held = append(a.approvals.held, m)
	c.Logger().LogAttrs(ctx, slog.LevelDebug, "agent: message held while a tool call waits for approval",
		slog.String("from", senderOf(m.Sender)), slog.Int("held", len(a.approvals.held)))
	return true, nil
}

// decide takes the person's answer m to the request for call.
func (a *BaseAgent) decide(ctx context.Context, c *actor.Context, m *AgentMessage, call string) error {
	delete(a.approvals.asked, m.ParentID.UUID)
	approved, reason := parseDecision(m.Content)
	if err := a.runner.Decide(call, approved, m.Sender.Name(), reason, false); err != nil {
		if errors.Is(err, llm.ErrNoSuchApproval) { // its deadline passed, or a /clear dropped the run
			return c.Send(m.Sender, &AgentMessage{Type: Notification, Content: fmt.Sprintf(
				"%s: that tool call no longer waits (decided already when its approval deadline passed, or the context was cleared); your answer changed nothing.", c.Self().Name())})
		}
		return err
	}
	if len(a.runner.Pending()) > 0 {
		return nil // the run goes on once every call is decided
	}
	return a.resume(ctx, c)
}

// wake denies the waiting calls whose deadline passed, and resumes the run
// when none waits any more.
func (a *BaseAgent) wake(ctx context.Context, c *actor.Context) error {
	pending := a.runner.Pending()
	if pending == nil {
		return nil // decided in time
	}
	now := a.now()
	var left []llm.ApprovalRequestedEvent
	for _, w := range pending {
		if w.Deadline.IsZero() || now.Before(w.Deadline) {
			left = append(left, w)
			continue
		}
		if err := a.runner.Decide(w.ToolCallID, false, "", "", true); err != nil {
			return err
		}
	}
	if len(left) > 0 {
		a.arm(c, left)
		return nil
	}
	return a.resume(ctx, c)
}

// resume goes on with the paused run in this turn, then handles the
// messages held while it waited (until a run pauses again).
func (a *BaseAgent) resume(ctx context.Context, c *actor.Context) error {
	a.disarm()
	a.approvals.rerun = nil
	tctx, roster := cards.WithTurnRoster(ctx)
	out, err := llm.Resume(tctx, a.runner, structured)
	err = a.endRun(tctx, c, out, err, roster)
	if ctx.Err() == nil { // a cancelled turn leaves them for the next one
		a.drainHeld(c)
	}
	return err
}

// drainHeld handles the messages held while a run waited, in order, as
// long as no run waits; each one's failure is reported as its turn's
// would be.
func (a *BaseAgent) drainHeld(c *actor.Context) {
	for len(a.approvals.held) > 0 && a.runner.Pending() == nil {
		m := a.approvals.held[0]
		a.approvals.held = a.approvals.held[1:]
		if err := a.handle(c, m); err != nil {
			c.Report(err)
		}
	}
}

// arm sets the wake-up for the earliest deadline of calls.
func (a *BaseAgent) arm(c *actor.Context, calls []llm.ApprovalRequestedEvent) {
	a.disarm()
	var first time.Time
	for _, w := range calls {
		if !w.Deadline.IsZero() && (first.IsZero() || w.Deadline.Before(first)) {
			first = w.Deadline
		}
	}
	if first.IsZero() {
		return
	}
	a.armIn(c.Self(), first.Sub(a.now()))
}

// armIn wakes the agent at self in d: a message to itself, so the
// deadline's denial has a turn of its own in the log.
func (a *BaseAgent) armIn(self *message.Address, d time.Duration) {
	a.approvals.timer = time.AfterFunc(max(d, 0), func() {
		_ = proxy.Tell(self, func(c *actor.Context, _ actor.Actor) error {
			return c.Send(c.Self(), &AgentMessage{Type: Notification, Content: wakeText})
		})
	})
}

func (a *BaseAgent) disarm() {
	if a.approvals.timer != nil {
		a.approvals.timer.Stop()
		a.approvals.timer = nil
	}
}

func (a *BaseAgent) now() time.Time {
	if now := a.env().Now; now != nil {
		return now()
	}
	return time.Now()
}

// restoreApprovals gives a restored agent whose run waits the requests it
// sent the person and the messages it held (both from the log), asks again
// for a call it had not asked about yet, and arms the deadline; a run
// whose calls were all decided (its resumption cut by a crash) is woken to
// go on.
func (a *BaseAgent) restoreApprovals(ctx context.Context, c *actor.Context) error {
	pending := a.runner.Pending()
	if pending == nil {
		return nil
	}
	if err := a.restoreHeld(ctx, c); err != nil {
		return err
	}
	if len(pending) == 0 {
		a.armIn(c.Self(), 0)
		return nil
	}
	asked := map[string]bool{}
	for _, call := range a.approvals.asked {
		asked[call] = true
	}
	var unasked []llm.ApprovalRequestedEvent
	for _, w := range pending {
		if !asked[w.ToolCallID] {
			unasked = append(unasked, w)
		}
	}
	if len(unasked) > 0 {
		return a.ask(ctx, c, unasked)
	}
	a.arm(c, pending)
	return nil
}

// restoreHeld reads the agent's records in the log from its last approval
// request on: the requests it sent the person for the calls that wait,
// and the messages it received after them that it held (not an answer to
// a request, not its own wake-up).
func (a *BaseAgent) restoreHeld(ctx context.Context, c *actor.Context) error {
	self := c.Self().AgentID()
	all, err := a.team.Messages(ctx, orchestrator.Filter{})
	if err != nil {
		return err
	}
	waiting := map[string]bool{}
	for _, w := range a.runner.Pending() {
		waiting[w.ToolCallID] = true
	}
	a.approvals.asked = map[uuid.UUID]string{}
	requests := map[uuid.UUID]bool{} // every approval request the agent sent
	sent := map[uuid.UUID]*AgentMessage{}
	var received []uuid.UUID // since the agent's last approval request
	var cut uuid.UUID        // the agent's last message received and not processed
	for _, r := range all {
		from := r.Envelope().Sender
		switch m := r.(type) {
		case *message.SentMessage:
			am, ok := m.Message.(*AgentMessage)
			if !ok {
				continue
			}
			sent[am.ID] = am
			if am.Approval != nil && from != nil && from.AgentID() == self {
				requests[am.ID] = true
				if waiting[am.Approval.CallID] {
					a.approvals.asked[am.ID] = am.Approval.CallID
				}
			}
		case *message.EventMessage:
			if _, ok := asLLMEvent(m.Event).(llm.ApprovalRequestedEvent); ok && from != nil && from.AgentID() == self {
				received = received[:0]
			}
		case *message.ReceivedMessage:
			if from != nil && from.AgentID() == self {
				received = append(received, m.MessageID)
				cut = m.MessageID
			}
		case *message.ProcessedMessage:
			if from != nil && from.AgentID() == self && m.MessageID == cut {
				cut = uuid.Nil
			}
		}
	}
	a.approvals.rerun = sent[cut] // nil when no turn was cut
	for _, id := range received {
		m := sent[id]
		switch {
		case m == nil, m.Sender != nil && m.Sender.AgentID() == self, m.ParentID.Valid && requests[m.ParentID.UUID]:
			continue // not an AgentMessage, a wake-up, an answer to a request
		}
		a.approvals.held = append(a.approvals.held, m)
	}
	return nil
}

// sameSender reports whether a and b have the same sender.
func sameSender(a, b *AgentMessage) bool {
	return a.Sender != nil && b.Sender != nil && a.Sender.AgentID() == b.Sender.AgentID()
}

// withApproval marks the tools of opts that the team's approval rules
// name, and sets how long their calls wait.
func (g *Guards) withApproval(opts llm.Options) llm.Options {
	if g == nil || g.Approval == nil {
		return opts
	}
	opts.Tools = g.Approval.Mark(opts.Tools)
	opts.ApprovalTimeout = g.Approval.Timeout
	return opts
}
