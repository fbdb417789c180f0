// Package streamtext reads an answer while it is being streamed
// (llm.TextDeltaEvent, issue 15): it joins one agent's deltas into the
// structured output written so far (its JSON, usually unfinished) and
// decodes from it the text of the messages being written. The demo's
// live line and the studio's "is writing" bubble (issue 17) show it.
package streamtext

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/akgentic/akgentic-go/agent/llm"
)

// Answer is one agent's answer being streamed. The zero Answer is empty
// and waits for a first delta (Seq 0).
type Answer struct {
	raw  strings.Builder
	next int  // the Seq expected next
	lost bool // a delta was missed: nothing to show until the next answer
}

// Add adds a delta and reports whether the answer is whole so far. A Seq
// 0 starts a new answer (the run's next request, or the same one sent
// again): what came before is dropped. A delta that does not follow the
// last one (its beginning was missed, e.g. by a page that opened
// mid-way) leaves the answer lost until the next Seq 0.
func (a *Answer) Add(d llm.TextDeltaEvent) bool {
	switch {
	case d.Seq == 0:
		a.raw.Reset()
		a.lost = false
	case d.Seq != a.next:
		a.raw.Reset()
		a.lost = true
	}
	a.next = d.Seq + 1
	if a.lost {
		return false
	}
	a.raw.WriteString(d.Delta)
	return true
}

// Reset empties the answer, as a new Answer.
func (a *Answer) Reset() { *a = Answer{} }

// Raw returns the answer's JSON so far. The string stays valid (and
// unchanged) after later Adds.
func (a *Answer) Raw() string { return a.raw.String() }

// messageField finds the "message" values of a structured output, the last
// one possibly not closed yet (the answer is still being written).
var messageField = regexp.MustCompile(`"message"\s*:\s*"((?:[^"\\]|\\.)*)`)

// Text returns the text of the messages in a partial structured output
// (its JSON so far), joined by " · "; escapes are decoded as far as they
// are complete.
func Text(raw string) string {
	var parts []string
	for _, m := range messageField.FindAllStringSubmatch(raw, -1) {
		s := strings.TrimSuffix(m[1], "\\")
		if u, err := strconv.Unquote(`"` + s + `"`); err == nil {
			s = u
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " · ")
}
