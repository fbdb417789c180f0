package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
)

// cutRun is a run cut by a crash, as the log holds it (RestoreCut).
type cutRun struct {
	start    int       // the history's length before the run's prompt
	length   int       // the history's length once restored: nothing appended since
	messages []Message // the run's history appends, its prompt first
}

// RestoreCut is [Runner.Restore] for an agent whose last turn was cut by a
// crash (its message has no Processed record; a durable inbox runs it
// again, at least once): events[from:] are the events that turn emitted,
// the last of events. The history is rebuilt as Restore does, the cut
// turn's part included.
//
// When the next run's prompt is the cut run's (its message run again), the
// cut run's part of the history is dropped, and the answers the model gave
// the cut run are replayed from the log instead of requested again, for as
// long as the new run's history is the same as the cut run's was (a tool
// that gives another result this time ends the replay, and the model is
// called from there): a model call already paid for is not paid twice. A
// replayed answer is appended (its MessageEvent and ToolCallEvents are
// emitted) without a UsageEvent: its usage is in the log already, the
// cut run's. Tools are run again. Any other next run, or a cut turn that
// ran more than one run or compacted, keeps the history as restored, the
// cut run included, and replays nothing. from = len(events) is Restore.
func (r *Runner) RestoreCut(events []Event, from int) {
	r.Restore(events)
	if from < 0 || from >= len(events) {
		return
	}
	var msgs []Message
	runID := ""
	for _, e := range events[from:] {
		switch ev := e.(type) {
		case MessageEvent:
			if runID == "" {
				runID = ev.RunID
			}
			if ev.RunID != runID {
				return // more than one run: not one run to replay
			}
			msgs = append(msgs, ev.Message)
		case CompactedEvent, ClearedEvent:
			return // folded mid-run: no request to compare with
		}
	}
	if len(msgs) < 2 || msgs[0].Role != roleUser {
		return // nothing was answered
	}
	r.cut = &cutRun{start: len(historyOf(events[:from])), length: len(r.history), messages: msgs}
}

// takeCut returns the cut run the run runID replays, prompt its prompt:
// when it is the cut run's, the cut run's part of the history is dropped.
// The cut run is offered to the next run only.
func (r *Runner) takeCut(ctx context.Context, runID string, prompt Message) []Message {
	c := r.cut
	r.cut = nil
	if c == nil || len(r.history) != c.length || c.start > len(r.history) || !sameMessages([]Message{prompt}, c.messages[:1]) {
		return nil
	}
	r.history = r.history[:c.start]
	r.logger.LogAttrs(ctx, slog.LevelInfo, "llm: the prompt of a run cut by a crash is run again: its model answers are replayed from the log",
		slog.String("run_id", runID), slog.Int("logged_messages", len(c.messages)))
	return c.messages
}

// nextReplayed returns the logged answer the run's next model call gets
// instead of a request: while the run's history since its prompt is the
// cut run's, the cut run's next message when it is the model's answer.
// Otherwise the replay ends.
func (rs *runState[T]) nextReplayed() (Message, bool) {
	if rs.replay == nil {
		return Message{}, false
	}
	done := rs.r.history[rs.promptIndex:]
	if len(done) < len(rs.replay) && rs.replay[len(done)].Role == roleAssistant && sameMessages(done, rs.replay[:len(done)]) {
		return rs.replay[len(done)], true
	}
	rs.replay = nil
	return Message{}, false
}

// sameMessages compares messages by their encoding (a decoded log's
// message and a live one differ in nil and empty slices only).
func sameMessages(a, b []Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, errX := json.Marshal(a[i])
		y, errY := json.Marshal(b[i])
		if errX != nil || errY != nil || !bytes.Equal(x, y) {
			return false
		}
	}
	return true
}
