package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/akgentic/akgentic-go/agent/llm"
)

// rosterRouter is the default router: it finds a system-message line that
// ends with " - [you]" (the roster's line for the calling agent, e.g.
// "@Manager (role: Manager) - [you]") and returns the name before
// " (role:" (or before " - [you]" when there is no role).
func rosterRouter(r *Request) string {
	for _, text := range r.SystemTexts() {
		for line := range strings.Lines(text) {
			line = strings.TrimRight(line, "\r\n")
			name, ok := strings.CutSuffix(line, " - [you]")
			if !ok {
				continue
			}
			if i := strings.Index(name, " (role:"); i >= 0 {
				name = name[:i]
			}
			return strings.TrimLeft(strings.TrimSpace(name), "-* ")
		}
	}
	return ""
}

// Option configures a [Server].
type Option func(*Server)

// WithRouter replaces the router, which picks the scripted model of a
// request: it returns the agent key of [Server.Model], "" for the default
// model. The default router finds the system-message line that ends with
// " - [you]" (the roster's line for the calling agent, e.g. "@Manager
// (role: Manager) - [you]") and returns the name before " (role:" (or
// before " - [you]" when there is no role).
func WithRouter(r func(*Request) string) Option { return func(s *Server) { s.route = r } }

// withAPIKey makes the server answer 401 invalid_api_key unless the request
// carries "Authorization: Bearer <key>".
func withAPIKey(key string) Option { return func(s *Server) { s.apiKey = key } }

// WithRecorder writes every exchange to w as one JSON line, the format
// [Server.Replay] reads: {"agent": the routing key, "request": the request
// body, "status": the answer's HTTP status, "retry_after": its Retry-After
// header if any, "response": the answer body; for a streamed answer, the
// chat completion it streamed}.
func WithRecorder(w io.Writer) Option { return func(s *Server) { s.recorder = w } }

// WithReporter reports each request the server could not accept because
// the test did not expect it (replay mismatches, failed Step.Check
// checks) to r, typically the test's *testing.T, in addition to recording
// it in [Server.Failures].
func WithReporter(r interface{ Errorf(string, ...any) }) Option {
	return func(s *Server) { s.reporter = r }
}

// Server is a fake OpenAI-compatible chat-completions endpoint. Create it
// with [NewServer] and Close it when done. It is safe for concurrent use.
type Server struct {
	ts       *httptest.Server
	route    func(*Request) string
	apiKey   string
	recorder io.Writer
	reporter interface{ Errorf(string, ...any) }
	done     chan struct{}

	mu         sync.Mutex
	models     map[string]*Model
	summarizer *Model
	requests   []*Request
	failures   []string
	replay     []exchange
	replaying  bool
	seq        int
	closeOnce  sync.Once
}

// NewServer starts a fake server on a loopback port.
func NewServer(opts ...Option) *Server {
	s := &Server{
		route:      rosterRouter,
		done:       make(chan struct{}),
		models:     map[string]*Model{},
		summarizer: &Model{fallback: Final("Summary of the earlier conversation.")},
	}
	for _, o := range opts {
		o(s)
	}
	s.ts = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	return s
}

// URL is the API base URL to give a client, ending in "/v1".
func (s *Server) URL() string { return s.ts.URL + "/v1" }

// HTTPClient returns an HTTP client bound to this server whose idle
// connections are closed by [Server.Close].
func (s *Server) HTTPClient() *http.Client { return s.ts.Client() }

// ModelConfig returns an agent model config that reaches this server:
// provider openai-compatible, its URL, the model name given. Pair it with
// HTTPClient for the agents' transport.
func (s *Server) ModelConfig(model string) llm.ModelConfig {
	return llm.ModelConfig{Provider: "openai-compatible", BaseURL: s.URL(), Model: model}
}

// Close releases hanging requests, shuts the server down and closes the
// idle connections of [Server.HTTPClient]. It is idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.ts.CloseClientConnections()
		s.ts.Close()
	})
}

// Model returns the scripted model of agent, creating it on first use.
// Model("") is the default model, which answers the requests the router
// gives no agent key. An empty queue answers {"messages":[]}, a structured
// output with no messages.
func (s *Server) Model(agent string) *Model {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.models[agent]
	if !ok {
		m = &Model{fallback: Final(emptyFinal)}
		s.models[agent] = m
	}
	return m
}

// Summarizer returns the model that answers summarizer requests (no tools
// and no response_format). An empty queue answers a fixed summary text.
func (s *Server) Summarizer() *Model { return s.summarizer }

// Requests returns every request received so far, in arrival order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// RequestsFor returns the requests routed to agent, in arrival order.
func (s *Server) RequestsFor(agent string) []*Request {
	var out []*Request
	for _, r := range s.Requests() {
		if r.Agent == agent && !r.Summarizer {
			out = append(out, r)
		}
	}
	return out
}

// Failures returns a description of every request the server refused
// because the test did not expect it.
func (s *Server) Failures() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.failures...)
}

// Pending reports how many answers the test prepared are still unasked for:
// the steps queued on every scripted model (the summarizer's included) and
// the recorded exchanges of a replay. A finished test expects 0; the
// Otherwise steps are not counted.
func (s *Server) Pending() int {
	s.mu.Lock()
	models := make([]*Model, 0, len(s.models)+1)
	models = append(models, s.summarizer)
	for _, m := range s.models {
		models = append(models, m)
	}
	n := len(s.replay)
	s.mu.Unlock()
	for _, m := range models {
		n += m.pending()
	}
	return n
}

func (s *Server) fail(format string, args ...any) string {
	msg := fmt.Sprintf(format, args...)
	s.mu.Lock()
	s.failures = append(s.failures, msg)
	s.mu.Unlock()
	if s.reporter != nil {
		s.reporter.Errorf("%s", msg)
	}
	return msg
}

func (s *Server) serveHTTP(w http.ResponseWriter, hr *http.Request) {
	if hr.Method != http.MethodPost || !strings.HasSuffix(hr.URL.Path, "/chat/completions") {
		writeError(w, http.StatusNotFound, nil, "invalid_request_error", "unknown_url", "",
			fmt.Sprintf("Invalid URL (%s %s)", hr.Method, hr.URL.Path))
		return
	}
	body, err := io.ReadAll(hr.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, nil, "invalid_request_error", "", "", "could not read body: "+err.Error())
		return
	}
	if s.apiKey != "" && hr.Header.Get("Authorization") != "Bearer "+s.apiKey {
		writeError(w, http.StatusUnauthorized, nil, "invalid_request_error", "invalid_api_key", "",
			"Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.")
		return
	}
	req := &Request{Body: body, Authorization: hr.Header.Get("Authorization")}
	if err := json.Unmarshal(body, req); err != nil {
		writeError(w, http.StatusBadRequest, nil, "invalid_request_error", "", "",
			"We could not parse the JSON body of your request. ("+err.Error()+")")
		return
	}
	req.Summarizer = len(req.Tools) == 0 && len(req.ResponseFormat) == 0
	req.Agent = s.route(req)
	s.mu.Lock()
	s.requests = append(s.requests, req)
	replaying := s.replaying
	s.mu.Unlock()

	if bad := validateRequest(req); bad != nil {
		writeError(w, http.StatusBadRequest, nil, "invalid_request_error", bad.code, bad.param, bad.message)
		return
	}
	checkContract(schemaRequest, body)
	if replaying {
		s.serveReplay(w, req)
		return
	}
	model := s.summarizer
	if !req.Summarizer {
		model = s.Model(req.Agent)
	}
	s.answer(w, hr, req, model.next())
}

func writeError(w http.ResponseWriter, status int, header http.Header, typ, code, param, message string) {
	for k, v := range header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(errorBody(typ, code, param, message))
}

func (s *Server) nextID(prefix string, width int) string {
	s.mu.Lock()
	s.seq++
	n := s.seq
	s.mu.Unlock()
	return fmt.Sprintf("%s%0*d", prefix, width, n)
}

func (s *Server) answer(w http.ResponseWriter, hr *http.Request, req *Request, step Step) {
	if step.Check != nil {
		if err := step.Check(req); err != nil {
			msg := s.fail("llmtest: request for agent %q failed its expectation: %v", req.Agent, err)
			writeError(w, http.StatusBadRequest, nil, "invalid_request_error", "", "", msg)
			return
		}
	}
	switch step.kind {
	case kindRaw:
		s.writeRecorded(w, req, step.status, step.header, step.body)
		return
	case kindReset:
		resetConn(w)
		return
	case kindHang:
		select {
		case <-s.done:
		case <-hr.Context().Done():
		}
		return
	}
	resp := wireResponse{
		ID:                s.nextID("chatcmpl-fake-", 1),
		Object:            "chat.completion",
		Created:           1755500000,
		Model:             req.Model,
		SystemFingerprint: "fp_fake",
	}
	if step.Model != "" {
		resp.Model = step.Model
	}
	if !step.NoUsage {
		u := &wireUsage{PromptTokens: step.PromptTokens, CompletionTokens: step.CompletionTokens,
			TotalTokens: step.PromptTokens + step.CompletionTokens}
		u.PromptTokensDetails.CachedTokens = step.CachedTokens
		u.CompletionTokensDetails.ReasoningTokens = step.ReasoningTokens
		resp.Usage = u
	}
	msg := wireMessage{Role: "assistant"}
	switch step.kind {
	case kindToolCalls:
		for _, c := range step.calls {
			if c.ID == "" {
				c.ID = s.nextID("call_", 24)
			}
			if c.Type == "" {
				c.Type = "function"
			}
			msg.ToolCalls = append(msg.ToolCalls, c)
		}
	case kindRefusal:
		msg.Refusal = &step.content
	default:
		msg.Content = &step.content
	}
	n := max(req.N, 1) // n choices, the same answer each: a script has one
	resp.Choices = make([]wireChoice, n)
	for i := range resp.Choices {
		resp.Choices[i] = wireChoice{Index: i, FinishReason: step.FinishReason, Message: msg}
	}
	body, err := json.Marshal(resp)
	if err != nil {
		writeError(w, http.StatusInternalServerError, nil, "server_error", "", "", "llmtest: "+err.Error())
		return
	}
	if !req.Stream {
		checkContract(schemaResponse, body)
	}
	if req.Stream {
		cutAt := -1
		if step.cut {
			cutAt = step.cutAfter
		}
		s.writeStream(w, req, body, cutAt)
		return
	}
	s.writeRecorded(w, req, http.StatusOK, nil, body)
}

// writeRecorded writes the answer and, when recording, appends the exchange.
func (s *Server) writeRecorded(w http.ResponseWriter, req *Request, status int, header http.Header, body []byte) {
	for k, v := range header {
		w.Header()[k] = v
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
	s.record(req, status, header, body)
}

// record appends the exchange to the transcript, when recording.
func (s *Server) record(req *Request, status int, header http.Header, body []byte) {
	if s.recorder == nil {
		return
	}
	ex := exchange{Agent: req.Agent, Request: compactJSON(req.Body), Status: status, Response: compactJSON(body)}
	if ra := header.Get("Retry-After"); ra != "" {
		ex.RetryAfter = ra
	}
	line, err := json.Marshal(ex)
	if err != nil {
		return
	}
	s.mu.Lock()
	_, _ = s.recorder.Write(append(line, '\n'))
	s.mu.Unlock()
}

// compactJSON returns b compacted if it is JSON, else b as a JSON string.
func compactJSON(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err == nil {
		return buf.Bytes()
	}
	q, _ := json.Marshal(string(b))
	return q
}

// resetConn drops the connection without writing a response.
func resetConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // send RST rather than FIN
	}
	_ = conn.Close()
}
