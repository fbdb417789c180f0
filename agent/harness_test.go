package agent_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// harness is a small software team: an orchestrator, @Human (a
// HumanProxy), @Manager, and cards for Manager, Developer and QA, on a
// scripted model.
type harness struct {
	t       testing.TB
	srv     *llmtest.Server
	env     *agent.Env
	sys     *actor.System
	team    *orchestrator.Team
	logs    *actortest.LogCapture
	sub     *recorder
	human   *message.Address
	inbox   chan *agent.AgentMessage // what @Human receives
	manager *message.Address

	mu    sync.Mutex
	waits []time.Duration // HTTP retry backoffs asked for
}

type option func(*harness, *agent.AgentConfig)

func newHarness(t testing.TB, opts ...option) *harness {
	t.Helper()
	h := &harness{t: t, srv: llmtest.NewServer(), inbox: make(chan *agent.AgentMessage, 100), sub: newRecorder()}
	t.Cleanup(h.srv.Close)
	h.env = &agent.Env{HTTPClient: h.srv.HTTPClient(),
		Sleep: func(ctx context.Context, d time.Duration) error { // retries do not wait; the waits are kept
			h.mu.Lock()
			h.waits = append(h.waits, d)
			h.mu.Unlock()
			return ctx.Err()
		}}
	h.logs = actortest.NewLogCapture(t)
	logger := h.logs.Logger()
	if _, bench := t.(*testing.B); bench {
		// A benchmark's team logs as a program's does by default: slog's
		// Info level, so the turn's debug lines cost one Enabled check.
		// The capture formats, keeps and b.Logs every debug line, which
		// is the test's cost, not the turn's.
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h.sys = actor.NewSystem(actor.SystemConfig{Logger: logger})
	t.Cleanup(func() { actortest.Shutdown(t, h.sys) })
	var err error
	// A long stop grace: a stop that ends early ended because the agents
	// stopped, not because the grace ran out (TestStopInterruptsModelCall).
	h.team, err = orchestrator.New(h.sys, orchestrator.WithSubscribers(h.sub), orchestrator.WithStopGrace(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ctx := actortest.Context(t)
	var cards []*orchestrator.AgentCard
	for _, role := range []string{"Manager", "Developer", "QA"} {
		cfg := h.config("@"+role, role)
		for _, o := range opts {
			o(h, cfg)
		}
		card, err := orchestrator.NewAgentCard(orchestrator.AgentCard{
			AgentClass: agent.Kind, Description: role + " of the team", Skills: []string{strings.ToLower(role)},
			Config: cfg, RoutesTo: map[string][]string{"Manager": {"Developer", "QA"}}[role], CanBeHired: role != "Manager",
		})
		if err != nil {
			t.Fatal(err)
		}
		cards = append(cards, card)
	}
	if err := h.team.Register(ctx, cards...); err != nil {
		t.Fatal(err)
	}
	h.human, err = h.team.Spawn(ctx, &agent.HumanProxy{Deliver: func(m *agent.AgentMessage) { h.inbox <- m }},
		&actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		t.Fatal(err)
	}
	mcfg, _ := cards[0].ConfigCopy()
	h.manager = h.spawnAgent(mcfg.(*agent.AgentConfig))
	return h
}

// config is an agent config on the scripted model.
func (h *harness) config(name, role string) *agent.AgentConfig {
	cfg := agent.NewConfig(name, role)
	cfg.Prompt = agent.PromptTemplate{Template: "You are {name}.", Params: map[string]string{"name": name}}
	cfg.Model = h.srv.ModelConfig("gpt-4.1")
	return cfg
}

// spawnAgent starts a BaseAgent in the team and waits for its start.
func (h *harness) spawnAgent(cfg *agent.AgentConfig) *message.Address {
	h.t.Helper()
	addr, err := h.team.Spawn(actortest.Context(h.t), &agent.BaseAgent{Env: h.env}, cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.sync(addr)
	return addr
}

// sync returns once the actor at addr has handled everything sent to it
// before (a proxy call queues behind them).
func (h *harness) sync(addr *message.Address) {
	h.t.Helper()
	if err := proxy.Do(actortest.Context(h.t), addr, func(*actor.Context, actor.Actor) error { return nil }); err != nil {
		h.t.Fatalf("sync with %s: %v", addr.Name(), err)
	}
}

// say sends content from @Human to an agent and waits until the agent
// has handled it (its Processed record).
func (h *harness) say(to *message.Address, intent agent.Intent, content string) *agent.AgentMessage {
	h.t.Helper()
	m := &agent.AgentMessage{Type: intent, Content: content}
	if err := agent.Say(actortest.Context(h.t), h.human, to, m); err != nil {
		h.t.Fatal(err)
	}
	h.waitProcessed(to, m.ID)
	return m
}

// waitProcessed waits for the agent's ProcessedMessage of message id.
func (h *harness) waitProcessed(by *message.Address, id [16]byte) {
	h.t.Helper()
	h.sub.waitFor(h.t, fmt.Sprintf("%s to process %x", by.Name(), id[:4]), func(ms []message.Message) bool {
		for _, m := range ms {
			if p, ok := m.(*message.ProcessedMessage); ok && p.MessageID == id && p.Sender.AgentID() == by.AgentID() {
				return true
			}
		}
		return false
	})
}

// waitFrom waits until who has emitted a record of type T: for what
// follows the Processed record that say waits for (a failed turn's
// WarningMessage or ErrorMessage), which a barrier may come before.
func waitFrom[T message.Message](h *harness, who *message.Address, what string) {
	h.t.Helper()
	h.sub.waitFor(h.t, what, func(ms []message.Message) bool {
		for _, m := range ms {
			if _, ok := m.(T); ok && m.Envelope().Sender != nil && m.Envelope().Sender.AgentID() == who.AgentID() {
				return true
			}
		}
		return false
	})
}

// barrier returns once every subscriber has seen all telemetry emitted
// before the call (a team query consumes the ledger first).
func (h *harness) barrier() {
	h.t.Helper()
	if _, err := h.team.Members(actortest.Context(h.t)); err != nil {
		h.t.Fatal(err)
	}
}

// expectHuman returns the next AgentMessage @Human receives.
func (h *harness) expectHuman() *agent.AgentMessage {
	h.t.Helper()
	select {
	case m := <-h.inbox:
		return m
	case <-time.After(actortest.Timeout):
		h.t.Fatal("timed out waiting for a message to @Human")
		return nil
	}
}

func (h *harness) noHuman() {
	h.t.Helper()
	select {
	case m := <-h.inbox:
		h.t.Fatalf("@Human got an unexpected %s: %q", m.Type, m.Content)
	default:
	}
}

// final is a scripted model answer sending msgs.
func final(msgs ...agent.OutboundRequest) llmtest.Step {
	data := `{"messages":[`
	for i, m := range msgs {
		if i > 0 {
			data += ","
		}
		data += fmt.Sprintf(`{"message_type":%q,"message":%q,"recipient":%q}`, m.MessageType, m.Message, m.Recipient)
	}
	return llmtest.Final(data + `]}`)
}

func out(intent agent.Intent, to, text string) agent.OutboundRequest {
	return agent.OutboundRequest{MessageType: intent, Recipient: to, Message: text}
}

// userTexts returns the user messages of a recorded request.
func userTexts(r *llmtest.Request) []string {
	var outs []string
	for _, m := range r.History() {
		if m.Role == "user" {
			outs = append(outs, m.Text())
		}
	}
	return outs
}

// lastUser returns the last user message of agent's i-th request.
func (h *harness) lastUser(agentName string, i int) string {
	h.t.Helper()
	reqs := h.srv.RequestsFor(agentName)
	if i >= len(reqs) {
		h.t.Fatalf("%s made %d requests, want more than %d", agentName, len(reqs), i)
	}
	u := userTexts(reqs[i])
	if len(u) == 0 {
		h.t.Fatalf("%s request %d has no user message", agentName, i)
	}
	return u[len(u)-1]
}

// recorder is a team subscriber keeping every message.
type recorder struct {
	mu     sync.Mutex
	msgs   []message.Message
	change chan struct{}
}

func newRecorder() *recorder { return &recorder{change: make(chan struct{}, 1)} }

func (r *recorder) OnMessage(m message.Message) {
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	r.mu.Unlock()
	select {
	case r.change <- struct{}{}:
	default:
	}
}

func (r *recorder) all() []message.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]message.Message(nil), r.msgs...)
}

func (r *recorder) waitFor(t testing.TB, what string, cond func([]message.Message) bool) []message.Message {
	t.Helper()
	deadline := time.NewTimer(actortest.Timeout)
	defer deadline.Stop()
	for {
		ms := r.all()
		if cond(ms) {
			return ms
		}
		select {
		case <-r.change:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// of returns the recorded telemetry of type T sent by who (nil: anyone).
func of[T message.Message](r *recorder, who *message.Address) []T {
	var outs []T
	for _, m := range r.all() {
		if t, ok := m.(T); ok && (who == nil || (m.Envelope().Sender != nil && m.Envelope().Sender.AgentID() == who.AgentID())) {
			outs = append(outs, t)
		}
	}
	return outs
}

// sentTo returns the AgentMessages sent to the agent named name.
func (r *recorder) sentTo(name string) []*agent.AgentMessage {
	var outs []*agent.AgentMessage
	for _, s := range of[*message.SentMessage](r, nil) {
		if am, ok := s.Message.(*agent.AgentMessage); ok && s.Recipient.Name() == name {
			outs = append(outs, am)
		}
	}
	return outs
}
