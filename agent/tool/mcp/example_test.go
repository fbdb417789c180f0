package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/mcp"
)

// An MCPTool card on an MCP server served over streamable HTTP (here one
// built in-process with the official SDK). An agent gets the card through
// its config (agent.AgentConfig.Tools); here its tool is called as the
// model would call it, with raw JSON arguments. For a stdio server, set
// Command (and Env) instead of URL.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type forecastArgs struct {
		City string `json:"city"`
		Days int    `json:"days,omitempty"`
	}
	server := sdk.NewServer(&sdk.Implementation{Name: "weather", Version: "1"}, nil)
	sdk.AddTool(server, &sdk.Tool{Name: "forecast", Description: "The weather forecast of a city."},
		func(_ context.Context, _ *sdk.CallToolRequest, in forecastArgs) (*sdk.CallToolResult, any, error) {
			if in.Days == 0 {
				in.Days = 1
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{
				Text: fmt.Sprintf("%s: sunny for %d day(s)", in.City, in.Days)}}}, nil, nil
		})
	site := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil))
	defer site.Close()

	card := &mcp.Card{Servers: []mcp.Server{{Name: "weather", URL: site.URL, Timeout: 5 * time.Second}}}
	caps, err := card.Attach(ctx, &tool.Owner{})
	if err != nil {
		panic(err)
	}
	defer caps.Close() // the agent does this when it stops
	forecast := caps.Tools[0]
	fmt.Printf("%s (strict %v): %s\n", forecast.Name, forecast.Strict, forecast.RawParameters)
	// days was optional: in the strict schema it is nullable, and a null
	// is dropped before the call.
	out, err := forecast.Call(ctx, json.RawMessage(`{"city": "Lyon", "days": null}`))
	fmt.Println(out, err)
	// Output:
	// weather_forecast (strict true): {"additionalProperties":false,"properties":{"city":{"type":"string"},"days":{"type":["integer","null"]}},"required":["city","days"],"type":"object"}
	// Lyon: sunny for 1 day(s) <nil>
}
