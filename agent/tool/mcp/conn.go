package mcp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/internal/scrub"
)

// terminateWait is how long closing a stdio server waits for it to exit
// after its stdin is closed, before SIGTERM (and as long again before
// SIGKILL).
const terminateWait = 2 * time.Second

// connectWait bounds connecting to a server (a process started, the MCP
// handshake), unless Server.Timeout is longer.
const connectWait = 30 * time.Second

// inheritedEnv are the variables a stdio server gets from the agent's
// process (as the MCP SDKs' default environments do); the rest, API keys
// among them, only when named in Server.Env.
var inheritedEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR"}

// conn is one server's connection: made at Attach, dropped when the server
// dies or a call times out, made again by the next call.
type conn struct {
	cfg    Server
	report func(error) // the owner's Report; nil without an owner
	client *sdk.Client
	http   *http.Transport // URL servers: closed with the card

	mu      sync.Mutex
	session *session // nil: not connected
	instr   string   // the instructions of the first session
	closed  bool
	closing sync.WaitGroup // dropped sessions being closed; close waits
}

func newConn(s Server, report func(error)) *conn {
	// No capabilities: the card has no roots to list (and a server's
	// request for them could not reach it over HTTP, where it opens no
	// stream for the server's requests), no sampling, no elicitation.
	cn := &conn{cfg: s, report: report,
		client: sdk.NewClient(&sdk.Implementation{Name: "akgentic-go", Version: "1"},
			&sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}})}
	if s.URL != "" {
		cn.http = http.DefaultTransport.(*http.Transport).Clone()
	}
	return cn
}

func (cn *conn) timeout() time.Duration {
	if cn.cfg.Timeout > 0 {
		return cn.cfg.Timeout
	}
	return defaultTimeout
}

// transport returns a new transport to the server for s: a child process
// for a command (not bound to any context: it lives as long as the
// session; its stderr's tail kept in s), streamable HTTP for a URL. The
// ${NAME} references of Env and Headers are expanded now. What the server
// sends passes s.listing (see taskTools).
func (cn *conn) transport(s *session) (sdk.Transport, error) {
	if len(cn.cfg.Command) > 0 {
		env, err := childEnv(cn.cfg.Env)
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(cn.cfg.Command[0], cn.cfg.Command[1:]...)
		cmd.Env = env
		s.stderr = &tail{}
		cmd.Stderr = s.stderr
		s.cmd = cmd
		return &command{cmd: cmd, tap: s.listing.line}, nil
	}
	rt := &roundTripper{base: cn.http, tap: s.listing.line}
	if len(cn.cfg.Headers) > 0 {
		h := make(map[string]string, len(cn.cfg.Headers))
		for k, v := range cn.cfg.Headers {
			x, err := expand(v)
			if err != nil {
				return nil, fmt.Errorf("headers: %s: %w", k, err)
			}
			h[k] = x
			scrub.Register(x) // a header's value is a credential more often than not
		}
		u, err := url.Parse(cn.cfg.URL) // validated: parses
		if err != nil {
			return nil, fmt.Errorf("url: %w", err)
		}
		rt.origin, rt.h = origin(u), h
	}
	// No standalone SSE stream (the card listens to nothing the server
	// sends unasked) and no resumption of a broken stream: a broken call
	// fails and the next call connects again.
	return &sdk.StreamableClientTransport{Endpoint: cn.cfg.URL, HTTPClient: &http.Client{Transport: rt},
		MaxRetries: -1, DisableStandaloneSSE: true}, nil
}

// secretName reports whether an environment variable's name says it holds
// a secret (a key, a token, a password): its value is scrubbed from error
// texts.
func secretName(k string) bool {
	k = strings.ToUpper(k)
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASS", "AUTH", "CREDENTIAL"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// childEnv is a stdio server's environment: inheritedEnv, then extra
// (its ${NAME} references expanded). Never nil, even when empty: os/exec
// gives a child with a nil Env the whole environment of the agent's
// process.
func childEnv(extra map[string]string) ([]string, error) {
	env := []string{}
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			if _, override := extra[k]; !override {
				env = append(env, k+"="+v)
			}
		}
	}
	for k, v := range extra {
		x, err := expand(v)
		if err != nil {
			return nil, fmt.Errorf("env: %s: %w", k, err)
		}
		env = append(env, k+"="+x)
		if secretName(k) {
			scrub.Register(x)
		}
	}
	slices.Sort(env)
	return env, nil
}

// expand replaces each ${NAME} of s by the environment variable NAME of
// the agent's process (so that a config, which the team's log keeps, need
// not hold a secret); "$$" is a "$". Any other "$" is kept as it is. An
// unset variable or an unclosed "${" is an error naming it.
func expand(s string) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 || i == len(s)-1 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			s = s[i+2:]
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", fmt.Errorf("unclosed ${ in %q", s[i:])
			}
			name := s[i+2 : i+2+end]
			v, ok := os.LookupEnv(name)
			if !ok || name == "" {
				return "", fmt.Errorf("${%s}: the environment variable is not set", name)
			}
			b.WriteString(v)
			s = s[i+3+end:]
		default:
			b.WriteByte('$')
			s = s[i+1:]
		}
	}
}

// roundTripper carries a session's HTTP requests. It adds the fixed
// headers h to the requests to origin, the configured URL's: not to
// another host a redirect leads to (http.Client hands each hop to the
// RoundTripper), which must not get a token meant for the server. It
// passes the lines of every answer to tap, and turns the way a server
// says it lost the session into a [lostSession] error.
type roundTripper struct {
	base   http.RoundTripper
	origin string
	h      map[string]string
	tap    func([]byte)
}

// maxErrorBody bounds how much of an HTTP error answer is read for its
// message.
const maxErrorBody = 64 << 10

func (t *roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.h) > 0 && origin(r.URL) == t.origin {
		r = r.Clone(r.Context())
		for k, v := range t.h {
			r.Header.Set(k, v)
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	// A server that restarted no longer knows the session: the protocol
	// says 404, the reference server answers 400 "Bad Request: No valid
	// session ID provided". Either way the message ran nothing. (Its
	// answer to the DELETE that ends the session is no error.)
	if resp.StatusCode == http.StatusBadRequest && r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") != "" {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		msg := errorMessage(body, resp.Status)
		if strings.Contains(strings.ToLower(msg), "session") {
			return nil, &lostSession{msg: msg}
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
	if resp.StatusCode/100 == 2 {
		resp.Body = &tapReader{r: resp.Body, tap: t.tap}
	}
	return resp, nil
}

// errorMessage is the message of a JSON-RPC error answer, else the body's
// text, else status.
func errorMessage(body []byte, status string) string {
	var m struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &m) == nil && m.Error.Message != "" {
		return m.Error.Message
	}
	if t := strings.Join(strings.Fields(string(body)), " "); t != "" {
		return t
	}
	return status
}

// lostSession is an HTTP server's answer that it does not know the
// session (it restarted): the request ran nothing.
type lostSession struct{ msg string }

func (e *lostSession) Error() string { return "the server lost the session: " + e.msg }

// origin is u's scheme, host (lower case) and port (the scheme's default
// when absent).
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// session is one connection to the server.
type session struct {
	cs      *sdk.ClientSession
	stderr  *tail         // a stdio server's; nil for HTTP
	listing taskTools     // the tools only callable as tasks
	ended   chan struct{} // closed when the SDK has seen the session end
	cmd     *exec.Cmd     // a stdio server's process; nil for HTTP
}

// dead reports whether the session is known to have ended (a stdio
// server exited, an HTTP server dropped the session): a call on it would
// fail without reaching the server.
func (s *session) dead() bool {
	select {
	case <-s.ended:
		return true
	default:
	}
	// A stdio server that exited before the SDK read the end of its
	// output: a call now would go to its pipe and fail as if cut in flight.
	return s.cmd != nil && s.cmd.Process != nil && childExited(s.cmd.Process.Pid)
}

// explain adds to err what a stdio server last wrote on its stderr.
func (s *session) explain(err error) error {
	if s == nil || s.stderr == nil {
		return err
	}
	if t := s.stderr.String(); t != "" {
		return fmt.Errorf("%w (stderr: %s)", err, t)
	}
	return err
}

// tailSize is how much of a stdio server's stderr is kept, for errors.
const tailSize = 1024

// tail keeps the last tailSize bytes written to it.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if n := len(t.b); n > tailSize {
		t.b = append(t.b[:0:0], t.b[n-tailSize:]...)
	}
	return len(p), nil
}

// String is the tail, its whitespace collapsed.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(strings.Fields(string(t.b)), " ")
}

// get returns the session, connecting first when there is none (for
// connectWait, or the server's timeout if longer).
func (cn *conn) get(ctx context.Context) (*session, error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.closed {
		return nil, errors.New("the card is closed (its agent stopped)")
	}
	if s := cn.session; s != nil {
		if !s.dead() {
			return s, nil
		}
		cn.session = nil // died between calls: connect again now
		cn.closing.Add(1)
		go func() {
			defer cn.closing.Done()
			_ = s.cs.Close()
		}()
	}
	ctx, cancel := context.WithTimeout(ctx, max(connectWait, cn.timeout()))
	defer cancel()
	s := &session{ended: make(chan struct{})}
	t, err := cn.transport(s)
	if err != nil {
		return nil, err
	}
	cs, err := cn.client.Connect(ctx, t, nil)
	if err != nil {
		return nil, s.explain(fmt.Errorf("connect: %w", err))
	}
	s.cs = cs
	if r := cs.InitializeResult(); r != nil && cn.instr == "" {
		cn.instr = strings.TrimSpace(r.Instructions)
	}
	cn.closing.Add(1)
	go func() { // ends when the session does: at the latest when closed
		defer cn.closing.Done()
		_ = cs.Wait()
		close(s.ended)
	}()
	cn.session = s
	return s, nil
}

// drop forgets s, unless another call already replaced it, so that the
// next call connects again, and closes it in the background (the model
// need not wait for a hung server to be stopped: stdin, SIGTERM after
// terminateWait, SIGKILL; or an HTTP DELETE, 5 s at most); close waits
// for it. The error of closing a dead server is of no use.
func (cn *conn) drop(s *session) {
	cn.mu.Lock()
	if cn.session == s {
		cn.session = nil
	}
	closed := cn.closed
	if !closed { // counted under mu: close's Wait sees it
		cn.closing.Add(1)
	}
	cn.mu.Unlock()
	if closed { // the card is closing: no one to wait for a goroutine
		_ = s.cs.Close()
		return
	}
	go func() {
		defer cn.closing.Done()
		_ = s.cs.Close()
	}()
}

// close ends the session for good: a stdio server is stopped (stdin
// closed, then SIGTERM, then SIGKILL) and reaped.
func (cn *conn) close() error {
	cn.mu.Lock()
	s := cn.session
	cn.session, cn.closed = nil, true
	cn.mu.Unlock()
	var err error
	if s != nil {
		// Closing a session that had already ended (the server died)
		// only fails for that.
		ended := s.dead()
		if err = s.cs.Close(); err != nil && !ended {
			err = fmt.Errorf("mcp: server %s: close: %w", cn.cfg.Name, err)
		} else {
			err = nil
		}
	}
	cn.closing.Wait()
	if cn.http != nil {
		cn.http.CloseIdleConnections()
	}
	return err
}

// maxInstructions bounds a server's instructions in the system prompt.
const maxInstructions = 8 << 10

// instructions is the section of the agent's system prompt that holds
// the instructions the server gave when connecting ("" when it gave
// none), cut to maxInstructions.
func (cn *conn) instructions() string {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.instr == "" {
		return ""
	}
	return fmt.Sprintf("Instructions of the MCP server %s (its tools are named %s_<tool>):\n%s",
		cn.cfg.Name, cn.cfg.Name, truncate(cn.instr, maxInstructions))
}

// tools connects, lists the server's tools (every page) and returns those
// the allow and deny lists let through, as model tools, with their MCP
// names.
func (cn *conn) tools(ctx context.Context) ([]*llm.Tool, []string, error) {
	fail := func(err error) ([]*llm.Tool, []string, error) {
		return nil, nil, fmt.Errorf("mcp: server %s: %w", cn.cfg.Name, err)
	}
	s, err := cn.get(ctx)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(ctx, cn.timeout())
	defer cancel()
	var (
		out                    []*llm.Tool
		names, offer, taskOnly []string
	)
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return fail(s.explain(fmt.Errorf("list tools: %w", err)))
		}
		if s.listing.required(t.Name) {
			taskOnly = append(taskOnly, t.Name)
			continue
		}
		offer = append(offer, t.Name)
		if (len(cn.cfg.Allow) > 0 && !slices.Contains(cn.cfg.Allow, t.Name)) || slices.Contains(cn.cfg.Deny, t.Name) {
			continue
		}
		mt, err := cn.modelTool(t)
		if err != nil {
			return nil, nil, err
		}
		out, names = append(out, mt), append(names, t.Name)
	}
	for _, name := range cn.cfg.Allow {
		if slices.Contains(taskOnly, name) {
			return fail(fmt.Errorf("allow names tool %q, which the server runs only as a task (execution.taskSupport required), which the card does not support", name))
		}
		if !slices.Contains(offer, name) {
			return fail(fmt.Errorf("allow names tool %q, which the server does not offer (it offers: %s)",
				name, strings.Join(offer, ", ")))
		}
	}
	return out, names, nil
}

// call calls the MCP tool name. The server's answer comes back as the
// tool's result, an error result as a retry error; a server that fails to
// answer (it died, the connection broke, the call timed out) is a retry
// error too, and a warning record, and its connection is dropped: the
// next call connects again. The end of the run's ctx is returned as is.
//
// A call that never reached the server (the session had ended: a stdio
// server died between calls; an HTTP server that restarted no longer
// knows the session and says so, with 404 or 400) ran nothing: it is made
// once more on a new session, unseen by the model.
func (cn *conn) call(ctx context.Context, name string, args json.RawMessage) (any, error) {
	res, s, timedOut, err := cn.callOnce(ctx, name, args)
	if err != nil && s != nil && unsent(err) && ctx.Err() == nil {
		cn.drop(s)
		res, s, timedOut, err = cn.callOnce(ctx, name, args)
	}
	if s == nil { // not connected
		return cn.failed(ctx, name, err)
	}
	switch {
	case err == nil:
		return answer(cn.cfg.Name, name, res, cmp.Or(cn.cfg.MaxResultBytes, defaultResultBytes))
	case ctx.Err() != nil:
		return nil, context.Cause(ctx)
	case answered(err):
		return nil, llm.Retry("MCP server %s refused the call of %s: %v", cn.cfg.Name, name, err)
	case timedOut:
		err = fmt.Errorf("no answer within %s", cn.timeout())
	}
	cn.drop(s)
	return cn.failed(ctx, name, s.explain(err))
}

// callOnce connects if need be and calls name once. s is nil when
// connecting failed; timedOut says the call outlasted the timeout.
func (cn *conn) callOnce(ctx context.Context, name string, args json.RawMessage) (res *sdk.CallToolResult, s *session, timedOut bool, err error) {
	s, err = cn.get(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	cctx, cancel := context.WithTimeout(ctx, cn.timeout())
	defer cancel()
	res, err = s.cs.CallTool(cctx, &sdk.CallToolParams{Name: name, Arguments: args})
	return res, s, errors.Is(cctx.Err(), context.DeadlineExceeded), err
}

// failed is a server's failure during a call of name: a warning record
// for the team, a retry error for the model.
func (cn *conn) failed(ctx context.Context, name string, err error) (any, error) {
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	if cn.report != nil {
		cn.report(&actor.WarningError{Msg: fmt.Sprintf("mcp: server %s failed during a call of %s; it is reconnected on the next call", cn.cfg.Name, name), Err: scrub.Error(err)})
	}
	return nil, llm.Retry("MCP server %s failed during the call of %s: %v. It is reconnected on the next call.", cn.cfg.Name, name, err)
}

// answered reports whether err is the server's own JSON-RPC error answer
// (an unknown tool, invalid parameters): the connection is sound.
func answered(err error) bool {
	var w *jsonrpc.Error
	if !errors.As(err, &w) {
		return false
	}
	// The SDK's own codes for a connection going away (client closing,
	// server closing) and for a request the transport could not deliver
	// (an HTTP request that failed).
	return !slices.Contains([]int64{-32003, -32004, -32005}, w.Code)
}
