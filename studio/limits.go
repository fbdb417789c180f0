package studio

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// streamCount counts the open event streams, in all and per client.
type streamCount struct {
	mu       sync.Mutex
	total    int
	byClient map[string]int
	refused  atomic.Int64 // streams refused so far (the first is logged)
}

// acquire counts a new stream of client, unless it would pass max in all
// or perClient for the client (0: no limit): then why says which.
func (sc *streamCount) acquire(client string, max, perClient int) (release func(), why string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	switch {
	case max > 0 && sc.total >= max:
		return nil, fmt.Sprintf("%d event streams are open, the studio's limit (Options.MaxStreams)", sc.total)
	case perClient > 0 && sc.byClient[client] >= perClient:
		return nil, fmt.Sprintf("%d event streams are open from %s, the limit per client (Options.MaxStreamsPerClient)", sc.byClient[client], client)
	}
	if sc.byClient == nil {
		sc.byClient = map[string]int{}
	}
	sc.total++
	sc.byClient[client]++
	var once sync.Once
	return func() {
		once.Do(func() {
			sc.mu.Lock()
			defer sc.mu.Unlock()
			sc.total--
			if sc.byClient[client]--; sc.byClient[client] <= 0 {
				delete(sc.byClient, client)
			}
		})
	}, ""
}

// clientOf is the address a request comes from, without its port.
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// maxLabel bounds a member's name or role on the page, in characters.
const maxLabel = 64

// label is a member's name or role as the page shows it: cut at maxLabel
// characters (with "…"), without bidirectional controls (an override
// could reorder the line it is in, "name → recipient"), and, when it
// holds right-to-left letters, isolated (FSI … PDI) so that it cannot
// reorder the text around it.
func label(s string) string {
	clean := true
	rtl := false
	for _, r := range s {
		if isBidiControl(r) {
			clean = false
		}
		if isRTL(r) {
			rtl = true
		}
	}
	if clean && !rtl && len(s) <= maxLabel {
		return s // the common case: no copy
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		if isBidiControl(r) {
			continue
		}
		if n == maxLabel {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		n++
	}
	if !rtl {
		return b.String()
	}
	return "\u2068" + b.String() + "\u2069"
}

// isBidiControl reports the characters that change the direction of
// text: embeddings, overrides, isolates and marks.
func isBidiControl(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

// isRTL reports a letter of a right-to-left script.
func isRTL(r rune) bool {
	return r >= 0x0590 && r <= 0x08ff || r >= 0xfb1d && r <= 0xfdff || r >= 0xfe70 && r <= 0xfefc ||
		r >= 0x10800 && r <= 0x10fff || r >= 0x1e800 && r <= 0x1efff
}
