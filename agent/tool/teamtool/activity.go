package teamtool

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/command"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

const activityDoc = `Show what the team has been doing: the latest messages between members
(who to whom, the intent, the text, oldest first) and who is working on a
message right now. Give a member's exact name to see only what it sent or
received.`

// Activity limits: the default and largest number of messages listed, and
// the length a message's text is cut to.
const (
	activityDefault = 20
	activityMax     = 100
	activityText    = 200
)

type activityArgs struct {
	Member string `json:"member,omitempty" description:"Exact name of a member (e.g. @Developer123) to see only its messages; empty for the whole team"`
	Limit  int    `json:"limit,omitempty" description:"How many of the latest messages to list, 1 to 100 (default 20)"`
}

func (b *binding) activityTool(c tool.Capability) (*llm.Tool, error) {
	t, err := llm.NewTool(teamActivityName, c.Describe(activityDoc),
		func(ctx context.Context, a activityArgs) (any, error) { return b.activity(ctx, a.Member, a.Limit) })
	if err != nil {
		return nil, fmt.Errorf("teamtool: %w", err)
	}
	return t, nil
}

func (b *binding) activityCommand(c tool.Capability) *command.Command {
	member := command.NewParam[string]("member", "Exact name of a member to see only its messages, e.g. @Developer123").Optional()
	limit := command.NewParam[int]("limit", "How many of the latest messages to list, 1 to 100").Default(activityDefault)
	return command.New(teamActivityName, c.Describe(activityDoc),
		func(ctx context.Context, in command.Args) (string, error) {
			return b.activity(ctx, member.Get(in), limit.Get(in))
		}, member, limit)
}

// turnOpen is a message an actor has received and not yet processed.
type turnOpen struct {
	who   *message.Address
	since time.Time
	what  string
}

// activity is team_activity: the latest messages between members (not
// tool actors, not telemetry), oldest first, each as
//
//	[15:04:05] @A -> @B (request): text
//
// then "Working now:" with the members in the middle of a turn. The window
// is the team's (Team.Messages): a long-running team lists what it still
// holds.
func (b *binding) activity(ctx context.Context, member string, limit int) (string, error) {
	switch {
	case limit == 0:
		limit = activityDefault
	case limit < 0 || limit > activityMax:
		return "", llm.Retry("limit %d is out of range: give 1 to %d", limit, activityMax)
	}
	member = strings.TrimSpace(member)
	ctx, cancel := bounded(ctx)
	defer cancel()
	if member != "" {
		m, err := b.o.Team.Member(ctx, member)
		if err != nil {
			return "", fmt.Errorf("teamtool: team_activity: look up %q: %w", member, err)
		}
		if m == nil {
			members, err := b.o.Team.Members(ctx)
			if err != nil {
				return "", fmt.Errorf("teamtool: team_activity: get the roster: %w", err)
			}
			return "", llm.Retry("member %q not found. Current members: %s", member, list(visibleNames(members)))
		}
	}
	msgs, err := b.o.Team.Messages(ctx, orchestrator.Filter{})
	if err != nil && len(msgs) == 0 {
		return "", fmt.Errorf("teamtool: team_activity: read the team's messages: %w", err)
	}
	orch := b.o.Team.Address()
	var lines []string
	open := map[uuid.UUID]turnOpen{} // by agent id
	for _, m := range msgs {
		switch r := m.(type) {
		case *message.SentMessage:
			from, to := r.Sender, r.Recipient
			if !between(from, to, orch) || member != "" && from.Name() != member && to.Name() != member {
				continue
			}
			lines = append(lines, fmt.Sprintf("[%s] %s -> %s %s", r.Timestamp.UTC().Format(time.TimeOnly), from.Name(), to.Name(), describe(r.Message)))
		case *message.ReceivedMessage:
			if s := r.Sender; s != nil && !s.IsTool() && s.AgentID() != orch.AgentID() {
				open[s.AgentID()] = turnOpen{who: s, since: r.Timestamp}
			}
		case *message.ProcessedMessage:
			if s := r.Sender; s != nil {
				delete(open, s.AgentID())
			}
		}
	}
	var sb strings.Builder
	if len(lines) > limit {
		fmt.Fprintf(&sb, "Team activity (the latest %d of %d messages, oldest first):", limit, len(lines))
		lines = lines[len(lines)-limit:]
	} else {
		sb.WriteString("Team activity (oldest first):")
	}
	if len(lines) == 0 {
		sb.WriteString("\nno messages yet")
	}
	for _, l := range lines {
		sb.WriteString("\n")
		sb.WriteString(l)
	}
	var busy []string
	for _, o := range open {
		if member == "" || o.who.Name() == member {
			busy = append(busy, fmt.Sprintf("%s (since %s)", o.who.Name(), o.since.UTC().Format(time.TimeOnly)))
		}
	}
	if len(busy) > 0 {
		slices.Sort(busy)
		sb.WriteString("\nWorking now: " + strings.Join(busy, ", "))
	}
	if err != nil { // part of the history is outside the team's window
		sb.WriteString("\n(older messages are no longer held: " + err.Error() + ")")
	}
	return sb.String(), nil
}

// between reports whether a message from -> to is one between members: not
// to or from a tool actor or the orchestrator.
func between(from, to, orch *message.Address) bool {
	for _, a := range []*message.Address{from, to} {
		if a == nil || a.IsTool() || a.AgentID() == orch.AgentID() {
			return false
		}
	}
	return true
}

// describe gives a sent message's intent and text: "(request): text" for a
// message with a type and a content (an agent's message), else its type
// name, e.g. "(StopRecursively)". The text is cut to activityText runes, on
// one line.
func describe(m message.Message) string {
	var v struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}
	if data, err := json.Marshal(m); err != nil || json.Unmarshal(data, &v) != nil || v.Content == "" {
		return "(" + message.TypeName(m) + ")"
	}
	text := strings.Join(strings.Fields(v.Content), " ")
	if utf8.RuneCountInString(text) > activityText {
		text = string([]rune(text)[:activityText]) + "…"
	}
	intent := v.Type
	if intent == "" {
		intent = message.TypeName(m)
	}
	return "(" + intent + "): " + text
}
