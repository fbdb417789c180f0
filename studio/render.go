package studio

import (
	"strconv"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool/planning"
	"github.com/akgentic/akgentic-go/message"
)

// event is what the page receives: one JSON object per Server-Sent Event.
// K says what it is; the other fields are set as K needs them. Record
// events carry the record's message id as their SSE id (id), the point a
// reconnecting page resumes from.
type event struct {
	K      string    `json:"k"`
	id     uuid.UUID // SSE id; Nil for control events
	state  bool      // from a StateChanged record (deduplicated separately)
	At     int64     `json:"at,omitempty"` // unix milliseconds
	Who    string    `json:"who,omitempty"`
	Name   string    `json:"name,omitempty"`
	Role   string    `json:"role,omitempty"`
	To     string    `json:"to,omitempty"`
	ToName string    `json:"toName,omitempty"`
	By     string    `json:"by,omitempty"`
	Intent string    `json:"intent,omitempty"`
	Text   string    `json:"text,omitempty"`
	MID    string    `json:"mid,omitempty"`
	Parent string    `json:"parent,omitempty"`
	Tool   string    `json:"tool,omitempty"`
	Call   string    `json:"call,omitempty"`
	OK     *bool     `json:"ok,omitempty"`
	Model  string    `json:"model,omitempty"`
	In     int       `json:"in,omitempty"`
	Out    int       `json:"out,omitempty"`
	Cost   float64   `json:"cost,omitempty"`
	Ms     int64     `json:"ms,omitempty"` // a model call's latency
	Person bool      `json:"person,omitempty"`
	// Handled marks an idle event for a message a running turn consumed
	// (it had no turn of its own).
	Handled bool            `json:"handled,omitempty"`
	Reset   bool            `json:"reset,omitempty"`
	Live    bool            `json:"live,omitempty"`
	Team    string          `json:"team,omitempty"`
	Title   string          `json:"title,omitempty"`
	Tasks   []planning.Task `json:"tasks,omitempty"`
	Cmds    []cmd           `json:"cmds,omitempty"`
	List    []member        `json:"list,omitempty"`
	Info    *memberInfo     `json:"info,omitempty"`  // a join: the member's config, summarized
	Cards   []cardInfo      `json:"cards,omitempty"` // the team's catalog
	Snap    bool            `json:"snap,omitempty"`  // a snapshot of now (the roster, the board), not a record
}

// cmd is an announced slash command, for the input box's completion.
type cmd struct {
	Name string `json:"name"`
	Desc string `json:"desc,omitempty"`
	Args string `json:"args,omitempty"`
}

// member is one entry of a roster snapshot.
type member struct {
	Who    string `json:"who"`
	Name   string `json:"name"`
	Role   string `json:"role"`
	Person bool   `json:"person,omitempty"`
}

// maxText caps the text of one event (a tool's output, a message): the
// page is a viewer, and an SSE frame of megabytes would stall it.
const maxText = 16 << 10

// clip cuts s to maxText bytes (on a rune boundary) and says so.
func clip(s string) string {
	if len(s) <= maxText {
		return s
	}
	cut := maxText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "\n… (cut: " + itoa(len(s)-cut) + " more bytes)"
}

// clipStart keeps the last maxText bytes of s (on a rune boundary): the
// end of an answer being written is what is new.
func clipStart(s string) string {
	if len(s) <= maxText {
		return s
	}
	cut := len(s) - maxText
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return "… " + s[cut:]
}

func itoa(n int) string { return strconv.Itoa(n) }

// shown reports whether a is a member the page shows: not the
// orchestrator, not a tool actor. An address decoded from a log (a
// restored team's history) keeps its type and role, not those flags:
// they are recognised by the orchestrator's kind and the tools' role.
func shown(a *message.Address) bool {
	return a != nil && !a.IsOrchestrator() && a.ActorType() != "Orchestrator" && !isTool(a)
}

func idOf(a *message.Address) string {
	if a == nil {
		return ""
	}
	return a.AgentID().String()
}

func nameOf(a *message.Address) string {
	if a == nil {
		return ""
	}
	return label(a.Name())
}

// render turns one record of the team's log into the page's event; ok is
// false for a record the page does not show.
func render(m message.Message) (ev event, ok bool) {
	b := m.Envelope()
	ev = event{id: b.ID, At: b.Timestamp.UnixMilli(), Who: idOf(b.Sender), Name: nameOf(b.Sender)}
	switch t := m.(type) {
	case *message.StartMessage:
		if !shown(t.Sender) {
			return ev, false
		}
		ev.K, ev.Role, ev.Person, ev.Info = "join", label(t.Sender.Role()), t.Sender.IsUserProxy(), infoOf(t.Config)
		if t.Parent != nil && !t.Parent.IsOrchestrator() {
			ev.By = nameOf(t.Parent)
		}
	case *message.StopMessage:
		ev.K = "leave"
		return ev, shown(t.Sender)
	case *message.ReceivedMessage:
		ev.K, ev.MID = "busy", t.MessageID.String() // a turn on that message begins
		return ev, shown(t.Sender)
	case *message.ProcessedMessage:
		ev.K, ev.MID = "idle", t.MessageID.String() // its turn ends
		return ev, shown(b.Sender)
	case *message.HandledMessage:
		ev.K, ev.MID, ev.Handled = "idle", t.MessageID.String(), true // consumed by a running turn
		return ev, shown(b.Sender)
	case *message.WarningMessage:
		ev.K, ev.Tool, ev.Text = "warn", t.ContentType, clip(t.Content)
	case *message.ErrorMessage:
		ev.K, ev.Tool, ev.Text = "error", t.ContentType, clip(t.Content)
	case *message.SentMessage:
		return sent(ev, t)
	case *message.StateChangedMessage:
		tasks, ok := board(t)
		ev.K, ev.Tasks, ev.state = "board", tasks, true
		return ev, ok
	case *message.EventMessage:
		return domainEvent(ev, t)
	default:
		return ev, false
	}
	return ev, true
}

// sent renders a message between members: an AgentMessage with its intent,
// a core UserMessage or ResultMessage with its content.
func sent(ev event, t *message.SentMessage) (event, bool) {
	if t.Message == nil || !shown(t.Sender) || !shown(t.Recipient) {
		return ev, false
	}
	inner := t.Message.Envelope()
	ev.K, ev.To, ev.ToName, ev.MID = "msg", idOf(t.Recipient), nameOf(t.Recipient), inner.ID.String()
	if inner.ParentID.Valid {
		ev.Parent = inner.ParentID.UUID.String()
	}
	switch p := t.Message.(type) {
	case *agent.AgentMessage:
		ev.Intent, ev.Text = string(p.Type), clip(p.Content)
		if a := p.Approval; a != nil { // an approval request: the page shows approve and deny
			ev.Tool, ev.Call = a.Tool, a.CallID
		}
	case *message.UserMessage:
		ev.Intent, ev.Text = "user message", clip(p.Content)
	case *message.ResultMessage:
		ev.Intent, ev.Text = "result", clip(p.Content)
	default:
		ev.Intent = message.TypeName(t.Message)
	}
	return ev, true
}

// domainEvent renders the events of the model loop and the team.
func domainEvent(ev event, t *message.EventMessage) (event, bool) {
	if u, ok := message.EventAs[llm.UsageEvent](t); ok {
		ev.K, ev.Model, ev.In, ev.Out, ev.Cost, ev.Ms = "model", u.ModelName, u.InputTokens, u.OutputTokens, u.Cost, u.Latency.Milliseconds()
		return ev, true
	}
	if c, ok := message.EventAs[llm.ToolCallEvent](t); ok {
		ev.K, ev.Tool, ev.Call, ev.Text = "tool", c.ToolName, c.ToolCallID, clip(c.Arguments)
		return ev, true
	}
	if r, ok := message.EventAs[llm.ToolReturnEvent](t); ok {
		success := r.Success
		ev.K, ev.Tool, ev.Call, ev.OK = "toolret", r.ToolName, r.ToolCallID, &success
		return ev, true
	}
	if me, ok := message.EventAs[llm.MessageEvent](t); ok {
		// A history append: only a tool's output is shown, folded under
		// its call.
		if me.Message.Role != "tool" {
			return ev, false
		}
		ev.K, ev.Tool, ev.Call, ev.Text = "toolout", me.Message.ToolName, me.Message.ToolCallID, clip(me.Message.Content)
		return ev, true
	}
	if a, ok := message.EventAs[agent.CommandsAnnouncedEvent](t); ok {
		ev.K = "commands"
		if a.Agent != nil {
			ev.Who, ev.Name = idOf(a.Agent), nameOf(a.Agent)
		}
		for _, d := range a.Commands {
			c := cmd{Name: d.Name, Desc: d.Description}
			for i, arg := range d.Args {
				if i > 0 {
					c.Args += " "
				}
				if arg.Required {
					c.Args += arg.Name
				} else {
					c.Args += "[" + arg.Name + "]"
				}
			}
			ev.Cmds = append(ev.Cmds, c)
		}
		return ev, true
	}
	if c, ok := message.EventAs[llm.CompactedEvent](t); ok {
		ev.K, ev.Text = "note", "history compacted: "+itoa(c.ReplacedMessageCount)+" messages summarized ("+itoa(c.TokensBefore)+" → "+itoa(c.TokensAfter)+" tokens)"
		return ev, true
	}
	if c, ok := message.EventAs[llm.ClearedEvent](t); ok {
		ev.K, ev.Text = "note", "history cleared: "+itoa(c.ClearedMessageCount)+" messages dropped"
		return ev, true
	}
	if _, ok := message.EventAs[message.TeamStoppingEvent](t); ok {
		ev.K = "stopping"
		return ev, true
	}
	return ev, false
}

// board returns the tasks of a planning board state (planning.TasksOf).
// Only tool actors' states are looked at, live or decoded from a log (a
// restored team's history, a cluster's records: see isTool).
func board(t *message.StateChangedMessage) ([]planning.Task, bool) {
	if !isTool(t.Sender) {
		return nil, false
	}
	return planning.TasksOf(t.State)
}

// isTool reports whether a is a tool actor: by its flag, or, decoded from
// a log (which keeps the role, not the flag), by the tools' role.
func isTool(a *message.Address) bool {
	return a != nil && (a.IsTool() || a.Role() == "ToolActor")
}
