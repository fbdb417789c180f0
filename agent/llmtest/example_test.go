package llmtest_test

import (
	"context"
	"fmt"

	openai "github.com/sashabaranov/go-openai"

	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// A scripted model answers a tool call, then a final structured output; the
// client is plain go-openai pointed at the fake server.
func ExampleServer() {
	srv := llmtest.NewServer()
	defer srv.Close()
	srv.Model("@Manager").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "hire_members", `{"roles":["QA"]}`)),
		llmtest.Final(`{"messages":[{"message_type":"response","message":"Plan: ship it","recipient":"@Human"}]}`),
	)
	// Any OpenAI client works: point it at URL() through HTTPClient().
	cfg := openai.DefaultConfig("sk-test")
	cfg.BaseURL = srv.URL()
	cfg.HTTPClient = srv.HTTPClient()
	client := openai.NewClientWithConfig(cfg)
	req := openai.ChatCompletionRequest{
		Model:          "gpt-4.1",
		ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject},
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: "@Manager (role: Manager) - [you]"},
			{Role: openai.ChatMessageRoleUser, Content: "Plan the next sprint, in JSON."},
		},
	}
	resp, err := client.CreateChatCompletion(context.Background(), req)
	if err != nil {
		fmt.Println(err)
		return
	}
	call := resp.Choices[0].Message.ToolCalls[0]
	fmt.Println(call.ID, call.Function.Name, call.Function.Arguments)

	// Every tool call must be answered before the next request.
	req.Messages = append(req.Messages, resp.Choices[0].Message,
		openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: call.ID, Content: "Members hired: [@QA123]"})
	resp, err = client.CreateChatCompletion(context.Background(), req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Choices[0].Message.Content)
	fmt.Println(len(srv.RequestsFor("@Manager")), "requests")
	// Output:
	// call_1 hire_members {"roles":["QA"]}
	// {"messages":[{"message_type":"response","message":"Plan: ship it","recipient":"@Human"}]}
	// 2 requests
}
