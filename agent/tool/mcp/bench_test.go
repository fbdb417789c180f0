package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/akgentic/akgentic-go/agent/tool/mcp"
)

// latency is what each request to a benchmark server costs (a server
// starting, a network), so that connecting dominates as it does for
// real servers.
const latency = 20 * time.Millisecond

// slowServers are n HTTP MCP servers that answer each request after
// latency.
func slowServers(b *testing.B, n int) []mcp.Server {
	b.Helper()
	var out []mcp.Server
	for i := range n {
		ms := sdk.NewServer(&sdk.Implementation{Name: "slow", Version: "1"}, nil)
		ms.AddTool(&sdk.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("ok"), nil })
		h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return ms }, nil)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(latency) // the simulated cost, not a synchronisation
			h.ServeHTTP(w, r)
		}))
		b.Cleanup(func() {
			srv.Close()
			for ss := range ms.Sessions() {
				_ = ss.Close()
			}
		})
		out = append(out, mcp.Server{Name: fmt.Sprintf("s%d", i), URL: srv.URL})
	}
	return out
}

func benchmarkAttach(b *testing.B, n int) {
	servers := slowServers(b, n)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		caps, err := (&mcp.Card{Servers: servers}).Attach(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := caps.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAttachOneServer is the baseline of BenchmarkAttachThreeServers:
// a card of one server, connected and closed.
func BenchmarkAttachOneServer(b *testing.B) { benchmarkAttach(b, 1) }

// BenchmarkAttachThreeServers is a card of three servers: connected
// together, it costs about what one does.
func BenchmarkAttachThreeServers(b *testing.B) { benchmarkAttach(b, 3) }
