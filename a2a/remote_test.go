package a2a

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// register adds the card of a remote agent at url to the team, for the
// role Weather.
func (f *fixture) register(url string) {
	f.t.Helper()
	card, err := orchestrator.NewAgentCard(orchestrator.AgentCard{
		AgentClass: RemoteKind, Description: "Answers questions about the weather.", Skills: []string{"weather"}, CanBeHired: true,
		Config: &RemoteConfig{Config: actor.Config{Name: "@Weather", Role: "Weather"}, URL: url},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.team.Register(f.ctx, card); err != nil {
		f.t.Fatal(err)
	}
}

// said waits for a message from a member named from to one named to
// whose content contains text, and returns it.
func (f *fixture) said(from, to string, intent agent.Intent, text string) *agent.AgentMessage {
	f.t.Helper()
	sm := actortest.WaitFor(f.t, f.rec, func(sm *message.SentMessage) bool {
		am, ok := sm.Message.(*agent.AgentMessage)
		return ok && am.Sender != nil && strings.HasPrefix(am.Sender.Name(), from) && sm.Recipient.Name() == to &&
			am.Type == intent && strings.Contains(am.Content, text)
	})
	return sm.Message.(*agent.AgentMessage)
}

// weather starts the @a2a-js/sdk agent of testdata/js/server.mjs and
// returns its URL and its output.
func weather(t *testing.T, ctx context.Context) (string, <-chan string) {
	t.Helper()
	_, lines := nodeServer(t, "server.mjs", "0")
	return "http://127.0.0.1:" + line(t, ctx, lines, "listening ") + "/", lines
}

// TestRemoteAgentIsHiredByRoleAndAnswers: an agent hires, by its role, a
// member that is an @a2a-js/sdk agent, and gets the remote task's answer
// (streamed in two chunks) as a response.
func TestRemoteAgentIsHiredByRoleAndAnswers(t *testing.T) {
	f := newTeam(t, false)
	url, _ := weather(t, f.ctx)
	f.register(url)
	f.model.Model("@Manager").Enqueue(reply("request", "Weather", "hello"), reply("response", "@Human", "done"))
	if err := agent.Say(f.ctx, f.human, f.manager, agent.NewRequest("ask the weather agent")); err != nil {
		t.Fatal(err)
	}
	if got := f.said("@Weather", "@Manager", agent.Response, "echo").Content; got != "echo: hello" {
		t.Fatalf("the remote answer is %q; want %q", got, "echo: hello")
	}
	f.said("@Manager", "@Human", agent.Response, "done")
	// The usage the remote agent reported is the member's.
	actortest.WaitFor(t, f.rec, func(ev *message.EventMessage) bool {
		u, ok := message.EventAs[llm.UsageEvent](ev)
		return ok && strings.HasPrefix(ev.Sender.Name(), "@Weather") && u.InputTokens == 12 && u.OutputTokens == 5 && u.ModelName == "Weather"
	})
}

// TestRemoteQuestionGoesToTheMemberThatAsked: the remote agent's
// input-required is a request to the member that asked; its response is
// the remote task's next message, and the task's answer comes back.
func TestRemoteQuestionGoesToTheMemberThatAsked(t *testing.T) {
	f := newTeam(t, false)
	url, _ := weather(t, f.ctx)
	f.register(url)
	if _, err := f.team.Hire(f.ctx, "Weather", "@Weather"); err != nil {
		t.Fatal(err)
	}
	f.model.Model("@Manager").Enqueue(
		reply("request", "@Weather", "question: is it sunny?"),
		reply("response", "@Weather", "Paris"),
		reply("response", "@Human", "sunny"),
	)
	if err := agent.Say(f.ctx, f.human, f.manager, agent.NewRequest("ask the weather agent")); err != nil {
		t.Fatal(err)
	}
	f.said("@Weather", "@Manager", agent.Request, "which city?")
	f.said("@Weather", "@Manager", agent.Response, "sunny in Paris")
	f.said("@Manager", "@Human", agent.Response, "sunny")
}

// TestRemoteTaskIsCanceledWithTheTurnAndTheStop: a cancel of the member's
// turn, and the team's stop, cancel the remote task.
func TestRemoteTaskIsCanceledWithTheTurnAndTheStop(t *testing.T) {
	f := newTeam(t, false)
	url, lines := weather(t, f.ctx)
	f.register(url)
	remote, err := f.team.Hire(f.ctx, "Weather", "@Weather")
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Say(f.ctx, f.human, remote, agent.NewRequest("slow one")); err != nil {
		t.Fatal(err)
	}
	task := line(t, f.ctx, lines, "slow ")
	if err := agent.Say(f.ctx, f.human, remote, agent.NewRequest("/cancel enough")); err != nil {
		t.Fatal(err)
	}
	if got := line(t, f.ctx, lines, "canceled "); got != task {
		t.Fatalf("canceled %q; want the task %q", got, task)
	}
	actortest.WaitFor(f.t, f.rec, func(w *message.WarningMessage) bool {
		return w.Sender != nil && w.Sender.Name() == "@Weather" && strings.Contains(w.Content, "canceled")
	})

	if err := agent.Say(f.ctx, f.human, remote, agent.NewRequest("slow two")); err != nil {
		t.Fatal(err)
	}
	task = line(t, f.ctx, lines, "slow ")
	if err := f.team.Stop(f.ctx); err != nil {
		t.Fatal(err)
	}
	if got := line(t, f.ctx, lines, "canceled "); got != task {
		t.Fatalf("canceled %q; want the task %q", got, task)
	}
}

// TestRemoteAgentDyingMidTaskIsAnswered: a remote agent that goes away in
// the middle of a task leaves no turn waiting: the sender gets a response
// saying the task could not be finished and may be sent again.
func TestRemoteAgentDyingMidTaskIsAnswered(t *testing.T) {
	f := newTeam(t, false)
	url, _ := weather(t, f.ctx)
	f.register(url)
	remote, err := f.team.Hire(f.ctx, "Weather", "@Weather")
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Say(f.ctx, f.human, remote, agent.NewRequest("die now")); err != nil {
		t.Fatal(err)
	}
	got := f.said("@Weather", "@Human", agent.Response, "could not finish the task").Content
	if !strings.Contains(got, "can be sent again") {
		t.Fatalf("the answer %q does not say the request can be sent again", got)
	}
}

// TestInvalidRemoteCardFailsTheStart: a remote agent whose card cannot be
// read, is not a card, has no name, or offers no JSON-RPC interface of a
// version this client speaks fails its start with an error that says
// why, and every request to it is answered with that error.
// echoedKey is shaped like an API key: a peer's error that echoes it must
// reach no record.
const echoedKey = "sk-proj-" + "abcdefghijklmnopqrstuvwxyz0123456789"

func TestInvalidRemoteCardFailsTheStart(t *testing.T) {
	cards := map[string]string{
		"/notjson/.well-known/agent-card.json": `<html>`,
		"/noname/.well-known/agent-card.json":  `{"name":"","skills":[],"supportedInterfaces":[{"url":"http://x/","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
		"/grpc/.well-known/agent-card.json":    `{"name":"g","skills":[],"supportedInterfaces":[{"url":"http://x/","protocolBinding":"GRPC","protocolVersion":"1.0"}]}`,
		"/badurl/.well-known/agent-card.json":  `{"name":"b","skills":[],"supportedInterfaces":[{"url":"ftp://x/","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/echo/.well-known/agent-card.json" { // a peer echoing a key in its error
			http.Error(w, "bad key "+echoedKey, http.StatusUnauthorized)
			return
		}
		body, ok := cards[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	for _, tc := range []struct{ path, want string }{
		{"/missing", "404"},
		{"/echo", "401 Unauthorized: bad key [REDACTED]"},
		{"/notjson", "is not an agent card"},
		{"/noname", "has no name"},
		{"/grpc", "offers no JSON-RPC interface of A2A 1.0 or 0.3 (it offers: GRPC 1.0)"},
		{"/badurl", "not an http(s) URL"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			f := newTeam(t, false)
			f.register(srv.URL + tc.path)
			remote, err := f.team.Hire(f.ctx, "Weather", "@Weather")
			if err != nil {
				t.Fatal(err)
			}
			failed := actortest.WaitFor(t, f.rec, func(e *message.ErrorMessage) bool {
				return e.Sender != nil && e.Sender.Name() == "@Weather" && strings.Contains(e.Content, tc.want)
			})
			if strings.Contains(failed.Content, echoedKey) {
				t.Fatalf("the start error shows the peer's echoed key: %s", failed.Content)
			}
			if err := agent.Say(f.ctx, f.human, remote, agent.NewRequest("hello")); err != nil {
				t.Fatal(err)
			}
			f.said("@Weather", "@Human", agent.Response, tc.want)
		})
	}
}

// TestTwoTeamsTalkToEachOther: a team hires, as a member, another team served
// by Server: over 1.0 streamed, over 1.0 polled (a card without
// streaming), and over 0.3 (a card offering only 0.3).
func TestTwoTeamsTalkToEachOther(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(card map[string]any)
	}{
		{"1.0", nil},
		{"1.0 polled", func(card map[string]any) { card["capabilities"] = map[string]any{"streaming": false} }},
		{"0.3", func(card map[string]any) { delete(card, "supportedInterfaces") }}, // a 0.3 card: url and protocolVersion
	} {
		t.Run(tc.name, func(t *testing.T) {
			served := newFixture(t, Options{})
			served.model.Model("@Manager").Enqueue(reply("response", "@Human", "42"))
			url := served.http.URL + "/"
			if tc.edit != nil {
				edited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					resp, err := http.Get(served.http.URL + "/.well-known/agent-card.json")
					if err != nil {
						http.Error(w, err.Error(), http.StatusBadGateway)
						return
					}
					defer resp.Body.Close()
					var card map[string]any
					_ = json.NewDecoder(resp.Body).Decode(&card)
					tc.edit(card)
					_ = json.NewEncoder(w).Encode(card)
				}))
				defer edited.Close()
				url = edited.URL + "/card.json"
			}
			f := newTeam(t, false)
			f.register(url)
			f.model.Model("@Manager").Enqueue(reply("request", "Weather", "the answer?"), reply("response", "@Human", "done"))
			if err := agent.Say(f.ctx, f.human, f.manager, agent.NewRequest("ask the other team")); err != nil {
				t.Fatal(err)
			}
			if got := f.said("@Weather", "@Manager", agent.Response, "").Content; got != "42" {
				t.Fatalf("the other team answered %q; want 42", got)
			}
			// The served team's usage for the task is the member's.
			actortest.WaitFor(t, f.rec, func(ev *message.EventMessage) bool {
				u, ok := message.EventAs[llm.UsageEvent](ev)
				return ok && strings.HasPrefix(ev.Sender.Name(), "@Weather") && u.InputTokens > 0 && u.ProviderName == "a2a"
			})
		})
	}
}
