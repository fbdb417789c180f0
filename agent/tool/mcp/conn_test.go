package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/akgentic/akgentic-go/actor/actortest"
)

// ${NAME} in Env and Headers values.
func TestExpand(t *testing.T) {
	t.Setenv("MCP_TEST_A", "alpha")
	for in, want := range map[string]string{
		"plain":                         "plain",
		"${MCP_TEST_A}":                 "alpha",
		"x-${MCP_TEST_A}-${MCP_TEST_A}": "x-alpha-alpha",
		"$$5 and $HOME and $":           "$5 and $HOME and $",
		"p@$$w0rd$":                     "p@$w0rd$",
	} {
		if got, err := expand(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"${MCP_TEST_UNSET_Y}": "${MCP_TEST_UNSET_Y}: the environment variable is not set",
		"a ${MCP_TEST_A":      `unclosed ${ in "${MCP_TEST_A"`,
		"${}":                 "${}: the environment variable is not set",
	} {
		if _, err := expand(in); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

// expand never panics, and a value without "$" comes back as it is.
func FuzzExpand(f *testing.F) {
	for _, seed := range []string{"", "$", "$$", "${", "${}", "${PATH}", "a$b${c", "$${PATH}"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := expand(s)
		if !strings.Contains(s, "$") && (err != nil || out != s) {
			t.Fatalf("%q: %q %v", s, out, err)
		}
	})
}

// A stdio server's stderr is kept to its last tailSize bytes, whitespace
// collapsed.
func TestStderrTail(t *testing.T) {
	var tl tail
	_, _ = tl.Write([]byte("starting\n"))
	_, _ = tl.Write([]byte(strings.Repeat("x", tailSize-4) + "\nfatal:  bad  flag\n"))
	// 1048 bytes written: "starting\n" and 15 x's are dropped.
	if got := tl.String(); got != strings.Repeat("x", tailSize-19)+" fatal: bad flag" {
		t.Fatalf("tail %q (%d bytes)", got, len(got))
	}
}

// Model tool names keep to OpenAI's charset and length.
func TestModelName(t *testing.T) {
	for _, tc := range []struct{ server, tool, want string }{
		{"fs", "read_file", "fs_read_file"},
		{"gh", "repos.list-all", "gh_repos_list-all"},
		{"x", "héllo wörld", "x_h__llo_w__rld"},
		{"long", strings.Repeat("t", 70), "long_" + strings.Repeat("t", 59)},
	} {
		if got := modelName(tc.server, tc.tool); got != tc.want {
			t.Errorf("%s/%s: %q, want %q", tc.server, tc.tool, got, tc.want)
		}
	}
}

// The origin the card's headers are limited to: the
// scheme, the host in any case and the port, a default one made explicit.
func TestOrigin(t *testing.T) {
	o := func(s string) string {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return origin(u)
	}
	same := [][2]string{
		{"http://Example.com/mcp", "http://example.com:80/other?q"},
		{"https://example.com/mcp", "HTTPS://EXAMPLE.COM:443"},
		{"http://[::1]:8080/mcp", "http://[::1]:8080/"},
	}
	for _, p := range same {
		if o(p[0]) != o(p[1]) {
			t.Errorf("%s and %s: origins %s and %s, want the same", p[0], p[1], o(p[0]), o(p[1]))
		}
	}
	differ := [][2]string{
		{"http://example.com/mcp", "https://example.com/mcp"},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8081/mcp"},
		{"http://localhost:8080/mcp", "http://127.0.0.1:8080/mcp"},
		{"https://example.com/mcp", "https://example.com.evil.io/mcp"},
	}
	for _, p := range differ {
		if o(p[0]) == o(p[1]) {
			t.Errorf("%s and %s: the same origin %s", p[0], p[1], o(p[0]))
		}
	}
}

// With none of the inherited variables set and no Env,
// a stdio server's environment is empty, not nil: os/exec gives a child
// with a nil Env the agent's whole environment, API keys included.
func TestChildEnvNeverInheritsAll(t *testing.T) {
	for _, k := range inheritedEnv {
		t.Setenv(k, "") // restored when the test ends
		if err := os.Unsetenv(k); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("MCP_TEST_KEY", "sk-secret")
	env, err := childEnv(nil)
	if err != nil || env == nil || len(env) != 0 {
		t.Errorf("childEnv: %q (nil: %v) %v, want an empty, non-nil environment", env, env == nil, err)
	}
	// The child itself: env(1) prints what it got.
	const printEnv = "/usr/bin/env"
	if _, err := os.Stat(printEnv); err != nil {
		t.Skipf("no %s to run as the child: %v", printEnv, err)
	}
	tr, err := newConn(Server{Name: "s", Command: []string{printEnv}}, nil).transport(&session{})
	if err != nil {
		t.Fatal(err)
	}
	cmd := tr.(*command).cmd
	out, err := cmd.Output()
	if err != nil || strings.Contains(string(out), "sk-secret") || len(out) != 0 {
		// Not printed: it may hold the test process's secrets.
		t.Fatalf("the child saw an environment of %d bytes (MCP_TEST_KEY in it: %v; %v), want an empty one",
			len(out), strings.Contains(string(out), "sk-secret"), err)
	}
}

// An HTTP 400 on a session is a lost session when its message says so
// (as the reference server's "No valid session ID provided"), with the
// message kept; any other 400 reaches the SDK as it came.
func TestLostSessionAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":%q},"id":1}`, r.URL.Query().Get("m"))
	}))
	defer srv.Close()
	rt := &roundTripper{base: http.DefaultTransport}
	send := func(msg string, session bool) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"?m="+url.QueryEscape(msg), nil)
		if err != nil {
			t.Fatal(err)
		}
		if session {
			req.Header.Set("Mcp-Session-Id", "s1")
		}
		return rt.RoundTrip(req)
	}
	_, err := send("Bad Request: No valid session ID provided", true)
	var ls *lostSession
	if !errors.As(err, &ls) || err.Error() != "the server lost the session: Bad Request: No valid session ID provided" || !unsent(err) {
		t.Errorf("a lost session: %v", err)
	}
	for _, tc := range []struct {
		msg     string
		session bool
	}{{"Bad Request: invalid params", true}, {"Bad Request: No valid session ID provided", false}} {
		resp, err := send(tc.msg, tc.session)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), tc.msg) {
			t.Errorf("%+v: %d %q, want the answer as it came", tc, resp.StatusCode, body)
		}
	}
}

// The tools a server lists as callable only as tasks are found in its
// raw answers, whether a JSON-RPC line (stdio) or an SSE data line.
func TestTaskTools(t *testing.T) {
	var tt taskTools
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a","execution":{"taskSupport":"required"}},{"name":"b","execution":{"taskSupport":"optional"}},{"name":"c"}]}}`,
		`data: {"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"d","execution":{"taskSupport":"required"}}]}}`,
		`{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"\"taskSupport\": \"required\""}]}}`,
		`not json "taskSupport"`,
	} {
		tt.line([]byte(line))
	}
	for name, want := range map[string]bool{"a": true, "b": false, "c": false, "d": true} {
		if tt.required(name) != want {
			t.Errorf("%s: required %v, want %v", name, !want, want)
		}
	}
}

// A tapReader passes on exactly what it reads, and each line of it (the
// last one at the end) to its tap, however the reads split it; the server
// lines taskTools parses never panic it.
func FuzzTapReader(f *testing.F) {
	f.Add([]byte("a\nb\n\nc"), uint8(1))
	f.Add([]byte(`{"result":{"tools":[{"name":"x","execution":{"taskSupport":"required"}}]}}`+"\n"), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		var lines [][]byte
		var tt taskTools
		r := &tapReader{r: io.NopCloser(chunked(data, int(chunk)%16+1)), tap: func(b []byte) {
			lines = append(lines, append([]byte(nil), b...))
			tt.line(b)
		}}
		got, err := io.ReadAll(r)
		if err != nil || string(got) != string(data) {
			t.Fatalf("read %q %v, want %q", got, err, data)
		}
		var want [][]byte
		for _, l := range strings.Split(string(data), "\n") {
			if l != "" {
				want = append(want, []byte(l))
			}
		}
		if fmt.Sprintf("%q", lines) != fmt.Sprintf("%q", want) {
			t.Fatalf("lines %q, want %q", lines, want)
		}
	})
}

// chunked reads data n bytes at a time.
func chunked(data []byte, n int) io.Reader {
	return &chunks{data: data, n: n}
}

type chunks struct {
	data []byte
	n    int
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := min(c.n, len(p), len(c.data))
	copy(p, c.data[:k])
	c.data = c.data[k:]
	return k, nil
}

// A call made on a session the SDK has seen end (the server ended it)
// never left: unsent. (A call cut in flight is not: the tests of a server
// killed during a call pin that down.)
func TestUnsentAfterTheEnd(t *testing.T) {
	ctx := actortest.Context(t)
	ms := sdk.NewServer(&sdk.Implementation{Name: "s", Version: "1"}, nil)
	ms.AddTool(&sdk.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
	st, ct := sdk.NewInMemoryTransports()
	ss, err := ms.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "t", Arguments: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	_ = ss.Close()
	_ = cs.Wait() // the SDK has seen the end
	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "t", Arguments: json.RawMessage(`{}`)})
	if err == nil || !unsent(err) {
		t.Errorf("a call after the end: %v, want it unsent", err)
	}
	if unsent(errors.New("calling \"tools/call\": server is closing: EOF")) {
		t.Error("a call cut in flight is taken for unsent")
	}
}
