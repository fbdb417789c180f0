package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// toNobody is a model answer addressed to a member the team does not have.
const toNobody = `{"messages":[{"message_type":"response","recipient":"@Nobody","message":"lost"}]}`

// runScripted runs -i with stdin, the offline model answering with steps
// first.
func runScripted(t *testing.T, stdin string, steps ...llmtest.Step) string {
	t.Helper()
	var out bytes.Buffer
	opt := testOptions(&out)
	opt.interactive, opt.stdin = true, strings.NewReader(stdin)
	opt.script = func(srv *llmtest.Server) { srv.Model("").Enqueue(steps...) }
	if err := run(context.Background(), opt); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return out.String()
}

// A model answer to an unknown @Name goes back to the model, which fixes
// it: the person gets the fixed answer, not silence.
func TestDemoUnknownMemberFixedByTheModel(t *testing.T) {
	out := runScripted(t, "hello\n/quit\n", llmtest.Final(toNobody),
		llmtest.Final(`{"messages":[{"message_type":"response","recipient":"@Human","message":"fixed: sent to you"}]}`))
	outputHas(t, out, "@Manager → @Human · response\n  fixed: sent to you")
	if strings.Contains(out, "lost") {
		t.Errorf("the answer to @Nobody was delivered:\n%s", out)
	}
}

// When the model keeps writing to an unknown @Name, the person is told in
// the terminal once the retries are spent.
func TestDemoUnknownMemberRetriesSpentTellsThePerson(t *testing.T) {
	out := runScripted(t, "hello\n/quit\n", llmtest.Final(toNobody), llmtest.Final(toNobody), llmtest.Final(toNobody), llmtest.Final(toNobody))
	outputHas(t, out, "@Manager → @Human · notification", "@Nobody, who is not in the team")
}
