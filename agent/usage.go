package agent

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// LLMEvents returns the LLM events an agent emitted, in order, from its
// team's log: what restores its context and lifetime counters.
func LLMEvents(ctx context.Context, team *orchestrator.Team, agentID uuid.UUID) ([]llm.Event, error) {
	evs, err := team.Events(ctx, orchestrator.EventFilter{Agent: agentID})
	if err != nil {
		return nil, err
	}
	var out []llm.Event
	for _, ev := range evs {
		if e := asLLMEvent(ev.Event); e != nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// restoreEvents returns the LLM events an agent emitted, in order, from its
// team's log, and where those of its last turn begin when that turn was cut
// by a crash (its message received, never processed): len(events) when it
// was not, or when the cut turn emitted none (llm.Runner.RestoreCut).
func restoreEvents(ctx context.Context, team *orchestrator.Team, agentID uuid.UUID) ([]llm.Event, int, error) {
	evs, err := team.Events(ctx, orchestrator.EventFilter{Agent: agentID})
	if err != nil {
		return nil, 0, err
	}
	cut, err := cutTurn(ctx, team, agentID)
	if err != nil {
		return nil, 0, err
	}
	var out []llm.Event
	from := -1
	for _, ev := range evs {
		e := asLLMEvent(ev.Event)
		if e == nil {
			continue
		}
		inCut := cut != uuid.Nil && ev.ParentID.Valid && ev.ParentID.UUID == cut
		switch {
		case inCut && from < 0:
			from = len(out)
		case !inCut && from >= 0: // the cut turn's events are not the last: replay nothing
			from = -1
			cut = uuid.Nil
		}
		out = append(out, e)
	}
	if from < 0 {
		from = len(out)
	}
	return out, from, nil
}

// cutTurn returns the message of the agent's last turn when the log holds
// its ReceivedMessage and not its ProcessedMessage (a crash cut it), or
// uuid.Nil.
func cutTurn(ctx context.Context, team *orchestrator.Team, agentID uuid.UUID) (uuid.UUID, error) {
	msgs, err := team.Messages(ctx, orchestrator.Filter{Sender: agentID})
	if err != nil {
		return uuid.Nil, err
	}
	var last uuid.UUID
	for _, m := range msgs {
		switch r := m.(type) {
		case *message.ReceivedMessage:
			last = r.MessageID
		case *message.ProcessedMessage:
			if r.MessageID == last {
				last = uuid.Nil
			}
		}
	}
	return last, nil
}

// asLLMEvent accepts an event value or a pointer to one (a decoded log
// yields pointers).
func asLLMEvent(v any) llm.Event {
	switch e := v.(type) { // pointers first: they implement llm.Event too
	case *llm.MessageEvent:
		return *e
	case *llm.UsageEvent:
		return *e
	case *llm.ToolCallEvent:
		return *e
	case *llm.ToolReturnEvent:
		return *e
	case *llm.CompactedEvent:
		return *e
	case *llm.ClearedEvent:
		return *e
	case *llm.ApprovalRequestedEvent:
		return *e
	case *llm.ApprovalGrantedEvent:
		return *e
	case *llm.ApprovalDeniedEvent:
		return *e
	case llm.Event:
		return e
	}
	return nil
}

// UsageSummary aggregates an agent's LLM usage and cost from the usage
// events in its team's log; byRun adds a per-run breakdown. prices may be
// nil (llm.DefaultPriceTable()).
func UsageSummary(ctx context.Context, team *orchestrator.Team, agentID uuid.UUID, byRun bool, prices *llm.PriceTable) (llm.UsageSummary, error) {
	evs, err := LLMEvents(ctx, team, agentID)
	if err != nil {
		return llm.UsageSummary{}, fmt.Errorf("agent: usage summary: %w", err)
	}
	var usage []llm.UsageEvent
	for _, e := range evs {
		if u, ok := e.(llm.UsageEvent); ok {
			usage = append(usage, u)
		}
	}
	if prices == nil {
		prices = llm.DefaultPriceTable()
	}
	return llm.Aggregate(usage, byRun, prices), nil
}
