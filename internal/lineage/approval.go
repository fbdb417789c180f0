package lineage

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Approval is what the protocol endpoints show a client of a tool call
// that waits for the person's approval, as JSON: an A2A task's data part,
// an AG-UI interrupt's value.
type Approval struct {
	// Type is always "tool_approval": a client tells the request from
	// other questions by it.
	Type   string `json:"type"`
	Agent  string `json:"agent"`
	Tool   string `json:"tool"`
	CallID string `json:"callId"`
	// Arguments are the call's arguments as the model wrote them (JSON;
	// a string when they are not).
	Arguments json.RawMessage `json:"arguments"`
	// Deadline, when set, is when the call is denied if nobody decided
	// (RFC 3339).
	Deadline string `json:"deadline,omitempty"`
}

// NewApproval returns the details of agent's request to approve its call
// callID of tool with args.
func NewApproval(agent, tool, callID, args string, deadline time.Time) Approval {
	a := Approval{Type: "tool_approval", Agent: agent, Tool: tool, CallID: callID, Arguments: json.RawMessage(args)}
	if !json.Valid(a.Arguments) {
		a.Arguments, _ = json.Marshal(args)
	}
	if !deadline.IsZero() {
		a.Deadline = deadline.UTC().Format(time.RFC3339)
	}
	return a
}

// Decision reads a structured decision on an approval request: an object
// with "decision" ("approve" or "deny", or the other words the agent
// reads as one) or "approved" (a boolean), and an optional "reason".
// ok is false when v is not such an object (it has neither field); err
// says what is wrong with one that is.
func Decision(v any) (approve bool, reason string, ok bool, err error) {
	m, isMap := v.(map[string]any)
	if !isMap {
		return false, "", false, nil
	}
	d, hasDecision := m["decision"]
	a, hasApproved := m["approved"]
	if !hasDecision && !hasApproved {
		return false, "", false, nil
	}
	if r, has := m["reason"]; has {
		s, isString := r.(string)
		if !isString {
			return false, "", true, fmt.Errorf("the decision's reason is %T; want a string", r)
		}
		reason = strings.TrimSpace(s)
	}
	if hasApproved {
		b, isBool := a.(bool)
		if !isBool {
			return false, "", true, fmt.Errorf("the decision's approved is %T; want true or false", a)
		}
		return b, reason, true, nil
	}
	s, _ := d.(string)
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "approve", "approved", "yes", "ok":
		return true, reason, true, nil
	case "deny", "denied", "no", "reject":
		return false, reason, true, nil
	}
	return false, "", true, fmt.Errorf("the decision is %v; want \"approve\" or \"deny\"", d)
}
