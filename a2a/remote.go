package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/internal/scrub"
	"github.com/akgentic/akgentic-go/message"
)

// RemoteKind is the kind name (actor.RegisterKind) of a member that is a
// remote A2A agent: the agent_class of its orchestrator.AgentCard, whose
// config is a *RemoteConfig.
const RemoteKind = "A2ARemoteAgent"

func init() {
	actor.RegisterKind(RemoteKind, func() actor.Actor { return &remoteAgent{} })
}

// RemoteConfig configures a member that is a remote A2A agent: the
// member's name and role, and where the agent is. Its card is fetched and
// checked when the member starts (a card that cannot be read, or offers
// no JSON-RPC interface of A2A 1.0 or 0.3, fails the start, so the hire).
//
// Each request or instruction the member gets becomes a task of the
// remote agent; the task's answer goes back to the sender as a response.
// A question of the remote agent (input-required) goes to the sender as a
// request, and the sender's response to it is the task's next message. A
// cancel of the member's turn, or its stop, cancels the remote task. A
// task the remote agent fails, or a remote agent that cannot be reached
// or goes away mid-task, is answered to the sender as a response saying
// so (the request can be sent again), never left waiting.
type RemoteConfig struct {
	actor.Config
	// URL is the remote agent's address (its card is at
	// URL/.well-known/agent-card.json), or its card's own URL (ending in
	// .json).
	URL string `json:"url" validate:"required,url"`
	// TokenEnv names the environment variable holding the bearer token
	// the remote agent asks for, if any: the token itself is never in
	// the config, so never in the team's log.
	TokenEnv string `json:"token_env,omitempty"`
	// Timeout bounds one task (default 10 minutes): a remote agent that
	// neither answers nor ends the task by then has the task canceled.
	Timeout time.Duration `json:"timeout,omitempty"`
}

// remoteState is what a remote member keeps: the remote tasks waiting for
// an answer from a member, by the member's agent id.
type remoteState struct {
	Pending map[string]pendingTask `json:"pending,omitempty"`
}

// pendingTask is a remote task waiting for input from a member.
type pendingTask struct {
	TaskID    string `json:"task_id"`
	ContextID string `json:"context_id"`
}

// remoteAgent is the member a RemoteConfig makes.
type remoteAgent struct {
	actor.Agent[RemoteConfig, remoteState]
	client   *rpcClient
	startErr error // why the start failed: every message is answered with it
}

var (
	_ actor.Starter = (*remoteAgent)(nil)
)

// defaultRemoteTimeout bounds one remote task by default.
const defaultRemoteTimeout = 10 * time.Minute

// OnStart fetches and checks the remote agent's card. A failure is
// reported (an ErrorMessage) and kept: the member answers every request
// with it.
func (r *remoteAgent) OnStart(c *actor.Context) error {
	r.startErr = r.start(c)
	return r.startErr
}

func (r *remoteAgent) start(c *actor.Context) error {
	cfg := r.Config()
	if cfg.URL == "" {
		return fmt.Errorf("a2a: remote agent %s: its config has no url", c.Self().Name())
	}
	rc := &rpcClient{http: &http.Client{}}
	if cfg.TokenEnv != "" {
		if rc.token = os.Getenv(cfg.TokenEnv); rc.token == "" {
			return fmt.Errorf("a2a: remote agent %s: token_env names %s, which is not set", c.Self().Name(), cfg.TokenEnv)
		}
		scrub.Register(rc.token) // a peer's error that echoes it is scrubbed
	}
	ctx, cancel := context.WithTimeout(c.Context(), 15*time.Second)
	defer cancel()
	card, err := rc.fetchCard(ctx, cfg.URL)
	if err != nil {
		return scrub.Error(fmt.Errorf("a2a: remote agent %s: %w", c.Self().Name(), err))
	}
	rc.card = card
	r.client = rc
	if r.State() == nil {
		return r.InitState(&remoteState{})
	}
	return nil
}

// Receive handles AgentMessages: each request or instruction becomes a
// remote task, each response to a question of a remote task its next
// message. A CancelMessage has done its work by the time its turn comes
// (it cancelled the turn and, through it, the remote task).
func (r *remoteAgent) Receive(c *actor.Context, msg any) (any, error) {
	switch m := msg.(type) {
	case *agent.AgentMessage:
		return nil, scrub.Error(r.handle(c, m)) // the peer's texts may echo a key
	case *message.CancelMessage:
		return nil, nil
	}
	return nil, fmt.Errorf("a2a: remote agent: %T: %w", msg, actor.ErrUnhandled)
}

// handle runs one message through the remote agent.
func (r *remoteAgent) handle(c *actor.Context, m *agent.AgentMessage) error {
	if m.Sender == nil {
		return fmt.Errorf("a2a: remote agent %s: a message without a sender has no one to answer", c.Self().Name())
	}
	if r.client == nil {
		err := r.startErr
		if err == nil {
			err = fmt.Errorf("a2a: remote agent %s: not started", c.Self().Name())
		}
		if m.Type == agent.Request || m.Type == agent.Instruction {
			why := fmt.Sprintf("The remote agent %s cannot take requests: %v", c.Self().Name(), err)
			if sendErr := c.Send(m.Sender, &agent.AgentMessage{Type: agent.Response, Content: why}); sendErr != nil {
				return errors.Join(err, sendErr)
			}
		}
		return err
	}
	asker := m.Sender.AgentID().String()
	st := r.State()
	p, waiting := st.Pending[asker]
	switch {
	case waiting && m.Type != agent.Request && m.Type != agent.Instruction:
		// The answer to the remote agent's question.
	case m.Type == agent.Request || m.Type == agent.Instruction:
		p = pendingTask{} // a new task (a question of this sender's left unanswered is dropped)
	default:
		c.Logger().Debug("a2a: remote agent: nothing to do with the message", "type", string(m.Type), "from", m.Sender.Name())
		return nil
	}
	timeout := r.Config().Timeout
	if timeout <= 0 {
		timeout = defaultRemoteTimeout
	}
	ctx, cancel := context.WithTimeout(c.Context(), timeout)
	defer cancel()
	out, err := r.run(ctx, m.Content, p)
	if ev, ok := usageEvent(out.usage, r.client.card.name); ok {
		c.NotifyEvent(ev) // recorded as the member's usage
	}
	if out.taskID != "" && err != nil && !terminal(out.state) {
		r.cancelRemote(c, out.taskID)
	}
	delete(st.Pending, asker)
	switch {
	case err != nil && c.Context().Err() != nil:
		// Cancelled or stopping: the cause names who.
		return &actor.WarningError{Msg: fmt.Sprintf("a2a: remote agent %s: the remote task was canceled", c.Self().Name()), Err: context.Cause(c.Context())}
	case err != nil:
		why := fmt.Sprintf("The remote agent %s could not finish the task: %v. The request can be sent again.", r.client.card.name, err)
		if sendErr := c.Send(m.Sender, &agent.AgentMessage{Type: agent.Response, Content: why}); sendErr != nil {
			return errors.Join(err, sendErr)
		}
		return &actor.WarningError{Msg: fmt.Sprintf("a2a: remote agent %s", c.Self().Name()), Err: err}
	case interrupted(out.state):
		if st.Pending == nil {
			st.Pending = map[string]pendingTask{}
		}
		st.Pending[asker] = pendingTask{TaskID: out.taskID, ContextID: out.contextID}
		if err := r.NotifyStateChange(); err != nil {
			return err
		}
		return c.Send(m.Sender, &agent.AgentMessage{Type: agent.Request, Content: out.text()})
	case out.state == stateCompleted:
		return c.Send(m.Sender, &agent.AgentMessage{Type: agent.Response, Content: out.text()})
	}
	text := out.text()
	if text == "" {
		text = "no reason given"
	}
	return c.Send(m.Sender, &agent.AgentMessage{Type: agent.Response, Content: fmt.Sprintf("The remote agent %s ended the task as %s: %s", r.client.card.name, state03(out.state), text)})
}

// outcome is what a remote task came to.
type outcome struct {
	taskID, contextID string
	state             string
	answer            string         // the artifacts' text
	status            string         // the last status message's text
	usage             map[string]any // the usage the remote agent reported (metadata.usage), if any
}

// text is the answer, else the status message.
func (o *outcome) text() string {
	if o.answer != "" {
		return o.answer
	}
	return o.status
}

// take reads one event into the outcome; false once the task has ended
// or a status update says it waits for input. A task that waits for input
// does not end a stream: the first event of the stream of a task's next
// message is the task as it was, still waiting (poll reads its states).
func (o *outcome) take(e streamResponse) bool {
	switch {
	case e.Task != nil:
		o.taskID, o.contextID, o.state = e.Task.ID, e.Task.ContextID, e.Task.Status.State
		o.keepUsage(e.Task.Metadata)
		if m := e.Task.Status.Message; m != nil {
			o.status = joined(m.Parts)
		}
		if len(e.Task.Artifacts) > 0 {
			o.answer = ""
			for _, a := range e.Task.Artifacts {
				o.answer += joined(a.Parts)
			}
		}
		return !terminal(o.state)
	case e.Message != nil: // a direct answer, no task
		o.state, o.status = stateCompleted, joined(e.Message.Parts)
		return false
	case e.StatusUpdate != nil:
		o.taskID, o.contextID, o.state = e.StatusUpdate.TaskID, e.StatusUpdate.ContextID, e.StatusUpdate.Status.State
		o.keepUsage(e.StatusUpdate.Metadata)
		if m := e.StatusUpdate.Status.Message; m != nil {
			o.status = joined(m.Parts)
		}
	case e.ArtifactUpdate != nil:
		if e.ArtifactUpdate.Append {
			o.answer += joined(e.ArtifactUpdate.Artifact.Parts)
		} else {
			o.answer = joined(e.ArtifactUpdate.Artifact.Parts)
		}
	}
	return !terminal(o.state) && !interrupted(o.state)
}

// cancelGrace is how long a cancelled turn waits for the task id of a
// message it sent before it gives up on canceling the remote task (the
// cancel came before the remote agent said which task the message is).
const cancelGrace = 10 * time.Second

// keepUsage keeps the usage a remote agent reports in an event's
// metadata ("usage": its token counts), the last one reported winning.
func (o *outcome) keepUsage(md map[string]any) {
	if u, ok := md["usage"].(map[string]any); ok {
		o.usage = u
	}
}

// usageEvent is the usage a remote agent reported as the team records a
// model's (llm.UsageEvent, so the team's usage summary counts it): token
// counts under either naming (inputTokens, input_tokens, prompt_tokens,
// and the output's likewise); false when it reported none.
func usageEvent(u map[string]any, name string) (llm.UsageEvent, bool) {
	count := func(keys ...string) int {
		for _, k := range keys {
			if f, ok := u[k].(float64); ok && f >= 0 {
				return int(f)
			}
		}
		return 0
	}
	ev := llm.UsageEvent{
		ModelName: name, ProviderName: "a2a", Requests: 1,
		InputTokens:  count("inputTokens", "input_tokens", "promptTokens", "prompt_tokens"),
		OutputTokens: count("outputTokens", "output_tokens", "completionTokens", "completion_tokens"),
	}
	if f, ok := u["cost"].(float64); ok && f >= 0 {
		ev.Cost = f
	}
	return ev, ev.InputTokens > 0 || ev.OutputTokens > 0 || ev.Cost > 0
}

// run sends text to the remote agent (the next message of p's task when
// p names one) and follows the task until it ends or waits for input:
// streamed when the card offers streaming, else sent and polled. When ctx
// ends (a cancel, a stop) the requests go on until the task's id is
// known (at most cancelGrace), so the caller can cancel the task.
func (r *remoteAgent) run(ctx context.Context, text string, p pendingTask) (outcome, error) {
	rc := r.client
	params := rc.outgoing(text, p.TaskID, p.ContextID)
	out := outcome{taskID: p.TaskID, contextID: p.ContextID}
	sctx, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stop(nil)
	var mu sync.Mutex
	known, ended := out.taskID != "", false
	var grace *time.Timer
	defer context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		ended = true
		if known {
			stop(context.Cause(ctx))
			return
		}
		grace = time.AfterFunc(cancelGrace, func() { stop(context.Cause(ctx)) })
	})()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		if grace != nil {
			grace.Stop()
		}
	}()
	take := func(e streamResponse) bool {
		more := out.take(e)
		mu.Lock()
		defer mu.Unlock()
		if !known && out.taskID != "" {
			known = true
			if ended {
				stop(context.Cause(ctx))
				return false
			}
		}
		return more
	}
	var err error
	if rc.card.streaming {
		err = rc.stream(sctx, "SendStreamingMessage", params, take)
		if err == nil && !terminal(out.state) && !interrupted(out.state) && ctx.Err() == nil {
			err = fmt.Errorf("%w (the task is %s)", errStreamEnded, state03(out.state))
		}
	} else {
		err = r.poll(sctx, params, take)
	}
	if ctx.Err() != nil {
		return out, context.Cause(ctx)
	}
	return out, err
}

// poll sends a message without waiting for its task, then reads the task
// until take says it has ended or waits for input.
func (r *remoteAgent) poll(ctx context.Context, params map[string]any, take func(streamResponse) bool) error {
	rc := r.client
	params["configuration"] = map[string]any{"returnImmediately": true, "blocking": false}
	raw, err := rc.call(ctx, "SendMessage", params)
	var id string
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		if err != nil {
			return err
		}
		e, err := rc.result(resultOf(raw, rc.card.v03))
		if err != nil {
			return err
		}
		more := take(e)
		if e.Task != nil {
			// A task that waits for input is the end of the wait, unless
			// it is the answer to the message that gave that input.
			more = more && !(interrupted(e.Task.Status.State) && (id != "" || params["message"].(*wireMessage).TaskID == ""))
			id = e.Task.ID
		}
		if !more || id == "" {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
		raw, err = rc.call(ctx, "GetTask", map[string]any{"id": id})
	}
}

// resultOf is a SendMessage or GetTask result as result reads it: 1.0's
// GetTask answers a bare task, which is wrapped.
func resultOf(raw json.RawMessage, v03 bool) json.RawMessage {
	if v03 {
		return raw
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(raw, &probe) == nil {
		if _, ok := probe["status"]; ok {
			b, _ := json.Marshal(map[string]json.RawMessage{"task": raw})
			return b
		}
	}
	return raw
}

// cancelRemote cancels a remote task the member gives up on (its turn
// was cancelled, it stops, or the task timed out).
func (r *remoteAgent) cancelRemote(c *actor.Context, taskID string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Context()), 5*time.Second)
	defer cancel()
	if _, err := r.client.call(ctx, "CancelTask", map[string]any{"id": taskID}); err != nil {
		c.Logger().Warn("a2a: remote agent: canceling the remote task", "task", taskID, "error", err)
	}
}
