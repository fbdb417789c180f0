package tool_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
)

func named(name string, own func(json.RawMessage) bool) *llm.Tool {
	return &llm.Tool{Name: name, NeedsApproval: own, Call: func(context.Context, json.RawMessage) (any, error) { return "", nil }}
}

// Approval marks tools by name, whatever card gives them (a search's, an
// MCP server's): always, or by a predicate on the arguments, adding to a
// mark the card's author set; the tools it does not name, and the
// originals, are left as they are.
func TestApprovalMarksToolsByName(t *testing.T) {
	own := func(args json.RawMessage) bool { return string(args) == `{"own":true}` }
	search, mcpDelete, authored, free := named("web_search", nil), named("fs_delete_file", nil), named("publish", own), named("workspace_read", nil)
	a := &tool.Approval{
		Always: []string{"web_search"},
		When: map[string]func(json.RawMessage) bool{
			"fs_delete_file": func(args json.RawMessage) bool { return string(args) == `{"path":"/prod"}` },
			"publish":        func(args json.RawMessage) bool { return string(args) == `{"rule":true}` },
		},
	}
	got := a.Mark([]*llm.Tool{search, mcpDelete, authored, free})
	waits := func(i int, args string) bool {
		return got[i].NeedsApproval != nil && got[i].NeedsApproval(json.RawMessage(args))
	}
	for _, c := range []struct {
		i    int
		args string
		want bool
	}{
		{0, `{}`, true},
		{1, `{"path":"/prod"}`, true}, {1, `{"path":"/tmp"}`, false},
		{2, `{"own":true}`, true}, {2, `{"rule":true}`, true}, {2, `{}`, false},
		{3, `{}`, false},
	} {
		if w := waits(c.i, c.args); w != c.want {
			t.Errorf("%s(%s) waits: %v, want %v", got[c.i].Name, c.args, w, c.want)
		}
	}
	if got[3] != free {
		t.Error("a tool no rule names was copied")
	}
	if search.NeedsApproval != nil || mcpDelete.NeedsApproval != nil || authored.NeedsApproval(json.RawMessage(`{"rule":true}`)) {
		t.Error("Mark changed the originals, which a card may share")
	}
	var none *tool.Approval
	if out := none.Mark([]*llm.Tool{search}); out[0] != search {
		t.Error("a nil Approval marked a tool")
	}
}

// Destructive marks the tools their author says may delete or overwrite
// (an MCP tool's destructiveHint), whatever their names.
func TestApprovalMarksDestructiveTools(t *testing.T) {
	rm, ls := named("fs_remove", nil), named("fs_list", nil)
	rm.Destructive, ls.ReadOnly = true, true
	got := (&tool.Approval{Destructive: true}).Mark([]*llm.Tool{rm, ls})
	if got[0].NeedsApproval == nil || !got[0].NeedsApproval(json.RawMessage(`{}`)) {
		t.Error("a destructive tool does not wait")
	}
	if got[1] != ls {
		t.Error("a read-only tool was marked")
	}
}
