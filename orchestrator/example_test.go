package orchestrator_test

// The six core examples of akgentic-core (examples/01..06 of the seed),
// ported as runnable Examples. Each builds a system, works through a team
// and shuts the system down; nothing waits with a sleep: channels, asks and
// team queries are the barriers (a team query sees everything an agent
// emitted before answering an ask).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// exampleTimeout bounds every wait of the examples.
const exampleTimeout = 10 * time.Second

// awaitValue returns the next value of ch, or panics when ctx ends first.
func awaitValue[T any](ctx context.Context, ch <-chan T) T {
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		panic(fmt.Sprintf("example: waiting for a %T: %v", *new(T), ctx.Err()))
	}
}

// memberNames returns the names of addrs, in order.
func memberNames(addrs []*message.Address) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.Name()
	}
	return out
}

// shutdown stops the system and reports a failure in the example's output.
func shutdown(ctx context.Context, sys *actor.System) {
	if err := sys.Shutdown(ctx); err != nil {
		fmt.Println("shutdown:", err)
	}
}

// ---------------------------------------------------------------------------
// 01 Hello world: messages, agents, the system.

// SayHello asks a greeter to greet the agent at To.
type SayHello struct {
	message.Base
	To *message.Address `json:"to"`
}

// Greeting is what a greeter sends.
type Greeting struct {
	message.Base
	Text string `json:"text"`
}

// Greeter greets whoever a SayHello names.
type Greeter struct{ actor.Base }

func (*Greeter) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *SayHello:
		return nil, c.Send(m.To, &Greeting{Text: "Hello, Akgentic!"})
	}
	return nil, actor.ErrUnhandled
}

// GreetingReceiver prints each greeting and reports who sent it.
type GreetingReceiver struct {
	actor.Base
	senders chan<- *message.Address
}

func (r *GreetingReceiver) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *Greeting:
		fmt.Printf("%s got %q from %s\n", c.Self().Name(), m.Text, c.Sender().Name())
		r.senders <- c.Sender()
		return nil, nil
	}
	return nil, actor.ErrUnhandled
}

// Hello world (example 01, scenarios 1 and 2): a team with a greeter and a
// receiver. The system tells the greeter whom to greet; the receiver sees
// the greeting and its sender, the greeter. Agents are spawned through the
// team so that they join it and report to its orchestrator.
func ExampleNew() {
	ctx, cancel := context.WithTimeout(context.Background(), exampleTimeout)
	defer cancel()
	sys := actor.NewSystem(actor.SystemConfig{})
	defer shutdown(ctx, sys)

	team, err := orchestrator.New(sys)
	if err != nil {
		panic(err)
	}
	senders := make(chan *message.Address, 1)
	receiver, err := team.Spawn(ctx, &GreetingReceiver{senders: senders}, &actor.Config{Name: "receiver", Role: "Receiver"})
	if err != nil {
		panic(err)
	}
	greeter, err := team.Spawn(ctx, &Greeter{}, &actor.Config{Name: "greeter", Role: "Greeter"})
	if err != nil {
		panic(err)
	}
	_ = sys.Tell(greeter, &SayHello{To: receiver})

	sender := awaitValue(ctx, senders)
	fmt.Println("sender is the greeter:", sender.AgentID() == greeter.AgentID())

	members, _ := team.Members(ctx)
	fmt.Println("members:", memberNames(members))
	// The greeter's send is in the team's log (a tell from the system is not).
	log, _ := team.Messages(ctx, orchestrator.Filter{})
	for _, s := range orchestrator.Select[*message.SentMessage](log) {
		fmt.Printf("sent: %s -> %s: %s\n", s.Sender.Name(), s.Recipient.Name(), message.TypeName(s.Message))
	}
	// Output:
	// receiver got "Hello, Akgentic!" from greeter
	// sender is the greeter: true
	// members: [receiver greeter]
	// sent: greeter -> receiver: Greeting
}

// ---------------------------------------------------------------------------
// 02 Request/response: replying to the sender, tell and ask.

// Calculate asks for the value of "a op b".
type Calculate struct {
	message.Base
	Expr string `json:"expr"`
}

// CalcResult is a calculator's reply.
type CalcResult struct {
	message.Base
	Expr  string `json:"expr"`
	Value int    `json:"value"`
}

// Calculator replies to each Calculate's sender with a CalcResult, and
// returns the value to an asker.
type Calculator struct{ actor.Base }

func (*Calculator) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *Calculate:
		var a, b int
		var op string
		if _, err := fmt.Sscanf(m.Expr, "%d %s %d", &a, &op, &b); err != nil {
			return nil, fmt.Errorf("calculator: %q: %w", m.Expr, err)
		}
		var v int
		switch op {
		case "+":
			v = a + b
		case "-":
			v = a - b
		case "*":
			v = a * b
		default:
			return nil, fmt.Errorf("calculator: %q: unknown operator %q", m.Expr, op)
		}
		if err := c.Send(c.Sender(), &CalcResult{Expr: m.Expr, Value: v}); err != nil {
			return nil, err
		}
		return v, nil
	}
	return nil, actor.ErrUnhandled
}

// CalcClient sends the expressions it is given to its calculator and
// hands the results it gets back to a channel.
type CalcClient struct {
	actor.Base
	calc    *message.Address
	results chan<- *CalcResult
}

func (cl *CalcClient) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *message.UserMessage:
		return nil, c.Send(cl.calc, &Calculate{Expr: m.Content})
	case *CalcResult:
		cl.results <- m
		return nil, nil
	}
	return nil, actor.ErrUnhandled
}

// Request/response (example 02, scenario 3): the calculator replies to the
// sender of each request. An agent's request gets its reply as a message;
// a request from outside the actor world gets it through a private
// endpoint's Listen, and an ask also gets the handler's return value.
func Example_requestResponse() {
	ctx, cancel := context.WithTimeout(context.Background(), exampleTimeout)
	defer cancel()
	sys := actor.NewSystem(actor.SystemConfig{})
	defer shutdown(ctx, sys)
	team, err := orchestrator.New(sys)
	if err != nil {
		panic(err)
	}
	calc, err := team.Spawn(ctx, &Calculator{}, &actor.Config{Name: "calculator", Role: "Calculator"})
	if err != nil {
		panic(err)
	}

	// Agent to agent: the client's request, the calculator's reply.
	results := make(chan *CalcResult, 1)
	client, err := team.Spawn(ctx, &CalcClient{calc: calc, results: results}, &actor.Config{Name: "client", Role: "Client"})
	if err != nil {
		panic(err)
	}
	_ = sys.Tell(client, message.NewUserMessage("10 + 5"))
	r := awaitValue(ctx, results)
	fmt.Printf("client: %s = %d (from %s)\n", r.Expr, r.Value, r.Sender.Name())

	// From outside: a private endpoint receives the replies to what it tells.
	p := sys.Private()
	defer p.Close()
	_ = p.Tell(calc, &Calculate{Expr: "6 * 7"})
	reply, err := p.Listen(ctx)
	if err != nil {
		panic(err)
	}
	r = reply.(*CalcResult)
	fmt.Printf("listen: %s = %d\n", r.Expr, r.Value)

	// Ask waits for the handler's return value; the reply message the
	// calculator sends to the asker lands in the endpoint as well.
	v, err := p.Ask(ctx, calc, &Calculate{Expr: "2 - 9"})
	fmt.Println("ask:", v, err)
	reply, _ = p.Listen(ctx)
	fmt.Println("listen after ask:", reply.(*CalcResult).Value)
	// Output:
	// client: 10 + 5 = 15 (from calculator)
	// listen: 6 * 7 = 42
	// ask: -7 <nil>
	// listen after ask: -7
}

// ---------------------------------------------------------------------------
// 03 Dynamic agents: children spawned at run time.

// Hire asks a manager to spawn n more workers.
type Hire struct {
	message.Base
	N int `json:"n"`
}

// Assign hands tasks to a manager, to spread over its workers.
type Assign struct {
	message.Base
	Tasks []string `json:"tasks"`
}

// Task is one unit of work for a worker.
type Task struct {
	message.Base
	Text string `json:"text"`
}

// TaskDone is a worker's report.
type TaskDone struct {
	message.Base
	Worker string `json:"worker"`
	Parent string `json:"parent"`
	Result string `json:"result"`
}

// Manager spawns a first worker when it starts and more on demand, then
// spreads tasks over them and collects their reports.
type Manager struct {
	actor.Base
	workers []*message.Address
	pending int
	reports []*TaskDone
	done    chan<- []*TaskDone
}

func (m *Manager) hire(c *actor.Context) error {
	name := fmt.Sprintf("worker-%d", len(m.workers)+1)
	w, err := c.Spawn(&Worker{}, &actor.Config{Name: name, Role: "Worker"})
	if err != nil {
		return err
	}
	m.workers = append(m.workers, w)
	return nil
}

// OnStart runs on the manager's goroutine before its first message: the
// place to spawn the children it always has.
func (m *Manager) OnStart(c *actor.Context) error { return m.hire(c) }

func (m *Manager) Receive(c *actor.Context, msg any) (any, error) {
	switch msg := msg.(type) {
	case *Hire:
		for range msg.N {
			if err := m.hire(c); err != nil {
				return nil, err
			}
		}
		return len(m.workers), nil
	case *Assign:
		for i, t := range msg.Tasks {
			if err := c.Send(m.workers[i%len(m.workers)], &Task{Text: t}); err != nil {
				return nil, err
			}
			m.pending++
		}
		return nil, nil
	case *TaskDone:
		m.reports = append(m.reports, msg)
		if m.pending--; m.pending == 0 {
			m.done <- m.reports
			m.reports = nil
		}
		return nil, nil
	}
	return nil, actor.ErrUnhandled
}

// Worker does a task and reports to the task's sender.
type Worker struct{ actor.Base }

func (*Worker) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *Task:
		return nil, c.Send(c.Sender(), &TaskDone{
			Worker: c.Self().Name(),
			Parent: c.Parent().Name(),
			Result: strings.ToUpper(m.Text),
		})
	}
	return nil, actor.ErrUnhandled
}

// Dynamic agents (example 03): a manager spawns one worker in OnStart and
// two more when asked to; children join the manager's team, so the roster
// shows them all.
func Example_dynamicAgents() {
	ctx, cancel := context.WithTimeout(context.Background(), exampleTimeout)
	defer cancel()
	sys := actor.NewSystem(actor.SystemConfig{})
	defer shutdown(ctx, sys)
	team, err := orchestrator.New(sys)
	if err != nil {
		panic(err)
	}
	done := make(chan []*TaskDone, 1)
	manager, err := team.Spawn(ctx, &Manager{done: done}, &actor.Config{Name: "manager", Role: "Manager"})
	if err != nil {
		panic(err)
	}

	// An ask returns once the handler has run, so the new workers have
	// joined the team by then (and OnStart ran before it).
	n, err := sys.Ask(ctx, manager, &Hire{N: 2})
	if err != nil {
		panic(err)
	}
	fmt.Println("workers:", n)
	members, _ := team.Members(ctx)
	fmt.Println("members:", memberNames(members))
	for _, m := range members[1:] {
		fmt.Printf("%s: role %s, same team: %v\n", m.Name(), m.Role(), m.TeamID() == team.ID())
	}

	_ = sys.Tell(manager, &Assign{Tasks: []string{"alpha", "beta", "gamma"}})
	reports := awaitValue(ctx, done)
	slices.SortFunc(reports, func(a, b *TaskDone) int { return strings.Compare(a.Worker, b.Worker) })
	for _, r := range reports {
		fmt.Printf("%s (child of %s): %s\n", r.Worker, r.Parent, r.Result)
	}
	// Output:
	// workers: 3
	// members: [manager worker-1 worker-2 worker-3]
	// worker-1: role Worker, same team: true
	// worker-2: role Worker, same team: true
	// worker-3: role Worker, same team: true
	// worker-1 (child of manager): ALPHA
	// worker-2 (child of manager): BETA
	// worker-3 (child of manager): GAMMA
}

// ---------------------------------------------------------------------------
// 04 Stateful agents: typed config and state, published to the team.

// CounterConfig is the counter's typed config: actor.Config plus its own
// fields.
type CounterConfig struct {
	actor.Config
	MaxIncrement int    `json:"max_increment"`
	Prefix       string `json:"prefix"`
}

// CounterState is the counter's typed state.
type CounterState struct {
	Count   int      `json:"count"`
	History []string `json:"history"`
}

// Increment adds By to the count, clamped to the config's MaxIncrement.
type Increment struct {
	message.Base
	By int `json:"by"`
}

// ResetCount sets the count back to zero.
type ResetCount struct{ message.Base }

// Counter keeps a count and its history in an observed state: every change
// reaches the orchestrator at the end of the turn that made it.
type Counter struct {
	actor.Agent[CounterConfig, CounterState]
}

func (a *Counter) OnStart(c *actor.Context) error {
	if err := a.InitState(&CounterState{History: []string{}}); err != nil {
		return err
	}
	return a.ObserveState() // publish to the orchestrator from now on
}

func (a *Counter) Receive(c *actor.Context, msg any) (any, error) {
	cfg, s := a.Config(), a.State()
	prefix := "[" + cfg.Prefix + "] "
	switch m := msg.(type) {
	case *Increment:
		by := min(m.By, cfg.MaxIncrement)
		s.Count += by // direct mutation: published at the end of the turn
		entry := fmt.Sprintf("%s+%d", prefix, by)
		if by != m.By {
			entry += fmt.Sprintf(" (asked %d, max %d)", m.By, cfg.MaxIncrement)
		}
		s.History = append(s.History, entry)
		return s.Count, nil
	case *ResetCount:
		// UpdateState merges fields into a new state and publishes it now.
		if err := a.UpdateState(map[string]any{"count": 0, "history": append(s.History, prefix+"reset")}); err != nil {
			return nil, err
		}
		return a.State().Count, nil
	}
	return nil, actor.ErrUnhandled
}

// Stateful agents (example 04, scenario 35): a counter with a typed config
// (MaxIncrement 5, Prefix "DEMO") and state (Count, History). Increments of
// 5, 3, 10 (clamped to 5), a reset and 10 (clamped) leave the count at 5;
// the team's States shows the published state.
func Example_statefulAgents() {
	ctx, cancel := context.WithTimeout(context.Background(), exampleTimeout)
	defer cancel()
	sys := actor.NewSystem(actor.SystemConfig{})
	defer shutdown(ctx, sys)
	team, err := orchestrator.New(sys)
	if err != nil {
		panic(err)
	}
	counter, err := team.Spawn(ctx, &Counter{}, &CounterConfig{
		Config:       actor.Config{Name: "counter", Role: "Counter"},
		MaxIncrement: 5,
		Prefix:       "DEMO",
	})
	if err != nil {
		panic(err)
	}

	for _, m := range []any{&Increment{By: 5}, &Increment{By: 3}, &Increment{By: 10}, &ResetCount{}, &Increment{By: 10}} {
		n, err := sys.Ask(ctx, counter, m)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s -> %d\n", message.TypeName(m), n)
	}

	// The state of a turn is published before the ask is answered, so the
	// team has the latest one.
	states, _ := team.States(ctx)
	s := states[counter.AgentID()].(*CounterState)
	fmt.Println("states:", len(states))
	fmt.Println("count:", s.Count)
	for _, h := range s.History {
		fmt.Println(" ", h)
	}
	// Output:
	// Increment -> 5
	// Increment -> 8
	// Increment -> 13
	// ResetCount -> 0
	// Increment -> 5
	// states: 1
	// count: 5
	//   [DEMO] +5
	//   [DEMO] +3
	//   [DEMO] +5 (asked 10, max 5)
	//   [DEMO] reset
	//   [DEMO] +5 (asked 10, max 5)
}

// ---------------------------------------------------------------------------
// 05 Multi-agent workflow: a coordinator, two specialists, a person in the
// loop through a user proxy, and a subscriber watching the telemetry.

// StartProject starts the coordinator's workflow on a topic.
type StartProject struct {
	message.Base
	Topic string `json:"topic"`
}

// ResearchRequest asks the researcher for findings on a topic.
type ResearchRequest struct {
	message.Base
	Topic string `json:"topic"`
}

// ResearchResult carries the researcher's findings.
type ResearchResult struct {
	message.Base
	Findings []string `json:"findings"`
}

// WriteRequest asks the writer for a draft from findings.
type WriteRequest struct {
	message.Base
	Topic    string   `json:"topic"`
	Findings []string `json:"findings"`
}

// DraftReady carries the writer's draft.
type DraftReady struct {
	message.Base
	Draft string `json:"draft"`
}

// GetStatus asks the coordinator for its status.
type GetStatus struct{ message.Base }

// CoordinatorState is the workflow's progress.
type CoordinatorState struct {
	Status string `json:"status"`
	Topic  string `json:"topic"`
	Draft  string `json:"draft"`
}

// Coordinator drives the workflow: research, writing, then the person's
// approval. It finds its teammates through the team's roster.
type Coordinator struct {
	actor.Agent[actor.Config, CoordinatorState]
	done chan<- struct{}
}

func (a *Coordinator) OnStart(c *actor.Context) error {
	if err := a.InitState(&CoordinatorState{Status: "idle"}); err != nil {
		return err
	}
	return a.ObserveState()
}

// teammate returns the first member of the team that match says is the one.
func teammate(c *actor.Context, match func(*message.Address) bool) (*message.Address, error) {
	ctx, cancel := context.WithTimeout(context.Background(), exampleTimeout)
	defer cancel()
	members, err := orchestrator.Of(c.Orchestrator()).Members(ctx)
	if err != nil {
		return nil, err
	}
	if i := slices.IndexFunc(members, match); i >= 0 {
		return members[i], nil
	}
	return nil, fmt.Errorf("%s: no such teammate", c.Self().Name())
}

func withRole(role string) func(*message.Address) bool {
	return func(a *message.Address) bool { return a.Role() == role }
}

func (a *Coordinator) Receive(c *actor.Context, msg any) (any, error) {
	s := a.State()
	switch m := msg.(type) {
	case *StartProject:
		s.Topic, s.Status = m.Topic, "researching"
		fmt.Printf("coordinator: researching %q\n", m.Topic)
		researcher, err := teammate(c, withRole("Researcher"))
		if err != nil {
			return nil, err
		}
		return nil, c.Send(researcher, &ResearchRequest{Topic: m.Topic})
	case *ResearchResult:
		s.Status = "writing"
		writer, err := teammate(c, withRole("Writer"))
		if err != nil {
			return nil, err
		}
		return nil, c.Send(writer, &WriteRequest{Topic: s.Topic, Findings: m.Findings})
	case *DraftReady:
		s.Draft, s.Status = m.Draft, "awaiting approval"
		human, err := teammate(c, (*message.Address).IsUserProxy)
		if err != nil {
			return nil, err
		}
		return nil, c.Send(human, message.NewUserMessage("Approve the draft on "+s.Topic+"?"))
	case *message.ResultMessage: // the person's answer
		if m.Content == "Approved" {
			s.Status = "complete"
		} else {
			s.Status = "revising"
		}
		close(a.done)
		return nil, nil
	case *GetStatus:
		return s.Status, nil
	}
	return nil, actor.ErrUnhandled
}

// ResearcherState counts the researches done.
type ResearcherState struct {
	Researched int `json:"researched"`
}

// Researcher answers research requests with canned findings.
type Researcher struct {
	actor.Agent[actor.Config, ResearcherState]
}

func (a *Researcher) OnStart(c *actor.Context) error {
	if err := a.InitState(&ResearcherState{}); err != nil {
		return err
	}
	return a.ObserveState()
}

func (a *Researcher) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *ResearchRequest:
		findings := []string{m.Topic + " isolate state", m.Topic + " share nothing", m.Topic + " talk by messages"}
		a.State().Researched++
		fmt.Printf("researcher: %d findings\n", len(findings))
		return nil, c.Send(c.Sender(), &ResearchResult{Findings: findings})
	}
	return nil, actor.ErrUnhandled
}

// WriterState counts the drafts written.
type WriterState struct {
	Drafts int `json:"drafts"`
}

// Writer turns findings into a draft.
type Writer struct {
	actor.Agent[actor.Config, WriterState]
}

func (a *Writer) OnStart(c *actor.Context) error {
	if err := a.InitState(&WriterState{}); err != nil {
		return err
	}
	return a.ObserveState()
}

func (a *Writer) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *WriteRequest:
		a.State().Drafts++
		draft := fmt.Sprintf("Report on %s: %s.", m.Topic, strings.Join(m.Findings, "; "))
		fmt.Printf("writer: drafted %d words\n", len(strings.Fields(draft)))
		return nil, c.Send(c.Sender(), &DraftReady{Draft: draft})
	}
	return nil, actor.ErrUnhandled
}

// SimulatedUserProxy stands for a person who approves every draft. A real
// one would leave the UserMessage to a subscriber that shows it in a user
// interface, and the interface would answer with
// orchestrator.ProcessHumanInput; here the "person" answers at once, with
// the Reply that ProcessHumanInput calls.
type SimulatedUserProxy struct {
	orchestrator.UserProxy
}

func (p *SimulatedUserProxy) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *message.UserMessage:
		fmt.Printf("%s asked: %s\n", c.Self().Name(), m.Content)
		fmt.Printf("%s answers: Approved\n", c.Self().Name())
		return nil, p.Reply(c, "Approved", m)
	}
	return p.UserProxy.Receive(c, msg)
}

// MessageCounter is a subscriber: it counts the team's telemetry by type
// and keeps the questions put to the person, as a user interface would.
// OnMessage runs on the orchestrator's goroutine; the mutex is for readers.
type MessageCounter struct {
	mu        sync.Mutex
	total     int
	questions []string
}

func (s *MessageCounter) OnMessage(m message.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total++
	if sent, ok := m.(*message.SentMessage); ok && sent.Recipient.IsUserProxy() {
		if um, ok := sent.Message.(*message.UserMessage); ok {
			s.questions = append(s.questions, um.Content)
		}
	}
}

func (s *MessageCounter) seen() (int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total, slices.Clone(s.questions)
}

// Multi-agent workflow (example 05, scenarios 53 and 57): the coordinator
// has the researcher research, the writer write, and the person approve
// through the user proxy, then reaches status "complete". A subscriber
// given to New sees the whole telemetry stream.
func Example_multiAgent() {
	ctx, cancel := context.WithTimeout(context.Background(), exampleTimeout)
	defer cancel()
	sys := actor.NewSystem(actor.SystemConfig{})
	defer shutdown(ctx, sys)
	counter := &MessageCounter{}
	team, err := orchestrator.New(sys, orchestrator.WithSubscribers(counter))
	if err != nil {
		panic(err)
	}
	done := make(chan struct{})
	spawn := func(a actor.Actor, name, role string) *message.Address {
		addr, err := team.Spawn(ctx, a, &actor.Config{Name: name, Role: role})
		if err != nil {
			panic(err)
		}
		return addr
	}
	coordinator := spawn(&Coordinator{done: done}, "coordinator", "Coordinator")
	spawn(&Researcher{}, "researcher", "Researcher")
	spawn(&Writer{}, "writer", "Writer")
	spawn(&SimulatedUserProxy{}, "@Human", "UserProxy")

	_ = sys.Tell(coordinator, &StartProject{Topic: "actors"})
	awaitValue(ctx, done)

	// The ask is answered after the workflow's last turn ended, state
	// published; the team's queries see everything emitted until then.
	status, err := sys.Ask(ctx, coordinator, &GetStatus{})
	if err != nil {
		panic(err)
	}
	fmt.Println("status:", status)
	states, _ := team.States(ctx)
	fmt.Println("coordinator state:", states[coordinator.AgentID()].(*CoordinatorState).Status)
	fmt.Println("tracked states:", len(states))
	members, _ := team.Members(ctx)
	fmt.Println("roster:", memberNames(members))
	log, _ := team.Messages(ctx, orchestrator.Filter{})
	fmt.Println("log holds at least 12 messages:", len(log) >= 12)
	for _, s := range orchestrator.Select[*message.SentMessage](log) {
		fmt.Printf("  %s -> %s: %s\n", s.Sender.Name(), s.Recipient.Name(), message.TypeName(s.Message))
	}
	total, questions := counter.seen()
	fmt.Println("subscriber counted messages:", total > 0)
	fmt.Println("subscriber saw the question:", questions)
	// Output:
	// coordinator: researching "actors"
	// researcher: 3 findings
	// writer: drafted 13 words
	// @Human asked: Approve the draft on actors?
	// @Human answers: Approved
	// status: complete
	// coordinator state: complete
	// tracked states: 3
	// roster: [coordinator researcher writer @Human]
	// log holds at least 12 messages: true
	//   coordinator -> researcher: ResearchRequest
	//   researcher -> coordinator: ResearchResult
	//   coordinator -> writer: WriteRequest
	//   writer -> coordinator: DraftReady
	//   coordinator -> @Human: UserMessage
	//   @Human -> coordinator: ResultMessage
	// subscriber counted messages: true
	// subscriber saw the question: [Approve the draft on actors?]
}

// ---------------------------------------------------------------------------
// 06 Agent cards: a catalog of agent kinds, searched and hired from.

// WriterConfig is the typed config of the card's writer.
type WriterConfig struct {
	actor.Config
	Style string `json:"style"`
}

// ResearchAgent, WriterAgent and ReviewerAgent are the kinds the cards
// describe; a card names its kind by the name registered with
// actor.RegisterKind.
type (
	ResearchAgent struct{ actor.Base }
	ReviewerAgent struct{ actor.Base }
	WriterAgent   struct {
		actor.Agent[WriterConfig, actor.NoState]
	}
)

func init() {
	actor.RegisterKind("examples.ResearchAgent", func() actor.Actor { return &ResearchAgent{} })
	actor.RegisterKind("examples.WriterAgent", func() actor.Actor { return &WriterAgent{} })
	actor.RegisterKind("examples.ReviewerAgent", func() actor.Actor { return &ReviewerAgent{} })
}

func (*ResearchAgent) Receive(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }
func (*ReviewerAgent) Receive(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }

// Receive writes a report on the topic a UserMessage names, in the style
// of its config.
func (a *WriterAgent) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *message.UserMessage:
		return fmt.Sprintf("[%s] a report on %s", a.Config().Style, m.Content), nil
	}
	return nil, actor.ErrUnhandled
}

func mustCard(c orchestrator.AgentCard) *orchestrator.AgentCard {
	card, err := orchestrator.NewAgentCard(c)
	if err != nil {
		panic(err)
	}
	return card
}

func cardRoleList(cards []*orchestrator.AgentCard) []string {
	out := make([]string, len(cards))
	for i, c := range cards {
		out[i] = c.Role()
	}
	return out
}

// Agent cards (example 06): register cards describing agent kinds, query
// the catalog by role and by skill, and hire an agent from a card: a new
// actor of the card's kind with its own copy of the card's config.
func Example_agentCards() {
	ctx, cancel := context.WithTimeout(context.Background(), exampleTimeout)
	defer cancel()
	sys := actor.NewSystem(actor.SystemConfig{})
	defer shutdown(ctx, sys)
	team, err := orchestrator.New(sys)
	if err != nil {
		panic(err)
	}

	err = team.Register(ctx,
		mustCard(orchestrator.AgentCard{
			AgentClass:  "examples.ResearchAgent",
			Description: "Performs web research and data gathering",
			Skills:      []string{"web_search", "pdf_extraction"},
			Config:      &actor.Config{Name: "researcher", Role: "ResearchAgent"},
		}),
		mustCard(orchestrator.AgentCard{
			AgentClass:  "examples.WriterAgent",
			Description: "Writes reports",
			Skills:      []string{"writing", "editing"},
			Config:      &WriterConfig{Config: actor.Config{Name: "writer", Role: "WriterAgent"}, Style: "concise"},
			CanBeHired:  true,
		}),
		mustCard(orchestrator.AgentCard{
			AgentClass:  "examples.ReviewerAgent",
			Description: "Reviews drafts",
			Skills:      []string{"editing", "fact_checking"},
			Config:      &actor.Config{Name: "reviewer", Role: "ReviewerAgent"},
			RoutesTo:    []string{"WriterAgent"},
		}),
	)
	if err != nil {
		panic(err)
	}

	roles, _ := team.Roles(ctx)
	fmt.Println("roles:", roles)
	skills, _ := team.Skills(ctx)
	fmt.Println("skills:", skills)
	research, _ := team.Card(ctx, "ResearchAgent")
	fmt.Println("ResearchAgent:", research.Description)
	editors, _ := team.CardsWithSkill(ctx, "editing")
	fmt.Println("editing:", cardRoleList(editors))
	translator, _ := team.Card(ctx, "Translator")
	fmt.Println("Translator card:", translator)
	reviewer, _ := team.Card(ctx, "ReviewerAgent")
	fmt.Println("reviewer routes to writer, researcher:", reviewer.CanRouteTo("WriterAgent"), reviewer.CanRouteTo("ResearchAgent"))

	// Hire a writer: a new actor of the card's kind, spawned with a copy of
	// the card's config (changing the copy leaves the card as it was).
	card, _ := team.Card(ctx, "WriterAgent")
	fmt.Println("writer can be hired:", card.CanBeHired)
	a, err := card.NewActor()
	if err != nil {
		panic(err)
	}
	cfg, err := card.ConfigCopy()
	if err != nil {
		panic(err)
	}
	cfg.(*WriterConfig).Name = "writer-1"
	writer, err := team.Spawn(ctx, a, cfg)
	if err != nil {
		panic(err)
	}
	fmt.Printf("hired: %s (role %s, kind %s)\n", writer.Name(), writer.Role(), writer.ActorType())
	report, err := sys.Ask(ctx, writer, message.NewUserMessage("actors"))
	fmt.Println(report, err)
	card, _ = team.Card(ctx, "WriterAgent")
	fmt.Println("card config name:", card.Config.(*WriterConfig).Name)
	members, _ := team.Members(ctx)
	fmt.Println("members:", memberNames(members))
	// Output:
	// roles: [ResearchAgent WriterAgent ReviewerAgent]
	// skills: [editing fact_checking pdf_extraction web_search writing]
	// ResearchAgent: Performs web research and data gathering
	// editing: [WriterAgent ReviewerAgent]
	// Translator card: <nil>
	// reviewer routes to writer, researcher: true false
	// writer can be hired: true
	// hired: writer-1 (role WriterAgent, kind examples.WriterAgent)
	// [concise] a report on actors <nil>
	// card config name: writer
	// members: [writer-1]
}
