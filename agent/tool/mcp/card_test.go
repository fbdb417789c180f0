package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/mcp"
	"github.com/akgentic/akgentic-go/message"
)

// agentStub is the owner of a card attached outside a team: it records
// what the card reports.
type agentStub struct {
	mu      sync.Mutex
	reports []error
}

func (a *agentStub) Self() *message.Address   { return nil }
func (a *agentStub) Parent() *message.Address { return nil }
func (a *agentStub) Context() context.Context { return context.Background() }
func (a *agentStub) Send(*message.Address, any) error {
	return errors.New("agentStub: no send")
}
func (a *agentStub) Spawn(actor.Actor, any, ...actor.SpawnOption) (*message.Address, error) {
	return nil, errors.New("agentStub: no spawn")
}
func (a *agentStub) Report(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reports = append(a.reports, err)
}

func (a *agentStub) warnings() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, err := range a.reports {
		if _, ok := actor.IsWarning(err); ok {
			out = append(out, err.Error())
		}
	}
	return out
}

// attach attaches c to a stub owner; the test closes it at its end.
func attach(t *testing.T, c *mcp.Card) (map[string]*llm.Tool, *agentStub, func() error) {
	t.Helper()
	owner := &agentStub{}
	caps, err := c.Attach(actortest.Context(t), &tool.Owner{Agent: owner})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var closeErr error
	closeCard := func() error {
		once.Do(func() { closeErr = caps.Close() })
		return closeErr
	}
	t.Cleanup(func() {
		if err := closeCard(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	tools := map[string]*llm.Tool{}
	for _, tl := range caps.Tools {
		tools[tl.Name] = tl
	}
	return tools, owner, closeCard
}

// call calls tl with args; a retry error comes back as its text in err.
func call(t *testing.T, tl *llm.Tool, args string) (string, error) {
	t.Helper()
	if tl == nil {
		t.Fatal("no such tool")
	}
	out, err := tl.Call(actortest.Context(t), json.RawMessage(args))
	if err != nil {
		var re *llm.RetryError
		if !errors.As(err, &re) {
			t.Fatalf("%s: not a retry error: %v", tl.Name, err)
		}
		return "", err
	}
	s, ok := out.(string)
	if !ok {
		t.Fatalf("%s: result %T", tl.Name, out)
	}
	return s, nil
}

// transports runs f once per transport, on a server named s; release
// ends its hanging calls (see httpServer).
func transports(t *testing.T, f func(t *testing.T, s mcp.Server, release func())) {
	t.Run("stdio", func(t *testing.T) { f(t, stdioServer(t, "s"), func() {}) })
	t.Run("http", func(t *testing.T) {
		s, _, release := httpServer(t, "s", nil)
		f(t, s, release)
	})
}

// The tools of a server, over both transports, with their
// names, schemas (strict where strict mode can say them) and results.
func TestServerTools(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, s mcp.Server, _ func()) {
		tools, owner, _ := attach(t, &mcp.Card{Servers: []mcp.Server{s}})
		names := make([]string, 0, len(tools))
		for n := range tools {
			names = append(names, n)
		}
		slices.Sort(names)
		want := []string{"s_crash", "s_echo", "s_fail", "s_hang", "s_picture", "s_pid", "s_secret", "s_stats"}
		if !slices.Equal(names, want) {
			t.Fatalf("tools %v, want %v", names, want)
		}
		if e := tools["s_echo"]; !e.Strict || e.Description != "Echo a text." {
			t.Errorf("echo: strict %v, description %q", e.Strict, e.Description)
		}
		if tools["s_stats"].Strict {
			t.Errorf("stats (minimum) is strict: %s", tools["s_stats"].RawParameters)
		}
		// The optional upper is nullable in the strict schema; its null is
		// dropped before the call (the server takes no null for a bool).
		for args, want := range map[string]string{
			`{"text": "hi", "upper": null}`: "hi",
			`{"text": "hi", "upper": true}`: "HI",
		} {
			if out, err := call(t, tools["s_echo"], args); err != nil || out != want {
				t.Errorf("echo %s: %q %v, want %q", args, out, err, want)
			}
		}
		if out, err := call(t, tools["s_picture"], `{}`); err != nil || out != "a red dot\n[image image/png, 4 bytes]" {
			t.Errorf("picture: %q %v", out, err)
		}
		if out, err := call(t, tools["s_stats"], `{"n": 3}`); err != nil || out != `{"n":3,"sum":6}` {
			t.Errorf("stats: %q %v", out, err)
		}
		_, err := call(t, tools["s_fail"], `{}`)
		if err == nil || err.Error() != "MCP tool fail of server s reported an error: the disk is full" {
			t.Errorf("fail: %v", err)
		}
		// A JSON-RPC error answer: a tool error, the connection kept, no
		// warning.
		_, err = call(t, tools["s_stats"], `{"n": "three"}`)
		if err == nil || !strings.HasPrefix(err.Error(), "MCP server s refused the call of stats: ") {
			t.Errorf("stats with a bad n: %v", err)
		}
		if w := owner.warnings(); len(w) != 0 {
			t.Errorf("warnings %q", w)
		}
	})
}

// A stdio server gets a small environment plus Env, its
// ${NAME} expanded (not the agent's secrets), and is reaped when the card
// closes.
func TestStdioEnvironmentAndReaping(t *testing.T) {
	t.Setenv("MCP_TEST_KEY", "sk-not-for-servers")
	t.Setenv("MCP_TEST_HELLO", "hello")
	s := stdioServer(t, "s")
	s.Env["MCP_TEST_GREETING"] = "${MCP_TEST_HELLO} for $$5"
	tools, _, closeCard := attach(t, &mcp.Card{Servers: []mcp.Server{s}})
	out, err := call(t, tools["s_pid"], `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		PID      int    `json:"pid"`
		Greeting string `json:"greeting"`
		Key      string `json:"key"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Greeting != "hello for $5" || got.Key != "" || got.PID <= 0 {
		t.Fatalf("server saw %+v", got)
	}
	if err := closeCard(); err != nil {
		t.Fatal(err)
	}
	// Reaped: not even a zombie is left.
	if err := syscall.Kill(got.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("server process %d after close: %v", got.PID, err)
	}
	if _, err := call(t, tools["s_echo"], `{"text": "x"}`); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("a call after close: %v", err)
	}
}

// A call that outlasts the server's timeout is a tool error and
// a warning; the next call connects again and works.
func TestTimeoutReconnects(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, s mcp.Server, release func()) {
		s.Timeout = 300 * time.Millisecond
		tools, owner, _ := attach(t, &mcp.Card{Servers: []mcp.Server{s}})
		_, err := call(t, tools["s_hang"], `{}`)
		if err == nil || err.Error() != "MCP server s failed during the call of hang: no answer within 300ms. It is reconnected on the next call." {
			t.Fatalf("hang: %v", err)
		}
		release()
		if w := owner.warnings(); len(w) != 1 || w[0] != "mcp: server s failed during a call of hang; it is reconnected on the next call: no answer within 300ms" {
			t.Fatalf("warnings %q", w)
		}
		if out, err := call(t, tools["s_echo"], `{"text": "back"}`); err != nil || out != "back" {
			t.Fatalf("after the timeout: %q %v", out, err)
		}
	})
}

// A stdio server that dies mid-call (its process exits) is a
// tool error and a warning; the next call starts a new process.
func TestStdioCrashReconnects(t *testing.T) {
	t.Parallel()
	tools, owner, _ := attach(t, &mcp.Card{Servers: []mcp.Server{stdioServer(t, "s")}})
	pid := func() int {
		out, err := call(t, tools["s_pid"], `{}`)
		if err != nil {
			t.Fatal(err)
		}
		var p struct{ PID int }
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatal(err)
		}
		return p.PID
	}
	before := pid()
	_, err := call(t, tools["s_crash"], `{}`)
	if err == nil || !strings.HasPrefix(err.Error(), "MCP server s failed during the call of crash: ") {
		t.Fatalf("crash: %v", err)
	}
	if w := owner.warnings(); len(w) != 1 || !strings.HasPrefix(w[0], "mcp: server s failed during a call of crash") {
		t.Fatalf("warnings %q", w)
	}
	if after := pid(); after == before {
		t.Fatalf("the same process %d answered after the crash", after)
	}
}

// Allow and deny lists, per server, by MCP tool name; two
// servers' tools are kept apart by their prefixes.
func TestAllowDeny(t *testing.T) {
	t.Parallel()
	a, _, _ := httpServer(t, "a", nil)
	a.Allow = []string{"echo"}
	a.Deny = []string{"no-such-tool"} // a name the server does not offer: nothing to deny
	b, _, _ := httpServer(t, "b", nil)
	b.Deny = []string{"secret", "crash"}
	tools, _, _ := attach(t, &mcp.Card{Servers: []mcp.Server{a, b}})
	var names []string
	for n := range tools {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"a_echo", "b_echo", "b_fail", "b_hang", "b_picture", "b_pid", "b_stats"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	c, _, _ := httpServer(t, "c", nil)
	c.Allow = []string{"echo", "ecko"}
	_, err := (&mcp.Card{Servers: []mcp.Server{c}}).Attach(actortest.Context(t), &tool.Owner{Agent: &agentStub{}})
	if err == nil || !strings.Contains(err.Error(), `mcp: server c: allow names tool "ecko", which the server does not offer (it offers: `) {
		t.Fatalf("unknown allowed tool: %v", err)
	}
}

// Bad configurations are errors naming what is wrong, before
// anything is started.
func TestBadConfig(t *testing.T) {
	ok := mcp.Server{Name: "s", URL: "http://127.0.0.1:1/mcp"}
	with := func(f func(*mcp.Server)) []mcp.Server {
		s := ok
		f(&s)
		return []mcp.Server{s}
	}
	for _, tc := range []struct {
		servers []mcp.Server
		want    string
	}{
		{nil, "mcp: no servers configured (servers is empty)"},
		{with(func(s *mcp.Server) { s.Name = "" }), `mcp: servers[0] (""): name "" must be 1 to 32 of A-Z, a-z, 0-9, '_' and '-'`},
		{with(func(s *mcp.Server) { s.Name = "my.server" }), `name "my.server" must be`},
		{with(func(s *mcp.Server) { s.URL = "" }), `mcp: servers[0] ("s"): neither command nor url is set`},
		{with(func(s *mcp.Server) { s.Command = []string{"srv"} }), "command and url are both set"},
		{with(func(s *mcp.Server) { s.URL, s.Command = "", []string{" "} }), "command: the program (its first element) is empty"},
		{with(func(s *mcp.Server) { s.URL = "ftp://host/x" }), `url "ftp://host/x": want an http or https URL with a host`},
		{with(func(s *mcp.Server) { s.URL = "http://[::1" }), "url: parse"},
		{with(func(s *mcp.Server) { s.Env = map[string]string{"K": "v"} }), "env is for command servers, not url servers"},
		{with(func(s *mcp.Server) { s.URL, s.Command, s.Headers = "", []string{"srv"}, map[string]string{"A": "b"} }), "headers are for url servers"},
		{with(func(s *mcp.Server) { s.Timeout = -time.Second }), "timeout -1s is negative"},
		{with(func(s *mcp.Server) { s.MaxResultBytes = -1 }), "max_result_bytes -1 is negative"},
		{with(func(s *mcp.Server) { s.Allow, s.Deny = []string{"x"}, []string{"x"} }), `tool "x" is both allowed and denied`},
		{[]mcp.Server{ok, ok}, `mcp: servers[1]: name "s" is used twice`},
	} {
		_, err := (&mcp.Card{Servers: tc.servers}).Attach(actortest.Context(t), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.servers, err, tc.want)
		}
	}
}

// A server that cannot be reached or started is a start error
// naming it.
func TestUnreachable(t *testing.T) {
	_, srv, _ := httpServer(t, "gone", nil)
	srv.Close()
	for _, s := range []mcp.Server{
		{Name: "gone", URL: srv.URL + "/mcp"},
		{Name: "nocmd", Command: []string{"/nonexistent/mcp-server"}},
		{Name: "badflag", Command: []string{"sh", "-c", "echo 'unknown flag: --x' >&2; exit 2"}},
	} {
		_, err := (&mcp.Card{Servers: []mcp.Server{s}}).Attach(actortest.Context(t), nil)
		if err == nil || !strings.HasPrefix(err.Error(), "mcp: server "+s.Name+": connect: ") {
			t.Errorf("%s: %v", s.Name, err)
		}
		// What a server that exits says on stderr is in the error.
		if s.Name == "badflag" && !strings.HasSuffix(err.Error(), " (stderr: unknown flag: --x)") {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
}

// The card round-trips through JSON as an agent's config carries it.
func TestCardJSON(t *testing.T) {
	in := tool.Cards{&mcp.Card{Servers: []mcp.Server{
		{Name: "fs", Command: []string{"mcp-fs", "/data"}, Env: map[string]string{"A": "b"}, Deny: []string{"write"}},
		{Name: "web", URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer x"}, Timeout: time.Second},
	}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out tool.Cards
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(out)
	if string(b) != string(b2) || out[0].Kind() != "MCPTool" {
		t.Fatalf("round trip:\n%s\n%s", b, b2)
	}
}

// Two tools of a card that end up with one model name (after
// the characters OpenAI refuses are replaced) are a start error naming
// both.
func TestNameCollision(t *testing.T) {
	ms := sdk.NewServer(&sdk.Implementation{Name: "dots", Version: "1"}, nil)
	for _, name := range []string{"get.item", "get_item"} {
		ms.AddTool(&sdk.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text(name), nil })
	}
	srv := httptest.NewServer(streamable(t, ms))
	t.Cleanup(srv.Close)
	_, err := (&mcp.Card{Servers: []mcp.Server{{Name: "d", URL: srv.URL}}}).Attach(actortest.Context(t), nil)
	if err == nil || err.Error() != "mcp: tools d/get.item and d/get_item are both offered as d_get_item (deny one, or rename a server)" {
		t.Fatalf("collision: %v", err)
	}
}

// An HTTP server gets the card's headers, their ${NAME}
// expanded; a header it refuses, or a variable that is not set, is a
// start error naming it.
func TestHeaders(t *testing.T) {
	t.Setenv("MCP_TEST_TOKEN", "k1")
	ms := sdk.NewServer(&sdk.Implementation{Name: "auth", Version: "1"}, nil)
	ms.AddTool(&sdk.Tool{Name: "who", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("you"), nil })
	mcpHandler := streamable(t, ms)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k1" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	server := func(auth string) mcp.Server {
		return mcp.Server{Name: "a", URL: srv.URL, Headers: map[string]string{"Authorization": auth}}
	}
	tools, _, _ := attach(t, &mcp.Card{Servers: []mcp.Server{server("Bearer ${MCP_TEST_TOKEN}")}})
	if out, err := call(t, tools["a_who"], `{}`); err != nil || out != "you" {
		t.Fatalf("who: %q %v", out, err)
	}
	for auth, want := range map[string]string{
		"Bearer k2":                  "mcp: server a: connect: ",
		"Bearer ${MCP_TEST_UNSET_X}": "mcp: server a: headers: Authorization: ${MCP_TEST_UNSET_X}: the environment variable is not set",
	} {
		_, err := (&mcp.Card{Servers: []mcp.Server{server(auth)}}).Attach(actortest.Context(t), nil)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %q", auth, err, want)
		}
	}
}

// An HTTP server that restarted (it no longer knows the
// session: 404) gets the call again on a new session; the model sees the
// answer, and no warning is recorded.
func TestRestartedServer(t *testing.T) {
	t.Parallel()
	var servers []*sdk.Server
	newHandler := func() http.Handler {
		ms := newServer(nil, nil)
		servers = append(servers, ms)
		return streamable(t, ms)
	}
	var current atomic.Pointer[http.Handler]
	h := newHandler()
	current.Store(&h)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*current.Load()).ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	tools, owner, _ := attach(t, &mcp.Card{Servers: []mcp.Server{{Name: "s", URL: srv.URL}}})
	for i, text := range []string{"before", "after"} {
		if i == 1 { // the restart: the sessions end, the new server knows none
			for ss := range servers[0].Sessions() {
				_ = ss.Close()
			}
			h := newHandler()
			current.Store(&h)
		}
		if out, err := call(t, tools["s_echo"], `{"text": "`+text+`", "upper": null}`); err != nil || out != text {
			t.Fatalf("echo %s: %q %v", text, out, err)
		}
	}
	if w := owner.warnings(); len(w) != 0 {
		t.Fatalf("warnings %q", w)
	}
}

// The card's headers go only to the configured URL's
// scheme and host: a server that redirects (307) to another host does not
// get the token passed on with the request.
func TestHeadersNotSentAcrossRedirect(t *testing.T) {
	t.Setenv("MCP_TEST_TOKEN", "s3cret")
	var mu sync.Mutex
	seen := map[string][]string{} // server -> Authorization headers it got
	record := func(server string, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen[server] = append(seen[server], r.Header.Get("Authorization"))
	}
	ms := sdk.NewServer(&sdk.Implementation{Name: "b", Version: "1"}, nil)
	ms.AddTool(&sdk.Tool{Name: "who", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("b"), nil })
	mcpHandler := streamable(t, ms)
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record("b", r)
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(b.Close)
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record("a", r)
		http.Redirect(w, r, b.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(a.Close)
	tools, _, _ := attach(t, &mcp.Card{Servers: []mcp.Server{{Name: "a", URL: a.URL + "/mcp",
		Headers: map[string]string{"Authorization": "Bearer ${MCP_TEST_TOKEN}"}}}})
	if out, err := call(t, tools["a_who"], `{}`); err != nil || out != "b" {
		t.Fatalf("who: %q %v", out, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen["a"]) == 0 || slices.ContainsFunc(seen["a"], func(h string) bool { return h != "Bearer s3cret" }) {
		t.Errorf("the configured server got Authorization %q, want the token every time", seen["a"])
	}
	if len(seen["b"]) == 0 || slices.ContainsFunc(seen["b"], func(h string) bool { return h != "" }) {
		t.Errorf("the server redirected to got Authorization %q, want none", seen["b"])
	}
}

// The servers of a card are connected all at once: each of three HTTP
// servers holds its first request until all three have one, which only
// a card that connects them together gets past.
func TestServersConnectTogether(t *testing.T) {
	t.Parallel()
	const n = 3
	ctx := actortest.Context(t)
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	var servers []mcp.Server
	for i := range n {
		ms := sdk.NewServer(&sdk.Implementation{Name: "slow", Version: "1"}, nil)
		ms.AddTool(&sdk.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("ok"), nil })
		h := streamable(t, ms)
		var first sync.Once
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			first.Do(func() {
				arrived.Done()
				select {
				case <-all:
				case <-ctx.Done():
				}
			})
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		servers = append(servers, mcp.Server{Name: fmt.Sprintf("s_%d", i), URL: srv.URL})
	}
	tools, _, _ := attach(t, &mcp.Card{Servers: servers})
	if len(tools) != n || tools["s_2_t"] == nil {
		t.Fatalf("tools %v", tools)
	}
}

// A server's instructions are a section of the agent's system prompt,
// unless NoInstructions; a server without any adds none.
func TestInstructions(t *testing.T) {
	t.Parallel()
	serve := func(instructions string) mcp.Server {
		ms := sdk.NewServer(&sdk.Implementation{Name: "i", Version: "1"}, &sdk.ServerOptions{Instructions: instructions})
		ms.AddTool(&sdk.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("ok"), nil })
		srv := httptest.NewServer(streamable(t, ms))
		t.Cleanup(srv.Close)
		return mcp.Server{URL: srv.URL}
	}
	a, b, c := serve("  Call t first.\n"), serve("Never shown."), serve("")
	a.Name, b.Name, c.Name = "a", "b", "c"
	b.NoInstructions = true
	caps, err := (&mcp.Card{Servers: []mcp.Server{a, b, c}}).Attach(actortest.Context(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer caps.Close()
	var got []string
	for _, p := range caps.SystemPrompts {
		got = append(got, p(actortest.Context(t)))
	}
	if want := []string{"Instructions of the MCP server a (its tools are named a_<tool>):\nCall t first."}; !slices.Equal(got, want) {
		t.Fatalf("system prompt sections %q, want %q", got, want)
	}
}
