package agui

// The AG-UI events this endpoint sends, as the protocol writes them (one
// JSON object per Server-Sent Event, its "type" in upper snake case).
const (
	runStarted         = "RUN_STARTED"
	runFinished        = "RUN_FINISHED"
	runError           = "RUN_ERROR"
	textMessageStart   = "TEXT_MESSAGE_START"
	textMessageContent = "TEXT_MESSAGE_CONTENT"
	textMessageEnd     = "TEXT_MESSAGE_END"
	toolCallStart      = "TOOL_CALL_START"
	toolCallArgs       = "TOOL_CALL_ARGS"
	toolCallEnd        = "TOOL_CALL_END"
	toolCallResult     = "TOOL_CALL_RESULT"
	stateSnapshot      = "STATE_SNAPSHOT"
	stateDelta         = "STATE_DELTA"
)

// event is one AG-UI event: Type says which, the other fields are set as
// it needs them.
type event struct {
	Type            string   `json:"type"`
	ThreadID        string   `json:"threadId,omitempty"`
	RunID           string   `json:"runId,omitempty"`
	MessageID       string   `json:"messageId,omitempty"`
	Role            string   `json:"role,omitempty"`
	Delta           any      `json:"delta,omitempty"` // text, or a JSON Patch
	ToolCallID      string   `json:"toolCallId,omitempty"`
	ToolCallName    string   `json:"toolCallName,omitempty"`
	ParentMessageID string   `json:"parentMessageId,omitempty"`
	Content         string   `json:"content,omitempty"`
	Snapshot        any      `json:"snapshot,omitempty"`
	Outcome         *outcome `json:"outcome,omitempty"`
	Message         string   `json:"message,omitempty"` // a run error's
	Timestamp       int64    `json:"timestamp,omitempty"`
}

// outcome is how a run finished: "success", or "interrupt" with what the
// person is asked.
type outcome struct {
	Type       string      `json:"type"`
	Interrupts []interrupt `json:"interrupts,omitempty"`
}

// interrupt is a question to the person: its id is the question's message
// id, which the client's resume names. An approval request (reason
// "tool_approval") names its tool call, says when it expires, describes
// the answer it takes and carries its details as metadata.
type interrupt struct {
	ID             string         `json:"id"`
	Reason         string         `json:"reason"`
	Message        string         `json:"message,omitempty"`
	ToolCallID     string         `json:"toolCallId,omitempty"`
	ResponseSchema map[string]any `json:"responseSchema,omitempty"`
	ExpiresAt      string         `json:"expiresAt,omitempty"`
	Metadata       map[string]any `json:"metadata,omitempty"`
}

// decisionSchema is the JSON Schema of the answer to an approval request.
var decisionSchema = map[string]any{
	"type":     "object",
	"required": []string{"decision"},
	"properties": map[string]any{
		"decision": map[string]any{"type": "string", "enum": []string{"approve", "deny"}},
		"reason":   map[string]any{"type": "string"},
	},
}

// patchOp is one JSON Patch operation (RFC 6902) of a state delta.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// runInput is the body of a run (RunAgentInput): the part this endpoint
// reads.
type runInput struct {
	ThreadID string `json:"threadId"`
	RunID    string `json:"runId"`
	Messages []struct {
		ID      string `json:"id"`
		Role    string `json:"role"`
		Content any    `json:"content"` // text, or content parts
	} `json:"messages"`
	Resume []struct {
		InterruptID string `json:"interruptId"`
		Status      string `json:"status"`
		Payload     any    `json:"payload"`
	} `json:"resume"`
}
