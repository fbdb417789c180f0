package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/internal/lineage"
	"github.com/akgentic/akgentic-go/internal/webauth"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// Options configure a Server. Person and Entry are required.
type Options struct {
	// Person is the team's person (a member embedding
	// orchestrator.UserProxy, such as agent.HumanProxy): every task is a
	// request from it, and the questions agents ask it are the tasks'
	// input-required.
	Person *message.Address
	// Entry is the member a task's first message goes to; its response
	// to the person completes the task.
	Entry *message.Address
	// Token, when set, lets requests that are not from loopback in: they
	// must carry it as an "Authorization: Bearer" header (the agent card
	// says so). Without a Token only loopback requests are served. The
	// agent card is served to anyone when a Token is set.
	Token string
	// Name and Description are the agent card's (default: the entry
	// member's name, and a sentence naming the team's roles).
	Name, Description string
	// URL is the address clients reach the server at, as the agent card
	// writes it (default: http://, or https:// on TLS, the request's Host
	// and /). Set it when the server is mounted under a prefix.
	URL string
	// MaxTasks is how many tasks are kept (default 1000): the oldest that
	// has ended is forgotten for a new one; while all are under way a new
	// task is refused.
	MaxTasks int
	// Logger receives the server's own warnings (default slog.Default()).
	Logger *slog.Logger
}

// Server is an http.Handler serving a team as an A2A agent: its agent card
// and the JSON-RPC binding of A2A 1.0, with the method names of 0.3 as
// well (answered in 0.3's shapes). Mount it anywhere (set Options.URL then).
//
// It serves:
//
//	GET  /.well-known/agent-card.json   the agent card
//	POST /                              JSON-RPC: SendMessage, SendStreamingMessage (SSE), GetTask,
//	                                    CancelTask, SubscribeToTask (SSE), ListTasks; message/send,
//	                                    message/stream, tasks/get, tasks/cancel, tasks/resubscribe
type Server struct {
	ctx    context.Context
	team   *orchestrator.Team
	opt    Options
	store  *store
	limits webauth.Limits // Serve's
}

// maxBody is the largest JSON-RPC request accepted.
const maxBody = 1 << 20

// New returns the A2A server of team, following it until ctx ends: then
// its streams end and its subscription is removed.
func New(ctx context.Context, team *orchestrator.Team, opt Options) (*Server, error) {
	if team == nil {
		return nil, errors.New("a2a: New: the team is nil")
	}
	if err := lineage.Check("a2a: New", team.ID(), opt.Person, opt.Entry); err != nil {
		return nil, err
	}
	if opt.MaxTasks < 0 {
		return nil, fmt.Errorf("a2a: New: Options.MaxTasks is %d; want 0 (the default, 1000) or more", opt.MaxTasks)
	}
	if opt.MaxTasks == 0 {
		opt.MaxTasks = 1000
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Name == "" {
		opt.Name = strings.TrimPrefix(opt.Entry.Name(), "@")
	}
	s := &Server{ctx: ctx, team: team, opt: opt, store: newStore(opt.Person.AgentID(), opt.Entry.AgentID(), opt.MaxTasks), limits: webauth.StreamLimits}
	if err := team.Subscribe(ctx, s.store); err != nil {
		return nil, fmt.Errorf("a2a: New: subscribing to team %s: %w", team.ID(), err)
	}
	go s.recancel(ctx)
	context.AfterFunc(ctx, func() {
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = team.Unsubscribe(uctx, s.store) // a stopped team has no subscribers left to remove
	})
	return s, nil
}

// rule is the server's access rule: loopback, else the bearer token.
func (s *Server) rule() webauth.Rule {
	return webauth.Rule{Token: s.opt.Token, Who: "a2a"}
}

// ServeHTTP serves the agent card and the JSON-RPC endpoint (see Server).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	card := r.URL.Path == "/.well-known/agent-card.json" || r.URL.Path == "/.well-known/agent.json"
	if !card || s.opt.Token == "" { // with a token, the card tells everyone how to present it
		if status, why := s.rule().Admit(r); status != 0 {
			http.Error(w, why, status)
			return
		}
	}
	switch {
	case card:
		if webauth.Allow(w, r, "a2a", http.MethodGet, http.MethodHead) {
			s.serveCard(w, r)
		}
	case r.URL.Path == "/" || r.URL.Path == "":
		if webauth.Allow(w, r, "a2a", http.MethodPost) {
			s.serveRPC(w, r)
		}
	default:
		http.Error(w, fmt.Sprintf("a2a: no such endpoint %q (the agent card is at /.well-known/agent-card.json, JSON-RPC at /)", r.URL.Path), http.StatusNotFound)
	}
}

// Serve serves the server on ln until ctx ends, then shuts it down (open
// streams end at once). It holds at most 512 connections, reads a request
// within 30 s and closes a connection idle for 120 s; a response has no
// write timeout (a stream, or a send waiting for its task, lasts as long
// as the task). It returns nil after a shutdown for ctx, or the error that
// stopped serving.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return webauth.Serve(ctx, ln, s, s.opt.Logger, "a2a", s.limits)
}

// baseURL is where clients reach the server.
func (s *Server) baseURL(r *http.Request) string {
	if s.opt.URL != "" {
		return s.opt.URL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/"
}

// serveCard writes the agent card: the team's cards are its skills.
func (s *Server) serveCard(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	cards, err := s.team.Cards(ctx)
	if err != nil {
		http.Error(w, "a2a: reading the team's cards: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	url := s.baseURL(r)
	yes, no := true, false
	c := agentCard{
		Name: s.opt.Name, Description: s.opt.Description, Version: "1.0.0",
		SupportedInterfaces: []agentInterface{{URL: url, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"}, {URL: url, ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"}},
		Capabilities:        capabilities{Streaming: &yes, PushNotifications: &no},
		DefaultInputModes:   []string{"text/plain", "application/json"},
		DefaultOutputModes:  []string{"text/plain"},
		URL:                 url, ProtocolVersion: "0.3.0", PreferredTransport: "JSONRPC",
	}
	var roles []string
	for _, card := range cards {
		role := card.Role()
		roles = append(roles, role)
		tags := card.Skills
		if len(tags) == 0 {
			tags = []string{role}
		}
		c.Skills = append(c.Skills, skill{ID: role, Name: role, Description: card.Description, Tags: tags})
	}
	if len(c.Skills) == 0 {
		role := s.opt.Entry.Role()
		c.Skills = []skill{{ID: "team", Name: role, Description: "Requests to the team's " + role + ".", Tags: []string{role}}}
	}
	if c.Description == "" {
		c.Description = fmt.Sprintf("A team of agents reached through %s.", s.opt.Entry.Name())
		if len(roles) > 0 {
			c.Description = fmt.Sprintf("A team of agents (%s) reached through %s.", strings.Join(roles, ", "), s.opt.Entry.Name())
		}
	}
	if s.opt.Token != "" {
		c.SecuritySchemes = map[string]any{"bearer": map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "Bearer", "description": "the server's token"}}}
		c.SecurityRequirements = []map[string]any{{"schemes": map[string]any{"bearer": map[string]any{"list": []string{}}}}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_ = json.NewEncoder(w).Encode(c)
}

// serveRPC answers one JSON-RPC request: a response, or an SSE stream
// for the streaming methods.
func (s *Server) serveRPC(w http.ResponseWriter, r *http.Request) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" && ct != "application/a2a+json" {
		http.Error(w, fmt.Sprintf("a2a: the body must be JSON-RPC (Content-Type: application/json), not %q", r.Header.Get("Content-Type")), http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		why := rpcErr(codeInvalidRequest, "reading the body: %v", err)
		if errors.As(err, new(*http.MaxBytesError)) {
			why = rpcErr(codeInvalidRequest, "the body is larger than %d bytes", maxBody)
		}
		writeRPC(w, nil, nil, why)
		return
	}
	req, rerr := parseRequest(body)
	var id json.RawMessage
	if req != nil {
		id = req.ID
	}
	if rerr == nil {
		rerr = version(r.Header.Get("A2A-Version"))
	}
	if rerr != nil {
		writeRPC(w, id, nil, rerr)
		return
	}
	v03 := strings.Contains(req.Method, "/")
	switch req.Method {
	case "SendStreamingMessage", "message/stream":
		s.streamSend(w, r, req, v03)
		return
	case "SubscribeToTask", "tasks/resubscribe":
		s.streamSubscribe(w, r, req, v03)
		return
	}
	result, rerr := s.call(r.Context(), req, v03)
	writeRPC(w, id, result, rerr)
}

// version refuses an A2A-Version this server does not speak (none means
// 0.3).
func version(v string) *rpcError {
	v = strings.TrimSpace(v)
	if v == "" || strings.HasPrefix(v, "0.3") || v == "1" || strings.HasPrefix(v, "1.0") {
		return nil
	}
	return &rpcError{Code: -32009, Message: fmt.Sprintf("A2A-Version %q is not supported: this agent speaks 1.0 and 0.3", v),
		Data: []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "VERSION_NOT_SUPPORTED", "domain": "a2a-protocol.org"}}}
}

// writeRPC writes a JSON-RPC response.
func writeRPC(w http.ResponseWriter, id json.RawMessage, result any, e *rpcError) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	resp := rpcResponse{JSONRPC: "2.0", ID: id, Result: result}
	if e != nil {
		resp.Result, resp.Error = nil, detailed(e)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// call runs a method that answers once.
func (s *Server) call(ctx context.Context, req *rpcRequest, v03 bool) (any, *rpcError) {
	switch req.Method {
	case "SendMessage", "message/send":
		var p sendParams
		if e := params(req, &p); e != nil {
			return nil, e
		}
		t, w, _, e := s.send(ctx, &p)
		if e != nil {
			return nil, e
		}
		if !p.immediate() {
			if e := s.settle(ctx, t, w); e != nil {
				return nil, e
			}
		} else if w != nil {
			s.store.unwatch(t, w)
		}
		snap := s.store.snapshot(t, p.historyLength(), false)
		if v03 {
			return task03(snap), nil
		}
		return streamResponse{Task: snap}, nil
	case "GetTask", "tasks/get":
		t, p, e := s.taskOf(req)
		if e != nil {
			return nil, e
		}
		return version03(s.store.snapshot(t, p.HistoryLength, false), v03), nil
	case "CancelTask", "tasks/cancel":
		t, _, e := s.taskOf(req)
		if e != nil {
			return nil, e
		}
		busy, approvals, e := s.store.cancel(t)
		if e != nil {
			return nil, e
		}
		s.cancelTurns(ctx, t.id, busy)
		for _, q := range approvals { // a call the task waited on does not run
			deny := &agent.AgentMessage{Type: agent.Response, Content: agent.Decision(false, "the A2A client canceled the task")}
			if err := agent.Answer(ctx, s.opt.Person, q, deny); err != nil && !errors.Is(err, actor.ErrActorDead) {
				s.opt.Logger.Warn("a2a: canceling a task: denying the approval it waited on", "task", t.id, "error", err)
			}
		}
		return version03(s.store.snapshot(t, nil, false), v03), nil
	case "ListTasks", "tasks/list":
		return s.list(req, v03)
	case "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig",
		"tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get", "tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete":
		return nil, rpcErr(codePushUnsupported, "%s: push notifications are not supported: stream (SendStreamingMessage) or poll (GetTask)", req.Method)
	case "GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard":
		return nil, rpcErr(codeExtendedCardNone, "%s: this agent has no extended card", req.Method)
	}
	return nil, rpcErr(codeMethodNotFound, "method %q not found (this agent serves SendMessage, SendStreamingMessage, GetTask, CancelTask, SubscribeToTask, ListTasks and their 0.3 names)", req.Method)
}

// recancel sends their cancel to the members whose turn on a message of a
// canceled task began after the cancel, until ctx ends.
func (s *Server) recancel(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.store.kick:
		}
		for _, tn := range s.store.takeRecancel() {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			s.cancelTurns(cctx, tn.task, []*message.Address{tn.member})
			cancel()
		}
	}
}

// cancelTurns sends the team's cancel to the members running turns on
// messages of task (busy holds the snapshot addresses the team's log has; the live ones
// are the team's members): their running turns end at once.
func (s *Server) cancelTurns(ctx context.Context, task string, busy []*message.Address) {
	if len(busy) == 0 {
		return
	}
	members, err := s.team.Members(ctx)
	if err != nil {
		s.opt.Logger.Warn("a2a: canceling a task: the team's members", "task", task, "error", err)
		return
	}
	for _, b := range busy {
		i := slices.IndexFunc(members, func(m *message.Address) bool { return m.AgentID() == b.AgentID() })
		if i < 0 {
			continue // gone: nothing runs there
		}
		cm := &agent.AgentMessage{Type: agent.Request, Content: "/cancel the A2A client canceled the task"}
		if err := agent.Say(ctx, s.opt.Person, members[i], cm); err != nil && !errors.Is(err, actor.ErrActorDead) {
			s.opt.Logger.Warn("a2a: canceling a task's turn", "task", task, "member", b.Name(), "error", err)
		}
	}
}

// version03 writes a task in the shape of the method's version.
func version03(t *wireTask, v03 bool) any {
	if v03 {
		return task03(t)
	}
	return t
}

// taskOf reads the params naming a task and finds it.
func (s *Server) taskOf(req *rpcRequest) (*task, *idParams, *rpcError) {
	var p idParams
	if e := params(req, &p); e != nil {
		return nil, nil, e
	}
	if p.ID == "" {
		return nil, nil, rpcErr(codeInvalidParams, "%s: params.id is missing", req.Method)
	}
	t := s.store.get(p.ID)
	if t == nil {
		return nil, nil, rpcErr(codeTaskNotFound, "task %q not found", p.ID)
	}
	return t, &p, nil
}

// list answers ListTasks.
func (s *Server) list(req *rpcRequest, v03 bool) (any, *rpcError) {
	var p listParams
	if len(req.Params) > 0 {
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, rpcErr(codeInvalidParams, "%s: params: %v", req.Method, err)
		}
	}
	size := 50
	if p.PageSize != nil {
		if *p.PageSize < 1 || *p.PageSize > 100 {
			return nil, rpcErr(codeInvalidParams, "%s: params.pageSize is %d; want 1 to 100", req.Method, *p.PageSize)
		}
		size = *p.PageSize
	}
	off, ok := pageToken(p.PageToken)
	if !ok {
		return nil, rpcErr(codeInvalidParams, "%s: params.pageToken %q is not a token this server gave", req.Method, p.PageToken)
	}
	state := state10(p.Status)
	if state == "TASK_STATE_UNSPECIFIED" {
		state = ""
	}
	tasks, total := s.store.list(p.ContextID, state, off, size, p.HistoryLength, p.IncludeArtifacts != nil && *p.IncludeArtifacts)
	res := listResult{Tasks: tasks, PageSize: size, TotalSize: total}
	if off+len(tasks) < total {
		res.NextPageToken = fmt.Sprint(off + len(tasks))
	}
	if v03 {
		for i := range res.Tasks {
			res.Tasks[i] = *task03(&res.Tasks[i])
		}
	}
	return res, nil
}

// send sends a client's message into the team: a new task's request to
// the entry member, an answer to the question a task is waiting on, or
// more input to a task under way. The task's stream is open from before
// the send (w; nil when the task had already ended).
func (s *Server) send(ctx context.Context, p *sendParams) (*task, *watcher, *wireTask, *rpcError) {
	m := p.Message
	if m == nil {
		return nil, nil, nil, rpcErr(codeInvalidParams, "params.message is missing")
	}
	if m.MessageID == "" {
		return nil, nil, nil, rpcErr(codeInvalidParams, "params.message.messageId is missing")
	}
	read10(m)
	if m.Role != "" && m.Role != roleUser {
		return nil, nil, nil, rpcErr(codeInvalidParams, "params.message.role is %q: a client's message has the user role", m.Role)
	}
	text, err := m.text()
	if err != nil {
		code := codeInvalidParams
		if len(m.Parts) > 0 {
			code = codeContentType
		}
		return nil, nil, nil, rpcErr(code, "params.%v", err)
	}
	if lineage.IsCancel(text) {
		return nil, nil, nil, rpcErr(codeInvalidParams, "params.message is %q, a cancel: use CancelTask", text)
	}
	decision, e := decisionOf(m)
	if e != nil {
		return nil, nil, nil, e
	}
	mid := message.NewID()
	out := &agent.AgentMessage{Base: message.Base{ID: mid}, Content: text}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if m.TaskID == "" {
		t, e := s.store.create(m.ContextID, *m, mid, s.opt.Entry)
		if e != nil {
			return nil, nil, nil, e
		}
		w, snap := s.store.watch(t, true)
		out.Type = agent.Request
		if err := agent.Say(sctx, s.opt.Person, s.opt.Entry, out); err != nil {
			if w != nil {
				s.store.unwatch(t, w)
			}
			s.store.drop(t)
			return nil, nil, nil, rpcErr(codeInternal, "the team could not take the task: %v", err)
		}
		return t, w, snap, nil
	}
	t := s.store.get(m.TaskID)
	if t == nil {
		return nil, nil, nil, rpcErr(codeTaskNotFound, "task %q not found (params.message.taskId)", m.TaskID)
	}
	q, e := s.store.continuing(t, m.ContextID, *m, mid, s.opt.Entry)
	if e != nil {
		return nil, nil, nil, e
	}
	w, snap := s.store.watch(t, true)
	if q != nil {
		if am, ok := q.(*agent.AgentMessage); ok && am.Approval != nil && decision != "" {
			out.Content = decision
		}
		out.Type = agent.Response
		err = agent.Answer(sctx, s.opt.Person, q, out)
	} else {
		out.Type = agent.Request
		err = agent.Say(sctx, s.opt.Person, s.opt.Entry, out)
	}
	if err != nil {
		s.store.fail(t, "the team could not take the message: "+err.Error())
	}
	return t, w, snap, nil
}

// settle waits until t ends or waits for input (w is its stream, closed
// then), or ctx ends.
func (s *Server) settle(ctx context.Context, t *task, w *watcher) *rpcError {
	for w != nil {
		select {
		case _, ok := <-w.ch:
			if ok {
				continue
			}
			w, _ = s.store.watch(t, true) // nil once settled; a new stream if this one fell behind
		case <-ctx.Done():
			s.store.unwatch(t, w)
			return rpcErr(codeInternal, "the request ended before task %s did (it goes on: GetTask %s)", t.id, t.id)
		case <-s.ctx.Done():
			s.store.unwatch(t, w)
			return rpcErr(codeInternal, "the server is shutting down (task %s)", t.id)
		}
	}
	return nil
}

// streamSend answers SendStreamingMessage: the task, then its events.
func (s *Server) streamSend(w http.ResponseWriter, r *http.Request, req *rpcRequest, v03 bool) {
	var p sendParams
	if e := params(req, &p); e != nil {
		writeRPC(w, req.ID, nil, e)
		return
	}
	t, wt, snap, e := s.send(r.Context(), &p)
	if e != nil {
		writeRPC(w, req.ID, nil, e)
		return
	}
	s.sse(w, r, req.ID, v03, t, wt, snap)
}

// streamSubscribe answers SubscribeToTask: the task, then its events
// until it ends.
func (s *Server) streamSubscribe(w http.ResponseWriter, r *http.Request, req *rpcRequest, v03 bool) {
	t, _, e := s.taskOf(req)
	if e != nil {
		writeRPC(w, req.ID, nil, e)
		return
	}
	wt, snap := s.store.watch(t, false)
	if wt == nil {
		writeRPC(w, req.ID, nil, rpcErr(codeUnsupported, "task %s is %s: there is nothing to subscribe to (GetTask reads it)", t.id, state03(snap.Status.State)))
		return
	}
	s.sse(w, r, req.ID, v03, t, wt, snap)
}

// sse writes a task stream: first the task, then each event as a JSON-RPC
// response, until the store closes the stream, the client leaves or the
// server's context ends.
func (s *Server) sse(w http.ResponseWriter, r *http.Request, id json.RawMessage, v03 bool, t *task, wt *watcher, first *wireTask) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	write := func(e streamResponse) bool {
		var result any = e
		if v03 {
			result = event03(e)
		}
		b, err := json.Marshal(rpcResponse{JSONRPC: "2.0", ID: id, Result: result})
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write(streamResponse{Task: first}) || wt == nil {
		if wt != nil {
			s.store.unwatch(t, wt)
		}
		return
	}
	for {
		select {
		case e, ok := <-wt.ch:
			if !ok {
				return
			}
			if !write(e) {
				s.store.unwatch(t, wt)
				return
			}
		case <-r.Context().Done():
			s.store.unwatch(t, wt)
			return
		case <-s.ctx.Done():
			s.store.unwatch(t, wt)
			return
		}
	}
}

// decisionOf reads a structured decision on an approval request from m's
// data parts ({"decision": "approve" or "deny", "reason": ...}, or
// "approved": true or false) as agent.Decision's text; "" when m has
// none (its text decides then).
func decisionOf(m *wireMessage) (string, *rpcError) {
	for i, p := range m.Parts {
		if len(p.Data) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(p.Data, &v); err != nil {
			return "", rpcErr(codeInvalidParams, "params.message.parts[%d].data is not JSON: %v", i, err)
		}
		approve, reason, ok, err := lineage.Decision(v)
		if err != nil {
			return "", rpcErr(codeInvalidParams, "params.message.parts[%d].data: %v", i, err)
		}
		if ok {
			return agent.Decision(approve, reason), nil
		}
	}
	return "", nil
}
