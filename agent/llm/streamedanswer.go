package llm

import (
	"regexp"
	"strconv"
	"strings"
)

// StreamedAnswer joins one agent's [TextDeltaEvent]s into its answer so
// far, for showing it while it is written (the demo's live line, the
// studio's "writing" bubble): a Seq 0 starts the answer over, and a delta
// whose beginning was missed shows nothing until the next answer. The
// zero value is empty and waits for a first delta; assign a zero value to
// start over.
type StreamedAnswer struct {
	raw  strings.Builder
	next int  // the Seq expected next
	lost bool // a delta was missed: nothing to show until the next answer
}

// Add adds a delta and reports whether the answer is whole so far. A Seq
// 0 starts a new answer (the run's next request, or the same one sent
// again): what came before is dropped. A delta that does not follow the
// last one (its beginning was missed, e.g. by a page that opened
// mid-way) leaves the answer lost until the next Seq 0.
func (a *StreamedAnswer) Add(d TextDeltaEvent) bool {
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

// Raw returns the answer so far: the JSON of a structured output, usually
// unfinished; [StreamedText] decodes its messages. The string stays valid
// (and unchanged) after later Adds.
func (a *StreamedAnswer) Raw() string { return a.raw.String() }

// messageField finds the "message" values of a structured output, the last
// one possibly not closed yet (the answer is still being written).
var messageField = regexp.MustCompile(`"message"\s*:\s*"((?:[^"\\]|\\.)*)`)

// StreamedText returns the text of the messages an answer is writing,
// from its structured output so far (raw, as [StreamedAnswer.Raw] returns
// it): the "message" values, joined by " · ", the last one possibly cut
// short, escapes decoded as far as they are complete.
func StreamedText(raw string) string {
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
