package a2a

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// TestBadRequestsGetTheProtocolsErrors: a body that is not JSON, JSON that
// is not a request, an unknown method, params that do not fit, a task id
// that does not exist, a message the agent cannot read, and a message to
// a task that has ended: each answered with the JSON-RPC error that says
// what was wrong, under the request's id when it could be read.
func TestBadRequestsGetTheProtocolsErrors(t *testing.T) {
	f := newFixture(t, Options{})
	f.model.Model("@Manager").Otherwise(reply("response", "@Human", "done"))
	done := f.rpc(`{"jsonrpc":"2.0","id":9,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hello"}]}}}`)
	if done.Error != nil {
		t.Fatal(done.Error)
	}
	var finished streamResponse
	if err := json.Unmarshal(done.Result, &finished); err != nil || finished.Task == nil || finished.Task.Status.State != stateCompleted {
		t.Fatalf("SendMessage: %s (%v); want a completed task", done.Result, err)
	}
	id := finished.Task.ID
	for _, tc := range []struct {
		name, body string
		code       int
		contains   string
		id         string
	}{
		{"not JSON", `{"jsonrpc":"2.0",`, codeParse, "not JSON", "null"},
		{"a batch", `[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]`, codeInvalidRequest, "batches", "null"},
		{"no method", `{"jsonrpc":"2.0","id":1}`, codeInvalidRequest, "method is missing", "1"},
		{"wrong version", `{"jsonrpc":"1.0","id":"a","method":"GetTask"}`, codeInvalidRequest, "jsonrpc", `"a"`},
		{"an object id", `{"jsonrpc":"2.0","id":{},"method":"GetTask"}`, codeInvalidRequest, "id must be", "null"},
		{"unknown method", `{"jsonrpc":"2.0","id":2,"method":"tasks/explode","params":{}}`, codeMethodNotFound, "tasks/explode", "2"},
		{"no params", `{"jsonrpc":"2.0","id":3,"method":"GetTask"}`, codeInvalidParams, "params are missing", "3"},
		{"params of the wrong type", `{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":7}}`, codeInvalidParams, "params", "3"},
		{"unknown task", `{"jsonrpc":"2.0","id":4,"method":"GetTask","params":{"id":"nope"}}`, codeTaskNotFound, `task "nope" not found`, "4"},
		{"unknown task (0.3)", `{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"id":"nope"}}`, codeTaskNotFound, "not found", "4"},
		{"cancel an unknown task", `{"jsonrpc":"2.0","id":4,"method":"CancelTask","params":{"id":"nope"}}`, codeTaskNotFound, "not found", "4"},
		{"message to an unknown task", `{"jsonrpc":"2.0","id":5,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","taskId":"nope","parts":[{"text":"x"}]}}}`, codeTaskNotFound, "not found", "5"},
		{"no message", `{"jsonrpc":"2.0","id":5,"method":"SendMessage","params":{}}`, codeInvalidParams, "message is missing", "5"},
		{"no message id", `{"jsonrpc":"2.0","id":5,"method":"message/send","params":{"message":{"role":"user","parts":[{"kind":"text","text":"x"}]}}}`, codeInvalidParams, "messageId", "5"},
		{"a file", `{"jsonrpc":"2.0","id":5,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"file","file":{"uri":"http://x/y"}}]}}}`, codeContentType, "text only", "5"},
		{"no parts", `{"jsonrpc":"2.0","id":5,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}`, codeInvalidParams, "no text", "5"},
		{"a cancel as a new task", `{"jsonrpc":"2.0","id":5,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"/cancel now"}]}}}`, codeInvalidParams, "use CancelTask", "5"},
		{"an agent's message", `{"jsonrpc":"2.0","id":5,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}]}}}`, codeInvalidParams, "user role", "5"},
		{"message to an ended task", `{"jsonrpc":"2.0","id":6,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","taskId":"` + id + `","parts":[{"text":"x"}]}}}`, codeUnsupported, "takes no more messages", "6"},
		{"cancel an ended task", `{"jsonrpc":"2.0","id":7,"method":"CancelTask","params":{"id":"` + id + `"}}`, codeNotCancelable, "cannot be canceled", "7"},
		{"subscribe to an ended task", `{"jsonrpc":"2.0","id":8,"method":"SubscribeToTask","params":{"id":"` + id + `"}}`, codeUnsupported, "nothing to subscribe to", "8"},
		{"push notifications", `{"jsonrpc":"2.0","id":8,"method":"CreateTaskPushNotificationConfig","params":{}}`, codePushUnsupported, "not supported", "8"},
		{"a bad page size", `{"jsonrpc":"2.0","id":8,"method":"ListTasks","params":{"pageSize":1000}}`, codeInvalidParams, "pageSize", "8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := f.rpc(tc.body)
			if a.Error == nil {
				t.Fatalf("no error; result %s", a.Result)
			}
			if a.Error.Code != tc.code || !strings.Contains(a.Error.Message, tc.contains) {
				t.Fatalf("error %d %q; want %d containing %q", a.Error.Code, a.Error.Message, tc.code, tc.contains)
			}
			if string(a.ID) != tc.id {
				t.Fatalf("id %s; want %s", a.ID, tc.id)
			}
		})
	}
}

// TestListTasksPagesFromTheNewest: ListTasks filters by state and pages
// with the token it gave.
func TestListTasksPagesFromTheNewest(t *testing.T) {
	f := newFixture(t, Options{})
	f.model.Model("@Manager").Otherwise(reply("response", "@Human", "done"))
	for i := 0; i < 3; i++ {
		if a := f.rpc(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"go"}]}}}`); a.Error != nil {
			t.Fatal(a.Error)
		}
	}
	var page listResult
	a := f.rpc(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":2,"status":"TASK_STATE_COMPLETED"}}`)
	if a.Error != nil || json.Unmarshal(a.Result, &page) != nil {
		t.Fatalf("ListTasks: %v %s", a.Error, a.Result)
	}
	if len(page.Tasks) != 2 || page.TotalSize != 3 || page.NextPageToken == "" || page.Tasks[0].Artifacts != nil {
		t.Fatalf("first page: %+v; want 2 of 3 tasks, a next page, no artifacts", page)
	}
	a = f.rpc(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":2,"pageToken":"` + page.NextPageToken + `"}}`)
	var last listResult
	if a.Error != nil || json.Unmarshal(a.Result, &last) != nil || len(last.Tasks) != 1 || last.NextPageToken != "" {
		t.Fatalf("last page: %v %s", a.Error, a.Result)
	}
	a = f.rpc(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"status":"TASK_STATE_WORKING"}}`)
	var none listResult
	if a.Error != nil || json.Unmarshal(a.Result, &none) != nil || len(none.Tasks) != 0 {
		t.Fatalf("working tasks: %v %s", a.Error, a.Result)
	}
}

// TestAccessFollowsTheStudiosRule: loopback requests are served; others
// need the token, and the agent card, which says how to present it, is
// served to anyone when there is one.
func TestAccessFollowsTheStudiosRule(t *testing.T) {
	open := newFixture(t, Options{})
	locked := newFixture(t, Options{Token: "s3cret"})
	for _, tc := range []struct {
		name   string
		srv    *Server
		peer   string
		path   string
		auth   string
		status int
	}{
		{"loopback card", open.server, "127.0.0.1:1", "/.well-known/agent-card.json", "", 200},
		{"remote card, no token set", open.server, "192.0.2.1:1", "/.well-known/agent-card.json", "", 403},
		{"remote rpc, no token set", open.server, "192.0.2.1:1", "/", "", 403},
		{"remote card, a token set", locked.server, "192.0.2.1:1", "/.well-known/agent-card.json", "", 200},
		{"remote rpc without the token", locked.server, "192.0.2.1:1", "/", "", 401},
		{"remote rpc, a wrong token", locked.server, "192.0.2.1:1", "/", "Bearer nope", 401},
		{"remote rpc with the token", locked.server, "192.0.2.1:1", "/", "Bearer s3cret", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method, body := http.MethodGet, ""
			if tc.path == "/" {
				method, body = http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`
			}
			host := "example.com"
			if strings.HasPrefix(tc.peer, "127.") {
				host = "127.0.0.1"
			}
			r := httptest.NewRequest(method, "http://"+host+tc.path, strings.NewReader(body))
			r.RemoteAddr = tc.peer
			r.Header.Set("Content-Type", "application/json")
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			w := httptest.NewRecorder()
			tc.srv.ServeHTTP(w, r)
			if w.Code != tc.status {
				b, _ := io.ReadAll(w.Body)
				t.Fatalf("status %d (%s); want %d", w.Code, b, tc.status)
			}
		})
	}
	// The locked server's card names the bearer scheme.
	r := httptest.NewRequest(http.MethodGet, "http://example.com/.well-known/agent-card.json", nil)
	r.RemoteAddr = "192.0.2.1:1"
	w := httptest.NewRecorder()
	locked.server.ServeHTTP(w, r)
	if !strings.Contains(w.Body.String(), `"httpAuthSecurityScheme":{"description":"the server's token","scheme":"Bearer"}`) {
		t.Fatalf("the card does not name the bearer scheme: %s", w.Body.String())
	}
}

// FuzzParseRequest: no body, however hostile, panics the parser or the
// message reader.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"message/send","params":{"message":{"kind":"message","parts":[{"kind":"data","data":{"a":1}}]}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, e := parseRequest(body)
		if e != nil || req == nil {
			return
		}
		var p sendParams
		if params(req, &p) == nil && p.Message != nil {
			read10(p.Message)
			_, _ = p.Message.text()
		}
	})
}

// TestSubscribeToTaskFollowsItToItsEnd: SubscribeToTask (and its 0.3
// name) streams a task under way: first the task as it is, then its
// updates, until it ends (here canceled), when the stream closes.
func TestSubscribeToTaskFollowsItToItsEnd(t *testing.T) {
	for _, method := range []string{"SubscribeToTask", "tasks/resubscribe"} {
		t.Run(method, func(t *testing.T) {
			f := newFixture(t, Options{})
			f.model.Model("@Manager").Enqueue(llmtest.Hang())
			a := f.rpc(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"work"}]},"configuration":{"returnImmediately":true}}}`)
			var started streamResponse
			if a.Error != nil || json.Unmarshal(a.Result, &started) != nil || started.Task == nil {
				t.Fatalf("SendMessage: %v %s", a.Error, a.Result)
			}
			id := started.Task.ID
			req, err := http.NewRequestWithContext(f.ctx, http.MethodPost, f.http.URL+"/", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"`+method+`","params":{"id":"`+id+`"}}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := f.http.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			var states []string
			canceled := false
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				var ev struct {
					Result map[string]json.RawMessage `json:"result"`
				}
				if err := json.Unmarshal([]byte(data), &ev); err != nil {
					t.Fatal(err)
				}
				var state struct {
					Kind   string `json:"kind"`
					Status struct {
						State string `json:"state"`
					} `json:"status"`
				}
				raw := data
				if method == "SubscribeToTask" { // 1.0 wraps each event: {"task": …} or {"statusUpdate": …}
					for _, v := range ev.Result {
						raw = string(v)
					}
				} else {
					b, _ := json.Marshal(ev.Result)
					raw = string(b)
				}
				if err := json.Unmarshal([]byte(raw), &state); err != nil {
					t.Fatal(err)
				}
				states = append(states, state.Status.State)
				if !canceled { // the stream is open: cancel the task
					canceled = true
					if c := f.rpc(`{"jsonrpc":"2.0","id":3,"method":"CancelTask","params":{"id":"` + id + `"}}`); c.Error != nil {
						t.Fatal(c.Error)
					}
				}
			}
			if len(states) < 2 || states[len(states)-1] != map[string]string{"SubscribeToTask": stateCanceled, "tasks/resubscribe": "canceled"}[method] {
				t.Fatalf("the stream's states: %v; want the task, then canceled, then the end", states)
			}
		})
	}
}

// TestCancelReachesATurnThatBeginsLater: a task canceled while its message
// still waits in the entry member's mailbox (behind another task's turn)
// does not cancel the turn running there, and its own turn is canceled
// the moment it begins: no turn of a canceled task runs on.
func TestCancelReachesATurnThatBeginsLater(t *testing.T) {
	f := newFixture(t, Options{})
	f.model.Model("@Manager").Enqueue(llmtest.Hang(), llmtest.Hang())
	start := func(text string) string {
		t.Helper()
		a := f.rpc(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"` + text + `","role":"ROLE_USER","parts":[{"text":"` + text + `"}]},"configuration":{"returnImmediately":true}}}`)
		var r streamResponse
		if a.Error != nil || json.Unmarshal(a.Result, &r) != nil || r.Task == nil {
			t.Fatalf("SendMessage %s: %v %s", text, a.Error, a.Result)
		}
		return r.Task.ID
	}
	cancel := func(id string) {
		t.Helper()
		if c := f.rpc(`{"jsonrpc":"2.0","id":2,"method":"CancelTask","params":{"id":"` + id + `"}}`); c.Error != nil {
			t.Fatalf("CancelTask %s: %v", id, c.Error)
		}
	}
	first := start("first")
	// The first task's turn has begun: the second task's message queues
	// behind it.
	actortest.WaitFor(t, f.rec, func(r *message.ReceivedMessage) bool {
		return r.Sender != nil && r.Sender.AgentID() == f.manager.AgentID()
	})
	second := start("second")
	cancel(second)
	cancel(first)
	// Both turns ended: the manager takes a call again.
	if err := proxy.Do(f.ctx, f.manager, func(*actor.Context, actor.Actor) error { return nil }); err != nil {
		t.Fatalf("the manager is still busy: %v", err)
	}
	ws, err := f.team.Messages(f.ctx, orchestrator.Filter{Type: "WarningMessage"})
	if err != nil {
		t.Fatal(err)
	}
	cut := 0
	for _, w := range orchestrator.Select[*message.WarningMessage](ws) {
		if strings.Contains(w.Content, "turn cancelled by @Human") {
			cut++
		}
	}
	if cut != 2 {
		t.Errorf("%d cancelled turns; want 2 (each task's): %v", cut, actortest.Describe(ws))
	}
	for _, id := range []string{first, second} {
		var got wireTask
		if a := f.rpc(`{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"` + id + `"}}`); a.Error != nil || json.Unmarshal(a.Result, &got) != nil {
			t.Fatalf("GetTask %s: %v %s", id, a.Error, a.Result)
		} else if got.Status.State != stateCanceled {
			t.Errorf("task %s is %s; want canceled", id, got.Status.State)
		}
	}
}

// TestCancelBeforeTheLogShowsTheFirstMessage: the team's log reaches the
// task store on a queue of its own, so a client may cancel a task before
// the store has read that its first message was sent. The message was
// sent to the entry member all the same: its turn, when it begins, is
// canceled.
func TestCancelBeforeTheLogShowsTheFirstMessage(t *testing.T) {
	person, entry := uuid.New(), uuid.New()
	s := newStore(person, entry, 10)
	to := message.NewSnapshotAddress(message.Identity{AgentID: entry, Name: "@Manager"})
	mid := message.NewID()
	tk, e := s.create("", wireMessage{MessageID: "m", Role: roleUser, Parts: []part{textPart("hi")}}, mid, to)
	if e != nil {
		t.Fatal(e)
	}
	if busy, _, e := s.cancel(tk); e != nil || len(busy) != 0 {
		t.Fatalf("cancel: busy %v, %v; want no turn running yet", busy, e)
	}
	s.mu.Lock()
	s.received(mid) // the turn on the first message begins
	s.mu.Unlock()
	got := s.takeRecancel()
	if len(got) != 1 || got[0].task != tk.id || got[0].member.AgentID() != entry {
		t.Fatalf("turns to cancel: %v; want the entry member's turn on task %s", got, tk.id)
	}
}
