package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent/llmtest"
)

// -i -approve: the manager's call of a marked tool waits; the person's
// next line decides it at the prompt. Approved, the file is written once
// and the turn goes on; denied, nothing is written and the model is told.
func TestInteractiveApproval(t *testing.T) {
	for _, c := range []struct {
		line, shown string
		written     bool
	}{{"approve looks fine", "✓ workspace_write approved by @Human", true}, {"deny not that file", "✗ workspace_write denied by @Human", false}} {
		t.Run(strings.Fields(c.line)[0], func(t *testing.T) {
			ws := t.TempDir()
			var out syncBuffer
			opt := options{interactive: true, workspace: ws, approve: []string{"workspace_write"},
				stdin:  strings.NewReader("write the greeting\n" + c.line + "\n/quit\n"),
				stdout: &out, getenv: func(string) string { return "" }, logger: slog.New(slog.DiscardHandler)}
			var srv *llmtest.Server
			opt.script = func(s *llmtest.Server) {
				srv = s
				s.Model("").Enqueue(llmtest.ToolCalls(llmtest.Call("call_w", "workspace_write", `{"path":"hello.txt","content":"hello"}`)))
			}
			ctx, cancel := context.WithTimeout(context.Background(), actortest.Timeout)
			defer cancel()
			if err := run(ctx, opt); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			outputHas(t, out.String(), "asks your approval to call the tool workspace_write",
				"(your next line decides on @Manager's call of workspace_write: approve or deny",
				"I am the offline demo model", c.shown)
			files, _ := filepath.Glob(filepath.Join(ws, "*", "hello.txt"))
			if written := len(files) == 1; written != c.written {
				t.Fatalf("hello.txt written: %v, want %v\n%s", written, c.written, out.String())
			}
			if !c.written {
				reqs := srv.Requests()
				hist := reqs[len(reqs)-1].History()
				if got := hist[len(hist)-1].Text(); !strings.Contains(got, "not that file") {
					t.Fatalf("the model's next request ends with %q, want the refusal", got)
				}
				return
			}
			b, err := os.ReadFile(files[0])
			if err != nil || string(b) != "hello" {
				t.Fatalf("hello.txt holds %q (%v)", b, err)
			}
		})
	}
}
