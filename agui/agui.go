package agui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/tool/planning"
	"github.com/akgentic/akgentic-go/internal/lineage"
	"github.com/akgentic/akgentic-go/internal/webauth"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Options configure a Handler. Person and Entry are required.
type Options struct {
	// Person is the team's person (a member embedding
	// orchestrator.UserProxy, such as agent.HumanProxy): the client's
	// input is sent as it, and the questions agents ask it are the runs'
	// interrupts.
	Person *message.Address
	// Entry is the member a run's message goes to; its response to the
	// person finishes the run.
	Entry *message.Address
	// Token, when set, lets requests that are not from loopback in: they
	// must carry it as an "Authorization: Bearer" header. Without a Token
	// only loopback requests are served.
	Token string
	// Logger receives the endpoint's own warnings (default slog.Default()).
	Logger *slog.Logger
}

// Handler is an http.Handler serving a team to an AG-UI client (such as
// @ag-ui/client's HttpAgent): each POST of a RunAgentInput is a run,
// answered with its events as Server-Sent Events.
type Handler struct {
	ctx    context.Context
	team   *orchestrator.Team
	opt    Options
	hub    *hub
	limits webauth.Limits // Serve's
}

// maxBody is the largest run input accepted.
const maxBody = 1 << 20

// New returns the AG-UI endpoint of team, following it until ctx ends:
// then its runs end and its subscription is removed.
func New(ctx context.Context, team *orchestrator.Team, opt Options) (*Handler, error) {
	if team == nil {
		return nil, errors.New("agui: New: the team is nil")
	}
	if err := lineage.Check("agui: New", team.ID(), opt.Person, opt.Entry); err != nil {
		return nil, err
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	h := &Handler{ctx: ctx, team: team, opt: opt, hub: newHub(opt.Person.AgentID(), opt.Entry.AgentID()), limits: webauth.StreamLimits}
	if err := team.Subscribe(ctx, h.hub); err != nil {
		return nil, fmt.Errorf("agui: New: subscribing to team %s: %w", team.ID(), err)
	}
	context.AfterFunc(ctx, func() {
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = team.Unsubscribe(uctx, h.hub) // a stopped team has no subscribers left to remove
	})
	// The roster and the board as they are now (the hub follows it from its subscription
	// on; a member seen twice is listed once).
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	members, err := team.Members(qctx)
	if err != nil {
		return nil, fmt.Errorf("agui: New: the members of team %s: %w", team.ID(), err)
	}
	states, err := team.States(qctx)
	if err != nil {
		return nil, fmt.Errorf("agui: New: the states of team %s: %w", team.ID(), err)
	}
	h.hub.mu.Lock()
	for _, m := range members {
		h.hub.join(m)
	}
	for _, st := range states {
		if b, ok := st.(*planning.Board); ok {
			h.hub.state.Tasks, _ = planning.TasksOf(b)
		}
	}
	h.hub.mu.Unlock()
	return h, nil
}

// ServeHTTP serves a run: POST / with a RunAgentInput.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if status, why := (webauth.Rule{Token: h.opt.Token, Who: "agui"}).Admit(r); status != 0 {
		http.Error(w, why, status)
		return
	}
	if r.URL.Path != "/" && r.URL.Path != "" {
		http.Error(w, fmt.Sprintf("agui: no such endpoint %q (runs are POSTed to /)", r.URL.Path), http.StatusNotFound)
		return
	}
	if !webauth.Allow(w, r, "agui", http.MethodPost) {
		return
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		http.Error(w, fmt.Sprintf("agui: the body must be a RunAgentInput (Content-Type: application/json), not %q", r.Header.Get("Content-Type")), http.StatusUnsupportedMediaType)
		return
	}
	var in runInput
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&in); err != nil {
		http.Error(w, "agui: the body is not a RunAgentInput: "+err.Error(), http.StatusBadRequest)
		return
	}
	act, cancels, err := h.action(&in)
	if err != nil {
		http.Error(w, "agui: "+err.Error(), http.StatusBadRequest)
		return
	}
	if in.ThreadID == "" {
		in.ThreadID = uuid.NewString()
	}
	if in.RunID == "" {
		in.RunID = uuid.NewString()
	}
	rn := h.hub.open(in.ThreadID, in.RunID)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	write := func(e event) bool {
		if e.Timestamp == 0 { // written here rather than queued by the hub
			e.Timestamp = time.Now().UnixMilli()
		}
		b, err := json.Marshal(e)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write(event{Type: runStarted, ThreadID: in.ThreadID, RunID: in.RunID}) || !write(event{Type: stateSnapshot, Snapshot: h.hub.snapshot()}) {
		h.hub.abandon(rn)
		return
	}
	sctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	err = act(sctx, func(to *message.Address) uuid.UUID { return h.hub.expect(rn, to) })
	cancel()
	switch {
	case err != nil:
		h.hub.fail(rn, "the team could not take the input: "+err.Error())
	case cancels: // a cancel starts no work: the run is over
		h.hub.end(rn, event{Type: runFinished, Outcome: &outcome{Type: "cancelled"}})
	}
	finished := false
	for {
		select {
		case e, ok := <-rn.ch:
			if !ok {
				if !finished {
					write(event{Type: runError, Message: "the run fell too far behind the team and was cut off; run again"})
				}
				return
			}
			finished = e.Type == runFinished || e.Type == runError
			if !write(e) {
				h.hub.abandon(rn)
				return
			}
		case <-r.Context().Done():
			h.hub.abandon(rn)
			return
		case <-h.ctx.Done():
			h.hub.abandon(rn)
			return
		}
	}
}

// action reads what a run's input asks: answers to the questions its
// resume names, else the last user message as a request to the entry
// member. The action sends them, as the person, each with an id from
// next (given the message's recipient); cancels says they are all cancels
// (of the asker's turn, or the person's "/cancel"), which start no work.
func (h *Handler) action(in *runInput) (act func(ctx context.Context, next func(to *message.Address) uuid.UUID) error, cancels bool, err error) {
	if len(in.Resume) > 0 {
		type answer struct {
			q    message.Message
			text string
		}
		var answers []answer
		seen := map[uuid.UUID]bool{}
		cancels = true
		for i, res := range in.Resume {
			qid, err := uuid.Parse(res.InterruptID)
			if err != nil {
				return nil, false, fmt.Errorf("resume[%d].interruptId %q is not an interrupt this endpoint gave", i, res.InterruptID)
			}
			q := h.hub.question(qid)
			if q == nil {
				return nil, false, fmt.Errorf("resume[%d].interruptId %s: no open question to the person has that id", i, res.InterruptID)
			}
			if seen[qid] {
				return nil, false, fmt.Errorf("resume[%d].interruptId %s: answered twice", i, res.InterruptID)
			}
			seen[qid] = true
			text, err := resumeText(q, res.Status, res.Payload)
			if err != nil {
				return nil, false, fmt.Errorf("resume[%d].%v", i, err)
			}
			answers = append(answers, answer{q, text})
			cancels = cancels && lineage.IsCancel(text)
		}
		return func(ctx context.Context, next func(*message.Address) uuid.UUID) error {
			ids := make([]uuid.UUID, len(answers)) // all the run's before any is sent
			for i, a := range answers {
				ids[i] = next(a.q.Envelope().Sender)
			}
			for i, a := range answers {
				m := &agent.AgentMessage{Base: message.Base{ID: ids[i]}, Type: agent.Response, Content: a.text}
				if err := agent.Answer(ctx, h.opt.Person, a.q, m); err != nil {
					return err
				}
			}
			return nil
		}, cancels, nil
	}
	for i := len(in.Messages) - 1; i >= 0; i-- {
		m := in.Messages[i]
		if m.Role != "user" {
			continue
		}
		text := payloadText(m.Content)
		if strings.TrimSpace(text) == "" {
			return nil, false, fmt.Errorf("messages[%d] (the last user message) has no text", i)
		}
		return func(ctx context.Context, next func(*message.Address) uuid.UUID) error {
			return agent.Say(ctx, h.opt.Person, h.opt.Entry, &agent.AgentMessage{Base: message.Base{ID: next(h.opt.Entry)}, Type: agent.Request, Content: text})
		}, lineage.IsCancel(text), nil
	}
	return nil, false, errors.New("the input has no user message and no resume: there is nothing to run")
}

// resumeText is the answer a resume entry gives question q: for an
// approval request, a structured decision or the payload's text (a
// cancelled one denies it); for another question the payload's text, or a
// cancel of the asker's turn.
func resumeText(q message.Message, status string, payload any) (string, error) {
	text := payloadText(payload)
	if am, ok := q.(*agent.AgentMessage); ok && am.Approval != nil {
		approve, reason, structured, err := lineage.Decision(payload)
		switch {
		case status == "cancelled":
			return agent.Decision(false, "the person cancelled the question"), nil
		case err != nil:
			return "", fmt.Errorf("payload: %v", err)
		case structured:
			return agent.Decision(approve, reason), nil
		}
	}
	switch status {
	case "cancelled":
		return "/cancel the person cancelled the question", nil
	case "resolved", "":
		if strings.TrimSpace(text) == "" {
			return "", errors.New("payload has no answer (a string, or an object with \"text\")")
		}
		return text, nil
	}
	return "", fmt.Errorf("status is %q; want resolved or cancelled", status)
}

// payloadText is the text of a message's content or a resume's payload:
// a string, the text parts of content parts, an object's "text" or
// "answer", else its JSON.
func payloadText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, p := range v {
			if m, ok := p.(map[string]any); ok && m["type"] == "text" {
				s, _ := m["text"].(string)
				b.WriteString(s)
			}
		}
		return b.String()
	case map[string]any:
		for _, k := range []string{"text", "answer"} {
			if s, ok := v[k].(string); ok {
				return s
			}
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Serve serves the endpoint on ln until ctx ends, then shuts it down
// (open runs end at once). It holds at most 512 connections, reads a
// request within 30 s and closes a connection idle for 120 s; a run's
// stream has no write timeout (it lasts as long as the run). It returns
// nil after a shutdown for ctx, or the error that stopped serving.
func (h *Handler) Serve(ctx context.Context, ln net.Listener) error {
	return webauth.Serve(ctx, ln, h, h.opt.Logger, "agui", h.limits)
}
