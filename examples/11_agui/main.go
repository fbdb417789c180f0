// A team behind AG-UI, the protocol frontends such as CopilotKit speak.
//
//	go run ./examples/11_agui
//
// The team (@Planner and its person) is served by agui.Handler on a
// loopback port. The program plays the frontend: it posts runs (AG-UI's
// RunAgentInput) and reads each run's events. The first run's answer is
// streamed after a tool call that puts a task on the planning board (the
// state's delta); in the second the planner asks the person a question,
// which ends the run with an interrupt; the third answers it (a resume).
// Offline, on a scripted model.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/planning"
	"github.com/akgentic/akgentic-go/agui"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// serveAGUI serves team to AG-UI clients on ln until ctx ends: their
// input is the person's, sent to entry.
func serveAGUI(ctx context.Context, team *orchestrator.Team, person, entry *message.Address, ln net.Listener) error {
	h, err := agui.New(ctx, team, agui.Options{
		Person: person, // the team's HumanProxy: the client speaks as it; its questions are interrupts
		Entry:  entry,  // the member a run's message goes to; its response to the person finishes the run
		Token:  "",     // "": loopback only; set one to serve other hosts (Authorization: Bearer)
	})
	if err != nil {
		return err
	}
	return h.Serve(ctx, ln) // or mount it: mux.Handle("/agui/", http.StripPrefix("/agui", h))
}

// answer is one model output: a StructuredOutput sending one message.
func answer(intent agent.Intent, to, text string) llmtest.Step {
	out, _ := json.Marshal(agent.StructuredOutput{Messages: []agent.OutboundRequest{{MessageType: intent, Recipient: to, Message: text}}})
	return llmtest.Final(string(out))
}

// runOnce posts one run and prints its events: their types (a streamed
// text's pieces counted once), the text, the tool calls, the board and
// the interrupt. It returns the interrupt's id, if any.
func runOnce(ctx context.Context, out io.Writer, url string, input map[string]any) (string, error) {
	body, _ := json.Marshal(input)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return "", fmt.Errorf("%s: %s", resp.Status, b)
	}
	var types []string
	var text strings.Builder
	interrupt := ""
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e struct {
			Type         string `json:"type"`
			Delta        any    `json:"delta"`
			ToolCallName string `json:"toolCallName"`
			Outcome      *struct {
				Type       string `json:"type"`
				Interrupts []struct{ ID, Message string }
			} `json:"outcome"`
		}
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			return "", err
		}
		if len(types) == 0 || types[len(types)-1] != e.Type {
			types = append(types, e.Type)
		}
		switch e.Type {
		case "TEXT_MESSAGE_CONTENT":
			s, _ := e.Delta.(string)
			text.WriteString(s)
		case "TOOL_CALL_START":
			fmt.Fprintf(out, "  tool call: %s\n", e.ToolCallName)
		case "STATE_DELTA":
			b, _ := json.Marshal(e.Delta)
			if strings.Contains(string(b), `"/tasks"`) {
				var ops []struct {
					Value []struct{ Description string }
				}
				_ = json.Unmarshal(b, &ops)
				for _, t := range ops[0].Value {
					fmt.Fprintf(out, "  board: %s\n", t.Description)
				}
			}
		case "RUN_FINISHED":
			fmt.Fprintf(out, "  finished: %s\n", e.Outcome.Type)
			for _, i := range e.Outcome.Interrupts {
				interrupt = i.ID
				fmt.Fprintf(out, "  interrupt: %s\n", i.Message)
			}
		}
	}
	fmt.Fprintf(out, "  text: %s\n  events: %s\n", text.String(), strings.Join(types, " "))
	return interrupt, sc.Err()
}

func run(ctx context.Context, out io.Writer) (err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	model := llmtest.NewServer()
	defer model.Close()
	model.Model("@Planner").Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "update_planning", `{"update":{"create_tasks":[{"id":1,"description":"Book the venue"}]}}`)),
		answer(agent.Response, "@Human", "Planned: first, book the venue."),
		answer(agent.Request, "@Human", "How many guests?"),
		answer(agent.Response, "@Human", "A venue for 40 it is."),
	)

	sys := actor.NewSystem(actor.SystemConfig{})
	defer func() { err = errors.Join(err, shutdown(sys)) }()
	team, err := orchestrator.New(sys)
	if err != nil {
		return err
	}
	human, err := team.Spawn(ctx, &agent.HumanProxy{}, &actor.Config{Name: "@Human", Role: "Human"})
	if err != nil {
		return err
	}
	cfg := agent.NewConfig("@Planner", "Planner")
	cfg.Model = model.ModelConfig("gpt-4.1")
	cfg.Runtime.Stream = true // the answer streams: TEXT_MESSAGE_CONTENT as it is written
	cfg.Tools = tool.Cards{planning.New()}
	planner, err := team.Spawn(ctx, &agent.BaseAgent{Env: &agent.Env{HTTPClient: model.HTTPClient()}}, cfg)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- serveAGUI(sctx, team, human, planner, ln) }()
	defer func() { stop(); err = errors.Join(err, <-served) }()
	url := "http://" + ln.Addr().String() + "/"

	fmt.Fprintln(out, "run 1: plan the party")
	user := func(text string) map[string]any {
		return map[string]any{"threadId": "t1", "messages": []map[string]any{{"id": text, "role": "user", "content": text}}}
	}
	if _, err := runOnce(ctx, out, url, user("plan the party")); err != nil {
		return err
	}
	fmt.Fprintln(out, "run 2: book it")
	q, err := runOnce(ctx, out, url, user("book it"))
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "run 3: the answer to the interrupt")
	resume := map[string]any{"threadId": "t1", "messages": []any{}, "resume": []map[string]any{{"interruptId": q, "status": "resolved", "payload": "40"}}}
	if _, err := runOnce(ctx, out, url, resume); err != nil {
		return err
	}
	if failures := model.Failures(); len(failures) > 0 {
		return fmt.Errorf("scripted model: %v", failures)
	}
	return nil
}

// shutdown stops every agent and joins every goroutine of the system,
// giving up after five seconds.
func shutdown(sys *actor.System) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return sys.Shutdown(ctx)
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "agui:", err)
		os.Exit(1)
	}
}
