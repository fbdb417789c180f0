package llm_test

import (
	"context"
	"fmt"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// A run against the fake server: the model calls a tool, then answers with
// a structured output of the caller's type.
func ExampleRun() {
	srv := llmtest.NewServer()
	defer srv.Close()
	srv.Model("").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "add", `{"a":2,"b":3}`)),
		llmtest.Final(`{"answer":"2 + 3 = 5"}`),
	)

	type addArgs struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	add, err := llm.NewTool("add", "Add two integers.", func(_ context.Context, x addArgs) (any, error) {
		return x.A + x.B, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := llm.DefaultConfig()
	cfg.Model = srv.ModelConfig("gpt-4.1")
	cfg.Backstory = "You are a careful calculator."
	runner, err := llm.NewRunner(cfg, llm.Options{
		Tools:      []*llm.Tool{add},
		HTTPClient: srv.HTTPClient(),
		Observer: func(e llm.Event) {
			if u, ok := e.(llm.UsageEvent); ok {
				fmt.Printf("usage: %d in, %d out, $%.6f\n", u.InputTokens, u.OutputTokens, u.Cost)
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer runner.Close()

	type Answer struct {
		Answer string `json:"answer"`
	}
	out, err := llm.NewOutput[Answer]("Answer")
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := llm.Run(context.Background(), runner, llm.UserText("What is 2 + 3?"), out)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Answer)
	fmt.Println(runner.History()[2].Content) // the tool's reply
	// Output:
	// usage: 100 in, 20 out, $0.000360
	// usage: 100 in, 20 out, $0.000360
	// 2 + 3 = 5
	// 5
}

// An answer streamed in pieces, shown as it is written: each delta is
// added, and the text of its messages so far decoded from the unfinished
// JSON. A Seq 0 starts the answer over (here, the request sent again).
func ExampleStreamedAnswer() {
	var a llm.StreamedAnswer
	for _, d := range []llm.TextDeltaEvent{
		{RunID: "r1", Seq: 0, Delta: `{"messages":[{"message":"Hel`},
		{RunID: "r1", Seq: 1, Delta: `lo, \"world`},
		{RunID: "r1", Seq: 0, Delta: `{"messages":[{"message":"Hi`},
		{RunID: "r1", Seq: 1, Delta: `","recipient":"@Human"},{"message":"Done`},
	} {
		if a.Add(d) {
			fmt.Println(llm.StreamedText(a.Raw()))
		}
	}
	// Output:
	// Hel
	// Hello, "world
	// Hi
	// Hi · Done
}
