package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// width is the terminal width the output is laid out for.
const width = 80

// printer is a team subscriber that prints the conversation as it happens
// and keeps the usage events for the final table.
type printer struct {
	mu     sync.Mutex
	muted  bool
	out    io.Writer
	color  bool // a terminal: colours, and the live line of an answer being streamed
	live   live
	usage  map[string][]llm.UsageEvent
	agents []string // in order of first usage
	prices *llm.PriceTable
}

var _ orchestrator.Subscriber = (*printer)(nil)

func newPrinter(out io.Writer, color bool) *printer {
	return &printer{out: out, color: color, usage: map[string][]llm.UsageEvent{}, prices: llm.DefaultPriceTable()}
}

// ANSI styles, used only on a terminal.
const (
	styleName   = "\x1b[1;36m"
	styleIntent = "\x1b[33m"
	styleTool   = "\x1b[35m"
	styleDim    = "\x1b[2m"
	styleWarn   = "\x1b[31m"
	styleReset  = "\x1b[0m"
)

func (p *printer) style(s, style string) string {
	if !p.color {
		return s
	}
	return style + s + styleReset
}

// mute stops printing (a restore's replay), while still counting usage.
func (p *printer) mute(on bool) {
	p.mu.Lock()
	p.muted = on
	p.mu.Unlock()
}

// OnMessage prints the lines a person wants to follow: messages between
// agents, members joining, tool calls, tokens and cost per model call,
// warnings and errors.
func (p *printer) OnMessage(m message.Message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.out
	if p.muted {
		out = io.Discard
	}
	from := name(m.Envelope().Sender)
	if ev, ok := m.(*message.EventMessage); ok {
		if d, ok := message.EventAs[llm.TextDeltaEvent](ev); ok {
			if p.color && !p.muted {
				p.live.show(out, from, d)
			}
			return
		}
	}
	out = clearing{w: out, l: &p.live} // a record line replaces the live line
	switch t := m.(type) {
	case *message.SentMessage:
		am, ok := t.Message.(*agent.AgentMessage)
		if !ok {
			return
		}
		fmt.Fprintf(out, "\n%s → %s · %s\n", p.style(from, styleName), p.style(name(t.Recipient), styleName),
			p.style(string(am.Type), styleIntent))
		for _, line := range wrap(am.Content, width-2) {
			fmt.Fprintf(out, "  %s\n", line)
		}
	case *message.StartMessage:
		if s := t.Sender; s != nil && !s.IsTool() && t.Parent != nil && !t.Parent.IsOrchestrator() {
			fmt.Fprintf(out, "%s\n", p.style(fmt.Sprintf("+ %s (%s) joined the team, hired by %s", s.Name(), s.Role(), name(t.Parent)), styleDim))
		}
	case *message.EventMessage:
		event := t.Event
		switch ev := event.(type) { // a decoded log holds pointers
		case *llm.ToolCallEvent:
			event = *ev
		case *llm.UsageEvent:
			event = *ev
		case *llm.ApprovalGrantedEvent:
			event = *ev
		case *llm.ApprovalDeniedEvent:
			event = *ev
		}
		switch ev := event.(type) {
		case llm.ApprovalGrantedEvent:
			fmt.Fprintln(out, p.style(fmt.Sprintf("  %s ✓ %s approved by %s", from, ev.ToolName, ev.By), styleTool))
		case llm.ApprovalDeniedEvent:
			by := "by " + ev.By
			if ev.Expired {
				by = "(no answer in time)"
			}
			fmt.Fprintln(out, p.style(fmt.Sprintf("  %s ✗ %s denied %s", from, ev.ToolName, by), styleWarn))
		case llm.ToolCallEvent:
			line := fmt.Sprintf("  %s %s %s", from, p.style("⚙ "+ev.ToolName, styleTool), ev.Arguments)
			fmt.Fprintln(out, clip(line, width+len(p.style("", styleTool))))
		case llm.UsageEvent:
			if ev.ErrorType != "" { // a failed call: nothing used; its error record follows
				fmt.Fprintln(out, p.style(fmt.Sprintf("  %s · %s: call failed (%s)", from, ev.RequestModel, ev.ErrorType), styleDim))
				break
			}
			if _, seen := p.usage[from]; !seen {
				p.agents = append(p.agents, from)
			}
			p.usage[from] = append(p.usage[from], ev)
			cost := p.prices.Cost(ev.ModelName, ev.InputTokens, ev.OutputTokens, ev.CacheReadTokens, ev.CacheWriteTokens)
			fmt.Fprintln(out, p.style(fmt.Sprintf("  %s · %s: %d in + %d out tokens, $%.4f", from, ev.ModelName, ev.InputTokens, ev.OutputTokens, cost), styleDim))
		}
	case *message.WarningMessage:
		fmt.Fprintln(out, p.style(clip("  ! "+from+": "+t.Content, width), styleWarn))
	case *message.ErrorMessage:
		fmt.Fprintln(out, p.style(clip("  ✗ "+from+": "+t.Content, width), styleWarn))
	}
}

// table writes the usage per agent (akgentic's /usage).
func (p *printer) table(out io.Writer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(out, "\n%-16s %8s %10s %10s %10s\n", "agent", "requests", "input", "output", "cost")
	var total llm.UsageSummary
	var all []llm.UsageEvent
	agents := append([]string(nil), p.agents...)
	sort.Strings(agents)
	for _, a := range agents {
		s := llm.Aggregate(p.usage[a], false, p.prices)
		all = append(all, p.usage[a]...)
		fmt.Fprintf(out, "%-16s %8d %10d %10d %10s\n", clip(a, 16), s.Requests, s.InputTokens, s.OutputTokens, fmt.Sprintf("$%.4f", s.Cost))
	}
	total = llm.Aggregate(all, false, p.prices)
	fmt.Fprintf(out, "%-16s %8d %10d %10d %10s\n", "total", total.Requests, total.InputTokens, total.OutputTokens, fmt.Sprintf("$%.4f", total.Cost))
}

func name(a *message.Address) string {
	if a == nil {
		return "?"
	}
	return a.Name()
}

// wrap breaks text into lines of at most n runes, at spaces when it can;
// line breaks in the text are kept.
func wrap(text string, n int) []string {
	var out []string
	for _, para := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		line := ""
		for _, word := range strings.Fields(para) {
			for utf8.RuneCountInString(word) > n {
				r := []rune(word)
				if line != "" {
					out, line = append(out, line), ""
				}
				out, word = append(out, string(r[:n])), string(r[n:])
			}
			switch {
			case line == "":
				line = word
			case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= n:
				line += " " + word
			default:
				out, line = append(out, line), word
			}
		}
		out = append(out, line)
	}
	return out
}

// clip cuts s to n runes with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// live is the one line that shows, on a terminal, the answer an agent is
// streaming (its TextDeltaEvents): the text of the messages it is writing,
// its end kept in view, redrawn in place and erased before the next line.
type live struct {
	agent  string
	answer llm.StreamedAnswer // the answer so far: structured-output JSON
	shown  bool
}

// eraseLine returns to the line's start and clears it.
const eraseLine = "\r\x1b[2K"

func (l *live) show(out io.Writer, from string, d llm.TextDeltaEvent) {
	if from != l.agent { // another agent's answer
		l.agent = from
		l.answer = llm.StreamedAnswer{}
	}
	if !l.answer.Add(d) {
		return
	}
	text := strings.Join(strings.Fields(llm.StreamedText(l.answer.Raw())), " ")
	prefix := "  " + from + " ✎ "
	if room := width - utf8.RuneCountInString(prefix) - 1; utf8.RuneCountInString(text) > room {
		r := []rune(text)
		text = "…" + string(r[len(r)-room+1:])
	}
	fmt.Fprint(out, eraseLine+styleDim+prefix+text+styleReset)
	l.shown = true
}

func (l *live) clear(out io.Writer) {
	if l.shown {
		fmt.Fprint(out, eraseLine)
		l.shown = false
	}
}

// clearing erases the live line before the first write of a record line.
type clearing struct {
	w io.Writer
	l *live
}

func (c clearing) Write(b []byte) (int, error) {
	c.l.clear(c.w)
	return c.w.Write(b)
}
