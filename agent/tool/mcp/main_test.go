package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/agent/tool/mcp"
)

// serverEnv, when set in the environment, makes the test binary an MCP
// stdio server (the test's child process) instead of running the tests.
const serverEnv = "AKG_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "stdio" {
		// The child: serve until stdin closes; crash exits the process.
		s := newServer(func(context.Context) { os.Exit(3) }, nil)
		if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil && !strings.Contains(err.Error(), "EOF") {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv(serverEnv) == "relay" {
		os.Exit(relay())
	}
	goleak.VerifyTestMain(m)
}

// echoArgs are echo's arguments: upper is optional.
type echoArgs struct {
	Text  string `json:"text" jsonschema:"the text to echo"`
	Upper bool   `json:"upper,omitempty" jsonschema:"answer in upper case"`
}

// newServer is the MCP server of the tests, the same over both transports:
//
//   - echo(text, upper?): the text (strict schema with an optional property)
//   - picture(): a caption and a 4-byte PNG
//   - fail(): an error result, "the disk is full"
//   - stats(n >= 1): structured content (schema with minimum: non-strict)
//   - secret(): for the deny lists
//   - pid(): the server's process id and MCP_TEST_GREETING
//   - hang(): answers when the call is cancelled or release is closed
//   - crash(): calls crash (the child exits; the HTTP test breaks the
//     connection)
func newServer(crash func(context.Context), release <-chan struct{}) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo a text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoArgs) (*sdk.CallToolResult, any, error) {
			out := in.Text
			if in.Upper {
				out = strings.ToUpper(out)
			}
			return text(out), nil, nil
		})
	empty := json.RawMessage(`{"type":"object"}`)
	raw := func(name, description string, schema json.RawMessage, h sdk.ToolHandler) {
		s.AddTool(&sdk.Tool{Name: name, Description: description, InputSchema: schema}, h)
	}
	raw("picture", "Draw a picture.", empty, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a red dot"},
			&sdk.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}}}, nil
	})
	raw("fail", "Always fails.", empty, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the disk is full"}}}, nil
	})
	raw("stats", "Statistics of 1..n.", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`),
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in struct{ N int }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return &sdk.CallToolResult{StructuredContent: map[string]int{"n": in.N, "sum": in.N * (in.N + 1) / 2}}, nil
		})
	raw("secret", "Not for agents.", empty, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text("classified"), nil
	})
	raw("pid", "The server's process.", empty, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		b, _ := json.Marshal(map[string]any{"pid": os.Getpid(), "greeting": os.Getenv("MCP_TEST_GREETING"), "key": os.Getenv("MCP_TEST_KEY")})
		return text(string(b)), nil
	})
	raw("hang", "Never answers.", empty, func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		select {
		case <-ctx.Done():
		case <-release:
		}
		return text("late"), nil
	})
	raw("crash", "Kills the server.", empty, func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		crash(ctx)
		return text("survived"), nil
	})
	return s
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// stdioServer is the test binary run as an MCP stdio server.
func stdioServer(t *testing.T, name string) mcp.Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcp.Server{Name: name, Command: []string{exe, "-test.run=^$"}, Env: map[string]string{serverEnv: "stdio"}}
}

// httpServer serves newServer over streamable HTTP until the test ends.
// Its crash tool sends on crashed (when not nil), so that the test can
// break the connection mid-call; crash and hang then block until the
// call's context ends or release is called (at the latest when the test
// ends: the SDK's server waits for its handlers when a session is
// deleted).
func httpServer(t *testing.T, name string, crashed chan<- struct{}) (s mcp.Server, srv *httptest.Server, release func()) {
	t.Helper()
	ch := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	ms := newServer(func(ctx context.Context) {
		if crashed != nil {
			crashed <- struct{}{}
		}
		select {
		case <-ctx.Done():
		case <-ch:
		}
	}, ch)
	srv = httptest.NewServer(streamable(t, ms))
	t.Cleanup(srv.Close)
	t.Cleanup(release)
	return mcp.Server{Name: name, URL: srv.URL + "/mcp"}, srv, release
}

// streamable serves ms over streamable HTTP and, when the test ends, closes
// every session ms still has: a session whose client went away without
// ending it (a failed attach, a cut connection) keeps the SDK's reader
// running, and goleak would find it after the last test.
func streamable(t *testing.T, ms *sdk.Server) http.Handler {
	t.Helper()
	t.Cleanup(func() {
		for ss := range ms.Sessions() {
			_ = ss.Close()
		}
	})
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return ms }, nil)
}
