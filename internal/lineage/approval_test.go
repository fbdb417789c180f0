package lineage

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestDecisionReadsTheStructuredAnswers(t *testing.T) {
	for _, c := range []struct {
		in              string
		approve, ok     bool
		reason, errPart string
	}{
		{in: `{"decision":"approve"}`, approve: true, ok: true},
		{in: `{"decision":" Deny ","reason":" the live database "}`, ok: true, reason: "the live database"},
		{in: `{"approved":true,"reason":"fine"}`, approve: true, ok: true, reason: "fine"},
		{in: `{"approved":false}`, ok: true},
		{in: `{"decision":"maybe"}`, ok: true, errPart: `want "approve" or "deny"`},
		{in: `{"decision":3}`, ok: true, errPart: `want "approve" or "deny"`},
		{in: `{"approved":"yes"}`, ok: true, errPart: "want true or false"},
		{in: `{"decision":"deny","reason":7}`, ok: true, errPart: "want a string"},
		{in: `{"text":"approve"}`},
		{in: `"approve"`},
		{in: `null`},
	} {
		var v any
		if err := json.Unmarshal([]byte(c.in), &v); err != nil {
			t.Fatal(err)
		}
		approve, reason, ok, err := Decision(v)
		if c.errPart != "" {
			if err == nil || !strings.Contains(err.Error(), c.errPart) || !ok {
				t.Errorf("Decision(%s) = ok %v, %v; want an error saying %q", c.in, ok, err, c.errPart)
			}
			continue
		}
		if err != nil || approve != c.approve || reason != c.reason || ok != c.ok {
			t.Errorf("Decision(%s) = %v %q %v %v; want %v %q %v", c.in, approve, reason, ok, err, c.approve, c.reason, c.ok)
		}
	}
}

func TestNewApprovalKeepsTheArgumentsAsJSON(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("x", 3600))
	b, err := json.Marshal(NewApproval("@A", "rm", "c1", `{"path":"/x"}`, at))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"tool_approval","agent":"@A","tool":"rm","callId":"c1","arguments":{"path":"/x"},"deadline":"2026-03-01T11:00:00Z"}`
	if string(b) != want {
		t.Errorf("got %s; want %s", b, want)
	}
	b, _ = json.Marshal(NewApproval("@A", "rm", "c1", `not json`, time.Time{}))
	if want := `{"type":"tool_approval","agent":"@A","tool":"rm","callId":"c1","arguments":"not json"}`; string(b) != want {
		t.Errorf("got %s; want %s", b, want)
	}
}

// FuzzDecision: whatever JSON a client sends as a decision, Decision
// returns without panicking, an error only for what claims to be one, and
// a reason only with a decision.
func FuzzDecision(f *testing.F) {
	for _, s := range []string{`{"decision":"approve"}`, `{"approved":false,"reason":"x"}`, `{"decision":null}`, `[]`, `{"reason":"only"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		_, reason, ok, err := Decision(v)
		if !ok && (err != nil || reason != "") {
			t.Fatalf("Decision(%s): not a decision, yet %q %v", data, reason, err)
		}
	})
}
