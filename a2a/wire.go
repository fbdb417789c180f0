package a2a

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The A2A data model, as the JSON-RPC binding of A2A 1.0 writes it
// (ProtoJSON: camelCase fields, enums by their names); v03.go converts to
// and from the 0.3 shapes. Only what the server and the client use is
// here.

// The task states (TaskState).
const (
	stateSubmitted     = "TASK_STATE_SUBMITTED"
	stateWorking       = "TASK_STATE_WORKING"
	stateCompleted     = "TASK_STATE_COMPLETED"
	stateFailed        = "TASK_STATE_FAILED"
	stateCanceled      = "TASK_STATE_CANCELED"
	stateInputRequired = "TASK_STATE_INPUT_REQUIRED"
	stateRejected      = "TASK_STATE_REJECTED"
	stateAuthRequired  = "TASK_STATE_AUTH_REQUIRED"
)

// terminal reports whether a task in state s is over.
func terminal(s string) bool {
	switch s {
	case stateCompleted, stateFailed, stateCanceled, stateRejected:
		return true
	}
	return false
}

// interrupted reports whether a task in state s waits for its client.
func interrupted(s string) bool { return s == stateInputRequired || s == stateAuthRequired }

// The roles (Role).
const (
	roleUser  = "ROLE_USER"
	roleAgent = "ROLE_AGENT"
)

// part is one piece of a message or an artifact. 1.0 writes its content
// as one of text, raw, url or data; 0.3 adds "kind" and nests a file.
type part struct {
	Kind      string          `json:"kind,omitempty"` // 0.3
	Text      *string         `json:"text,omitempty"`
	Raw       []byte          `json:"raw,omitempty"`
	URL       string          `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	File      json.RawMessage `json:"file,omitempty"` // 0.3
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
}

// textPart returns a text part.
func textPart(s string) part { return part{Text: &s} }

// wireMessage is a Message.
type wireMessage struct {
	Kind             string         `json:"kind,omitempty"` // 0.3: "message"
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             string         `json:"role"`
	Parts            []part         `json:"parts"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

// text joins the message's text parts, and its data parts as JSON; a
// file or a raw part is refused (this agent reads text).
func (m *wireMessage) text() (string, error) {
	var b strings.Builder
	for i, p := range m.Parts {
		var s string
		switch {
		case p.Text != nil:
			s = *p.Text
		case len(p.Data) > 0:
			s = string(p.Data)
		default:
			return "", fmt.Errorf("message.parts[%d] is not text or data (a file, raw bytes or a URL): this agent reads text only", i)
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(s)
	}
	if strings.TrimSpace(b.String()) == "" {
		return "", fmt.Errorf("message.parts has no text: there is nothing to send")
	}
	return b.String(), nil
}

// taskStatus is a TaskStatus.
type taskStatus struct {
	State     string       `json:"state"`
	Message   *wireMessage `json:"message,omitempty"`
	Timestamp string       `json:"timestamp,omitempty"`
}

// artifact is an Artifact.
type artifact struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Parts       []part         `json:"parts"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

// wireTask is a Task.
type wireTask struct {
	Kind      string         `json:"kind,omitempty"` // 0.3: "task"
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    taskStatus     `json:"status"`
	Artifacts []artifact     `json:"artifacts,omitempty"`
	History   []wireMessage  `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// statusUpdate is a TaskStatusUpdateEvent.
type statusUpdate struct {
	Kind      string         `json:"kind,omitempty"`  // 0.3: "status-update"
	Final     *bool          `json:"final,omitempty"` // 0.3
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    taskStatus     `json:"status"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// artifactUpdate is a TaskArtifactUpdateEvent.
type artifactUpdate struct {
	Kind      string   `json:"kind,omitempty"` // 0.3: "artifact-update"
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  artifact `json:"artifact"`
	Append    bool     `json:"append,omitempty"`
	LastChunk bool     `json:"lastChunk,omitempty"`
}

// streamResponse is a StreamResponse (and, with Task or Message only, a
// SendMessageResponse): exactly one field is set.
type streamResponse struct {
	Task           *wireTask       `json:"task,omitempty"`
	Message        *wireMessage    `json:"message,omitempty"`
	StatusUpdate   *statusUpdate   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *artifactUpdate `json:"artifactUpdate,omitempty"`
}

// sendParams are the params of SendMessage (and message/send).
type sendParams struct {
	Message       *wireMessage `json:"message"`
	Configuration *struct {
		AcceptedOutputModes []string `json:"acceptedOutputModes"`
		HistoryLength       *int     `json:"historyLength"`
		ReturnImmediately   bool     `json:"returnImmediately"`
		Blocking            *bool    `json:"blocking"` // 0.3: false returns at once
	} `json:"configuration"`
	Metadata map[string]any `json:"metadata"`
}

// immediate reports whether the client asked not to wait for the task.
func (p *sendParams) immediate() bool {
	c := p.Configuration
	return c != nil && (c.ReturnImmediately || (c.Blocking != nil && !*c.Blocking))
}

// historyLength is the history a client asked for, nil for all.
func (p *sendParams) historyLength() *int {
	if p.Configuration == nil {
		return nil
	}
	return p.Configuration.HistoryLength
}

// idParams are the params of GetTask, CancelTask and SubscribeToTask (and
// their 0.3 names).
type idParams struct {
	ID            string `json:"id"`
	HistoryLength *int   `json:"historyLength"`
}

// listParams are the params of ListTasks.
type listParams struct {
	ContextID        string `json:"contextId"`
	Status           string `json:"status"`
	PageSize         *int   `json:"pageSize"`
	PageToken        string `json:"pageToken"`
	HistoryLength    *int   `json:"historyLength"`
	IncludeArtifacts *bool  `json:"includeArtifacts"`
}

// listResult is a ListTasksResponse.
type listResult struct {
	Tasks         []wireTask `json:"tasks"`
	NextPageToken string     `json:"nextPageToken"`
	PageSize      int        `json:"pageSize"`
	TotalSize     int        `json:"totalSize"`
}

// agentInterface is an AgentInterface: where and how the agent is spoken
// to.
type agentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
	Tenant          string `json:"tenant,omitempty"`
}

// skill is an AgentSkill.
type skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
}

// agentCard is an AgentCard, with the 0.3 fields a 0.3 client reads
// (url, protocolVersion, preferredTransport) beside the 1.0 ones.
type agentCard struct {
	Name                 string                `json:"name"`
	Description          string                `json:"description"`
	SupportedInterfaces  []agentInterface      `json:"supportedInterfaces,omitempty"`
	Version              string                `json:"version"`
	Capabilities         capabilities          `json:"capabilities"`
	SecuritySchemes      map[string]any        `json:"securitySchemes,omitempty"`
	SecurityRequirements []map[string]any      `json:"securityRequirements,omitempty"`
	DefaultInputModes    []string              `json:"defaultInputModes"`
	DefaultOutputModes   []string              `json:"defaultOutputModes"`
	Skills               []skill               `json:"skills"`
	URL                  string                `json:"url,omitempty"`                // 0.3
	ProtocolVersion      string                `json:"protocolVersion,omitempty"`    // 0.3
	PreferredTransport   string                `json:"preferredTransport,omitempty"` // 0.3
	Security             []map[string][]string `json:"security,omitempty"`           // 0.3
}

// capabilities are AgentCapabilities.
type capabilities struct {
	Streaming         *bool `json:"streaming,omitempty"`
	PushNotifications *bool `json:"pushNotifications,omitempty"`
}

// stamp is a timestamp as A2A writes it: ISO 8601, UTC, milliseconds.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
