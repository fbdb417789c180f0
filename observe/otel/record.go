package akotel

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/message"
)

// akgentic's own attribute keys; the GenAI conventions' come from semconv.
const (
	keyActorName  = attribute.Key("akgentic.actor.name")
	keyActorRole  = attribute.Key("akgentic.actor.role")
	keyActorKind  = attribute.Key("akgentic.actor.kind")
	keyActorID    = attribute.Key("akgentic.actor.id")
	keyTeamID     = attribute.Key("akgentic.team.id")
	keyMsgID      = attribute.Key("akgentic.message.id")
	keyMsgType    = attribute.Key("akgentic.message.type")
	keyMsgSender  = attribute.Key("akgentic.message.sender")
	keyMsgContent = attribute.Key("akgentic.message.content")
	keyRunID      = attribute.Key("akgentic.llm.run_id")
	keyAttempts   = attribute.Key("akgentic.llm.attempts")
	keyCost       = attribute.Key("akgentic.llm.cost")
	keyContentTyp = attribute.Key("akgentic.notice.content_type")
	keyContent    = attribute.Key("akgentic.notice.content")
)

// team is what the subscriber keeps of one team.
type team struct {
	id        uuid.UUID
	restoring bool
	live      int64     // members started and not stopped
	last      time.Time // the latest record's time
	members   map[uuid.UUID]*member
	closing   []*member // members whose turn is processed and waits to settle
	set       *attribute.Set
}

func (t *team) attrs() attribute.Set {
	if t.set == nil {
		s := attribute.NewSet(keyTeamID.String(t.id.String()))
		t.set = &s
	}
	return *t.set
}

// member is what the subscriber keeps of one member: its open turn, the
// messages sent to it and not yet received, and its last turn (for an
// Error that comes after the turn's span ended).
type member struct {
	addr   *message.Address
	metric metric.MeasurementOption // kind and role
	static []attribute.KeyValue     // what every turn span of the member says of it
	sends  map[string]metric.MeasurementOption
	models map[modelKey]*modelAttrs
	turn   *turn
	// history is the member's model history as its events rebuild it, and
	// answered says its last entry is the answer of a model call whose
	// usage event has not come yet (CaptureContent).
	history  []llm.Message
	answered bool
	inbox    map[uuid.UUID]pending
	started  bool // its Start record was seen: it counts as live
	peak     int  // the inbox's largest size since it was made
	full     bool // inbox reached maxPending (logged once)
	lastMsg  uuid.UUID
	lastSC   trace.SpanContext
}

// sendAttrs returns the attributes of the member's sent messages of type typ.
func (mb *member) sendAttrs(typ string) metric.MeasurementOption {
	if o, ok := mb.sends[typ]; ok {
		return o
	}
	if mb.sends == nil {
		mb.sends = map[string]metric.MeasurementOption{}
	}
	o := metric.WithAttributeSet(attribute.NewSet(
		keyActorKind.String(mb.addr.ActorType()), keyActorRole.String(mb.addr.Role()), keyMsgType.String(typ)))
	mb.sends[typ] = o
	return o
}

// pending is a sent message waiting for its turn: the sender's turn (the
// parent of the message's turn) and what the turn's span says of it.
type pending struct {
	parent  trace.SpanContext
	typ     string
	sender  string
	content string // with CaptureContent
}

// turn is an open turn.
type turn struct {
	msgID    uuid.UUID
	span     trace.Span
	ctx      context.Context // carries span
	start    time.Time
	end      time.Time // the Processed record's time, once closing
	closing  bool
	mark     time.Time // when the next model call can have started
	agent    bool      // an invoke_agent span (an LLM agent's turn)
	provider string    // the provider the span names, once a model call named it
	tools    map[string]trace.Span
	results  map[string]string // tool results waiting for their return (CaptureContent)
}

// agentCall marks the turn as an agent's invocation when a model call
// shows it is one (an actor kind other than BaseAgent that runs a model:
// its span is renamed and given the agent's attributes, its kind stays
// the one it was started with), and names its provider, which the
// conventions require of it.
func (tu *turn) agentCall(mb *member, provider string) {
	if !tu.agent {
		tu.agent = true
		tu.span.SetName(invokeAgent + " " + mb.addr.Name())
		tu.span.SetAttributes(semconv.GenAIOperationNameInvokeAgent, mb.agentName(), mb.agentID(), mb.conversation())
	}
	if provider != tu.provider {
		tu.provider = provider
		tu.span.SetAttributes(semconv.GenAIProviderNameKey.String(provider))
	}
}

// invokeAgent is the conventions' operation name of an agent's turn.
const invokeAgent = "invoke_agent"

// callMessages returns the input and the output of the member's model
// call whose usage event is being recorded: the history before the
// answer, and the answer (nil when the response had none), and clears
// the answer's mark.
func (mb *member) callMessages() (input []llm.Message, output *llm.Message) {
	input = mb.history
	if mb.answered && len(input) > 0 {
		output = &input[len(input)-1]
		input = input[:len(input)-1]
	}
	mb.answered = false
	return input, output
}

// remember folds one event of the member's model loop into its history:
// an appended message, a compaction (the replaced messages become one
// summary message) or a clear.
func (mb *member) remember(ev any) {
	switch e := ev.(type) {
	case llm.MessageEvent:
		mb.history = append(mb.history, e.Message)
		mb.answered = e.Message.Role == "assistant"
	case llm.CompactedEvent:
		n := min(max(e.ReplacedMessageCount, 0), len(mb.history))
		mb.history = append([]llm.Message{llm.UserText(e.Summary)}, mb.history[n:]...)
		mb.answered = false
	case llm.ClearedEvent:
		mb.history, mb.answered = nil, false
	}
}

// agentName, agentID and conversation are the conventions' attributes of
// the member: its name, its actor id and its team's id (the conversation),
// made from static's strings (an id's String allocates).
func (mb *member) agentName() attribute.KeyValue {
	return semconv.GenAIAgentNameKey.String(mb.static[0].Value.AsString())
}

func (mb *member) agentID() attribute.KeyValue {
	return semconv.GenAIAgentIDKey.String(mb.static[3].Value.AsString())
}

func (mb *member) conversation() attribute.KeyValue {
	return semconv.GenAIConversationIDKey.String(mb.static[4].Value.AsString())
}

// member returns the state of the member at a, made on first sight.
func (t *team) member(a *message.Address) *member {
	id := a.AgentID()
	if mb, ok := t.members[id]; ok {
		return mb
	}
	mb := &member{addr: a, metric: metric.WithAttributeSet(attribute.NewSet(
		keyActorKind.String(a.ActorType()), keyActorRole.String(a.Role()))),
		static: []attribute.KeyValue{keyActorName.String(a.Name()), keyActorRole.String(a.Role()),
			keyActorKind.String(a.ActorType()), keyActorID.String(id.String()), keyTeamID.String(t.id.String())}}
	t.members[id] = mb
	return mb
}

// record turns one live record into spans and metrics (mu held).
func (s *Subscriber) record(t *team, m message.Message) {
	b := m.Envelope()
	ts := b.Timestamp
	if ts.After(t.last) {
		t.last = ts
	}
	s.settle(t, ts)
	if b.Sender.IsOrchestrator() {
		return
	}
	mb := t.member(b.Sender)
	if tu := mb.turn; tu != nil && tu.closing && !aboutTurn(m, tu.msgID) {
		s.endTurn(t, mb, ts)
	}
	ctx := context.Background()
	switch x := m.(type) {
	case *message.StartMessage:
		if !mb.started {
			mb.started = true
			t.live++
		}
	case *message.StopMessage:
		s.endTurn(t, mb, ts)
		if mb.started { // a member started before the subscriber came was not counted
			t.live--
		}
		delete(t.members, b.Sender.AgentID())
	case *message.SentMessage:
		s.sent(t, mb, x)
	case *message.ReceivedMessage:
		s.received(t, mb, x.MessageID, ts)
	case *message.ProcessedMessage:
		if tu := mb.turn; tu != nil && tu.msgID == x.MessageID && !tu.closing {
			tu.closing, tu.end = true, ts
			t.closing = append(t.closing, mb)
		}
	case *message.HandledMessage:
		s.handled(mb, x.MessageID, ts)
	case *message.ErrorMessage:
		s.inst.errors.Add(ctx, 1, mb.metric)
		s.notice(t, mb, &x.NotificationMessage, ts, "error", func(sp trace.Span) {
			sp.SetStatus(codes.Error, x.Content)
			sp.SetAttributes(errorType(x.ContentType))
			sp.AddEvent("exception", trace.WithTimestamp(ts), trace.WithAttributes(
				attribute.String("exception.type", x.ContentType),
				attribute.String("exception.message", x.Content),
				attribute.String("exception.stacktrace", x.Traceback)))
		})
	case *message.WarningMessage:
		s.inst.warnings.Add(ctx, 1, mb.metric)
		s.notice(t, mb, &x.NotificationMessage, ts, "warning", func(sp trace.Span) {
			sp.AddEvent("akgentic.warning", trace.WithTimestamp(ts), trace.WithAttributes(
				keyContentTyp.String(x.ContentType), keyContent.String(x.Content)))
		})
	case *message.EventMessage:
		s.event(mb, x.Event, ts)
	}
}

// aboutTurn says whether m is the Error or Warning record of the turn on
// message id (the record that may follow its Processed).
func aboutTurn(m message.Message, id uuid.UUID) bool {
	var n *message.NotificationMessage
	switch x := m.(type) {
	case *message.ErrorMessage:
		n = &x.NotificationMessage
	case *message.WarningMessage:
		n = &x.NotificationMessage
	default:
		return false
	}
	return n.CurrentMessage != nil && n.CurrentMessage.Envelope().ID == id
}

// settle ends the turns processed more than settleAfter before now (record
// time): their Error or Warning record would have come by then.
func (s *Subscriber) settle(t *team, now time.Time) {
	for i := 0; i < len(t.closing); {
		mb := t.closing[i]
		if mb.turn == nil || now.Sub(mb.turn.end) < settleAfter {
			i++
			continue
		}
		s.endTurn(t, mb, now) // removes mb from t.closing
	}
}

// sent counts a sent message and, when its recipient is a member, keeps
// what its turn will need: the sender's turn as its parent.
func (s *Subscriber) sent(t *team, mb *member, x *message.SentMessage) {
	if x.Message == nil {
		return
	}
	typ := message.TypeName(x.Message)
	s.inst.messages.Add(context.Background(), 1, mb.sendAttrs(typ))
	to := x.Recipient
	if to == nil || to.TeamID() != t.id || to.IsOrchestrator() {
		return
	}
	sent := x.Message.Envelope()
	p := pending{typ: typ, sender: mb.addr.Name()}
	if tu := mb.turn; tu != nil && !tu.closing && sent.ParentID.Valid && sent.ParentID.UUID == tu.msgID {
		p.parent = tu.span.SpanContext()
	}
	if s.content {
		p.content = contentOf(x.Message)
	}
	rcpt := t.member(to)
	if len(rcpt.inbox) >= maxPending {
		if !rcpt.full {
			rcpt.full = true
			s.logger.Warn("akotel: too many messages waiting for a member; the turns of later ones start new traces",
				"member", to.Name(), "waiting", len(rcpt.inbox))
		}
		return
	}
	if rcpt.inbox == nil {
		rcpt.inbox = map[uuid.UUID]pending{}
	}
	rcpt.inbox[sent.ID] = p
	rcpt.peak = max(rcpt.peak, len(rcpt.inbox))
}

// contentOf returns the text of the messages that have one.
func contentOf(m message.Message) string {
	switch x := m.(type) {
	case *agent.AgentMessage:
		return x.Content
	case *message.UserMessage:
		return x.Content
	case *message.ResultMessage:
		return x.Content
	}
	return ""
}

// received opens the span of a turn, under the turn that sent its message.
func (s *Subscriber) received(t *team, mb *member, id uuid.UUID, ts time.Time) {
	if mb.turn != nil { // no Processed record for the previous turn
		s.endTurn(t, mb, ts)
	}
	p := mb.inbox[id]
	delete(mb.inbox, id)
	if len(mb.inbox) == 0 && mb.peak > 64 {
		mb.inbox, mb.peak, mb.full = nil, 0, false // a map keeps its buckets: drop a big one when empty
	}
	parent := context.Background()
	if p.parent.IsValid() {
		parent = trace.ContextWithSpanContext(parent, p.parent)
	}
	a := mb.addr
	attrs := make([]attribute.KeyValue, 0, len(mb.static)+8)
	attrs = append(append(attrs, mb.static...), keyMsgID.String(id.String()))
	if p.typ != "" {
		attrs = append(attrs, keyMsgType.String(p.typ), keyMsgSender.String(p.sender))
	}
	if p.content != "" {
		attrs = append(attrs, keyMsgContent.String(p.content))
	}
	name, kind, isAgent := "turn "+a.Name(), trace.SpanKindConsumer, a.ActorType() == agent.Kind
	if isAgent { // an agent's turn: the conventions' invoke_agent span, in process
		name, kind = invokeAgent+" "+a.Name(), trace.SpanKindInternal
		attrs = append(attrs, semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentNameKey.String(a.Name()),
			mb.agentID(), mb.conversation())
	}
	ctx, span := s.tracer.Start(parent, name, trace.WithTimestamp(ts),
		trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	mb.turn = &turn{msgID: id, span: span, ctx: ctx, start: ts, mark: ts, agent: isAgent}
}

// handled notes a message a running turn consumed from the mailbox: an
// event of that turn, linked to the turn that sent it.
func (s *Subscriber) handled(mb *member, id uuid.UUID, ts time.Time) {
	p := mb.inbox[id]
	delete(mb.inbox, id)
	tu := mb.turn
	if tu == nil {
		return
	}
	attrs := []attribute.KeyValue{keyMsgID.String(id.String())}
	if p.typ != "" {
		attrs = append(attrs, keyMsgType.String(p.typ))
	}
	tu.span.AddEvent("akgentic.message.handled", trace.WithTimestamp(ts), trace.WithAttributes(attrs...))
	if p.parent.IsValid() {
		tu.span.AddLink(trace.Link{SpanContext: p.parent})
	}
}

// notice applies an Error or Warning record to the turn of its message:
// the open one, or as a short span under the member's last turn when that
// turn has already ended.
func (s *Subscriber) notice(t *team, mb *member, n *message.NotificationMessage, ts time.Time, name string, apply func(trace.Span)) {
	if n.CurrentMessage == nil {
		return
	}
	id := n.CurrentMessage.Envelope().ID
	if tu := mb.turn; tu != nil && tu.msgID == id {
		apply(tu.span)
		if tu.closing { // the failure's record: the turn is over
			s.endTurn(t, mb, ts)
		}
		return
	}
	if mb.lastMsg != id || !mb.lastSC.IsValid() {
		return
	}
	_, sp := s.tracer.Start(trace.ContextWithSpanContext(context.Background(), mb.lastSC), name,
		trace.WithTimestamp(ts))
	apply(sp)
	sp.End(trace.WithTimestamp(ts))
}

// endTurn ends mb's turn, if any: at its Processed time when it has one,
// else at end with an Error status (it never finished).
func (s *Subscriber) endTurn(t *team, mb *member, end time.Time) {
	tu := mb.turn
	if tu == nil {
		return
	}
	mb.turn = nil
	if i := slices.Index(t.closing, mb); i >= 0 {
		t.closing = slices.Delete(t.closing, i, i+1)
	}
	for id, sp := range tu.tools {
		sp.SetStatus(codes.Error, "the turn ended before the tool returned")
		sp.End(trace.WithTimestamp(end))
		delete(tu.tools, id)
	}
	if tu.closing {
		end = tu.end
	} else {
		tu.span.SetStatus(codes.Error, "the turn did not finish (no Processed record)")
	}
	if end.Before(tu.start) {
		end = tu.start
	}
	tu.span.End(trace.WithTimestamp(end))
	mb.lastMsg, mb.lastSC = tu.msgID, tu.span.SpanContext()
	ctx := context.Background()
	s.inst.turns.Add(ctx, 1, mb.metric)
	s.inst.turnDuration.Record(ctx, end.Sub(tu.start).Seconds(), mb.metric)
}

// event records the LLM events of a member's model calls and tool calls.
func (s *Subscriber) event(mb *member, ev any, ts time.Time) {
	switch e := ev.(type) { // a decoded log holds pointers
	case *llm.UsageEvent:
		ev = *e
	case *llm.ToolCallEvent:
		ev = *e
	case *llm.ToolReturnEvent:
		ev = *e
	case *llm.MessageEvent:
		ev = *e
	case *llm.CompactedEvent:
		ev = *e
	case *llm.ClearedEvent:
		ev = *e
	case *llm.ApprovalRequestedEvent:
		ev = *e
	case *llm.ApprovalGrantedEvent:
		ev = *e
	case *llm.ApprovalDeniedEvent:
		ev = *e
	}
	if s.content {
		mb.remember(ev)
	}
	tu := mb.turn
	if tu != nil && tu.closing {
		tu = nil
	}
	switch e := ev.(type) {
	case llm.ApprovalRequestedEvent, llm.ApprovalGrantedEvent, llm.ApprovalDeniedEvent:
		if tu != nil {
			s.approval(mb, tu, e, ts)
		}
	case llm.UsageEvent:
		s.usage(mb, tu, e, ts)
	case llm.ToolCallEvent:
		if tu != nil {
			s.toolCall(mb, tu, e, ts)
		}
	case llm.ToolReturnEvent:
		if tu != nil {
			s.toolReturn(tu, e, ts)
		}
	case llm.MessageEvent:
		if tu == nil {
			return
		}
		if e.Message.Role != "assistant" {
			tu.mark = ts
		}
		if s.content && e.Message.Role == "tool" {
			if tu.results == nil {
				tu.results = map[string]string{}
			}
			tu.results[e.Message.ToolCallID] = e.Message.Text()
		}
	case llm.CompactedEvent:
		if tu != nil {
			tu.mark = ts
		}
	}
}

// errorType is the error.type of a failed turn: the class of its Error
// record (a Go type name, low in cardinality), or the conventions' _OTHER.
func errorType(contentType string) attribute.KeyValue {
	if contentType == "" {
		return semconv.ErrorTypeOther
	}
	return semconv.ErrorTypeKey.String(contentType)
}
