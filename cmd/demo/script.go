package main

import (
	_ "embed"
	"fmt"

	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// The offline demo: a recorded conversation served by agent/llmtest over
// the real OpenAI wire format. The transcript is made from the scripted
// models below (go test ./cmd/demo -run TestRecordTranscript -update) and
// replayed request by request: a request that differs from the recording
// (a prompt changed in the code) is answered 400 and the demo says so.

//go:embed testdata/demo.jsonl
var transcript []byte

// task is what the person asks for.
const task = "We need a tiny Go command that greets someone by name. Plan it, get it written and reviewed, and tell me when it is done."

// humanAnswer is the scripted person's answer to a question from an agent.
const humanAnswer = "English only, thanks. Default to \"World\" when no name is given."

// realAnswer is the person's answer to a question on a real model, when
// the demo answers for the person.
const realAnswer = "Use your best judgement."

// offlineReply is what the offline model says to anything unscripted (-i).
const offlineReply = `{"messages":[{"message_type":"response","recipient":"@Human","message":"I am the offline demo model, so I cannot take new work. Set OPENAI_API_KEY to talk to a real model. Slash commands work offline: /team_members, /team_roles, /hire_member QA, /planning_summary, /usage, /help."}]}`

// The hired members' names: Env.Rand always answers 0 (see newEnv).
const (
	developer = "@Developer100"
	reviewer  = "@QA100"
)

const greetGo = `package main

import (
	"fmt"
	"os"
)

func main() {
	name := "World"
	if len(os.Args) > 1 {
		name = os.Args[1]
	}
	fmt.Printf("Hello, %s!\n", name)
}
`

func send(intent, to, text string) string {
	return fmt.Sprintf(`{"messages":[{"message_type":%q,"recipient":%q,"message":%q}]}`, intent, to, text)
}

func call(id, tool, args string) llmtest.ToolCall { return llmtest.Call(id, tool, args) }

// script queues the conversation on the scripted models of srv.
func script(srv *llmtest.Server) {
	writeArgs := fmt.Sprintf(`{"path":"greet.go","content":%q}`, greetGo)
	srv.Model("@Manager").Enqueue(
		llmtest.ToolCalls(call("call_plan", "update_planning",
			`{"update":{"create_tasks":[{"id":1,"description":"Write greet.go: print Hello, <name>!"},{"id":2,"description":"Review greet.go","dependencies":[1]}]}}`)).
			WithUsage(1450, 120, 0),
		llmtest.Final(send("request", "Developer", "Please write greet.go in the workspace: a Go program that prints \"Hello, <name>!\" for the name given as its first argument.")).
			WithUsage(1610, 60, 1024),
		llmtest.Final(send("request", "QA", "Please review greet.go in the workspace and tell me if it is ready.")).
			WithUsage(1790, 45, 1024),
		llmtest.ToolCalls(call("call_done", "update_planning",
			`{"update":{"update_tasks":[{"id":1,"status":"completed"},{"id":2,"status":"completed"}]}}`)).
			WithUsage(1930, 70, 1536),
		llmtest.Final(send("response", "@Human", "Done: greet.go is written and reviewed. Try it with: go run greet.go Ada")).
			WithUsage(2010, 40, 1536),
	)
	srv.Model(developer).Enqueue(
		llmtest.ToolCalls(call("call_search", "web_search", `{"query":"go read command line arguments","max_results":2}`)).WithUsage(1200, 25, 0),
		llmtest.ToolCalls(call("call_write", "workspace_write", writeArgs)).WithUsage(1330, 150, 1024),
		llmtest.Final(send("response", "@Manager", "Done: greet.go prints \"Hello, <name>!\" (the name from os.Args[1]) and defaults to World.")).WithUsage(1520, 35, 1024),
	)
	srv.Model(reviewer).Enqueue(
		llmtest.ToolCalls(call("call_read", "workspace_read", `{"path":"greet.go"}`)).WithUsage(1180, 30, 0),
		llmtest.Final(send("request", "@Human", "Should the greeting support other languages, and what should it print without a name?")).WithUsage(1420, 40, 1024),
		llmtest.Final(send("response", "@Manager", "Reviewed greet.go: correct, English only and World by default as the person asked. Ready.")).WithUsage(1560, 35, 1024),
	)
}
