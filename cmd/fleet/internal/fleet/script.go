package fleet

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// The members of every team, by name.
const (
	humanName   = "@Human"
	managerName = "@Manager"
)

// workerNames are the two workers of every team; turn k goes to
// workerNames[k%2].
var workerNames = [2]string{"@Worker1", "@Worker2"}

// What the scripted models answer: the task the manager hands a worker,
// the worker's result, the manager's answer to the person.
const (
	taskText   = "Do the task."
	resultText = "Task done."
	answerText = "Done: the task is complete."
)

// The routing keys of the scripted models (llmtest.Server.Model).
const (
	keyRoute1 = "manager routes to @Worker1"
	keyRoute2 = "manager routes to @Worker2"
	keyAnswer = "manager answers the person"
	keyWorker = "worker answers the manager"
)

// script is the scripted model every agent of the fleet talks to. All
// teams share one llmtest server, so the answers cannot be queued per
// agent (the teams' calls interleave): the router reads the last user
// message of a request, the one the agent was just given, and picks a
// model whose fixed answer (Otherwise) is the next step of a turn.
type script struct {
	srv *llmtest.Server
	// calls counts the requests routed; unexpected those that matched no
	// step of a turn (they get an empty output and the turn stalls).
	calls, unexpected atomic.Int64
}

// newScript starts the server and scripts its models.
func newScript() *script {
	s := &script{}
	s.srv = llmtest.NewServer(llmtest.WithRouter(s.route))
	s.srv.Model(keyRoute1).Otherwise(final(agent.Request, workerNames[0], taskText))
	s.srv.Model(keyRoute2).Otherwise(final(agent.Request, workerNames[1], taskText))
	s.srv.Model(keyAnswer).Otherwise(final(agent.Response, humanName, answerText))
	s.srv.Model(keyWorker).Otherwise(final(agent.Response, managerName, resultText))
	return s
}

// client returns a client of the server that keeps as many idle
// connections as there are calls in flight (conc): http.Transport keeps 2
// per host by default, and redials the others on every call.
func (s *script) client(conc int) *http.Client {
	t := s.srv.HTTPClient().Transport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = conc
	return &http.Client{Transport: t}
}

// route maps a request to the step of the turn it is: the person's
// request reaches the manager (who routes it to the worker the request
// names), the task reaches a worker (who answers the manager), the
// worker's result reaches the manager (who answers the person). The
// prefixes are the agents' reply protocol (package agent's doc).
func (s *script) route(r *llmtest.Request) string {
	s.calls.Add(1)
	h := r.History()
	var last string
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role == "user" {
			last = h[i].Text()
			break
		}
	}
	switch {
	case strings.HasPrefix(last, "You received a request from "+humanName+"."):
		if strings.Contains(last, workerNames[1]) {
			return keyRoute2
		}
		return keyRoute1
	case strings.HasPrefix(last, "You received a request from "+managerName+"."):
		return keyWorker
	case strings.HasPrefix(last, "You received a response from @Worker"):
		return keyAnswer
	}
	s.unexpected.Add(1)
	return ""
}

// final is a model answer sending one message.
func final(intent agent.Intent, to, text string) llmtest.Step {
	// Marshaling strings cannot fail.
	out, _ := json.Marshal(agent.StructuredOutput{Messages: []agent.OutboundRequest{
		{MessageType: intent, Recipient: to, Message: text},
	}})
	return llmtest.Final(string(out))
}
