package studio

import (
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/llmtest"
	"github.com/akgentic/akgentic-go/message"
)

// get opens GET /events and returns the response (its body open) or the
// status and body of a refusal.
func (f *fixture) get(path string) (*http.Response, string) {
	f.t.Helper()
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, f.http.URL+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	resp, err := f.http.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	f.t.Cleanup(func() { resp.Body.Close() })
	return resp, ""
}

// 500 pages asking for a stream get 64: the others are refused with 503
// naming the limit; goroutines stay bounded and the team is not slowed.
func TestStreamsCapped(t *testing.T) {
	f := newFixture(t, Options{MaxStreamsPerClient: -1}, false)
	base := runtime.NumGoroutine()
	open, refused := 0, 0
	for range 500 {
		resp, body := f.get("/events")
		switch {
		case resp.StatusCode == http.StatusOK:
			open++
		case resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(body, "64 event streams are open, the studio's limit (Options.MaxStreams)") && resp.Header.Get("Retry-After") != "":
			refused++
		default:
			t.Fatalf("GET /events: %s: %s", resp.Status, body)
		}
	}
	if open != 64 || refused != 436 {
		t.Errorf("%d streams open, %d refused; want 64 and 436", open, refused)
	}
	if n := runtime.NumGoroutine() - base; n > 64*4+50 {
		t.Errorf("%d goroutines more for 64 streams", n)
	}
	if got := f.say("still there?"); got.Content != "noted" {
		t.Errorf("the team answered %q", got.Content)
	}
}

// One client gets 8 streams by default.
func TestStreamsPerClientCapped(t *testing.T) {
	f := newFixture(t, Options{}, false)
	for i := range 9 {
		resp, body := f.get("/events")
		if i < 8 && resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %s: %s", i, resp.Status, body)
		}
		if i == 8 && (resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "from 127.0.0.1, the limit per client (Options.MaxStreamsPerClient)")) {
			t.Errorf("the ninth stream: %s: %s", resp.Status, body)
		}
	}
}

// serve runs the studio's Serve on a loopback listener until the test ends.
func (f *fixture) serve() string {
	f.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	served := make(chan error, 1)
	go func() { served <- f.studio.Serve(ctx, ln) }()
	f.t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			f.t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// closedByServer reports whether the server closes c (a read ends) before
// actortest.Timeout.
func closedByServer(t *testing.T, c net.Conn) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(actortest.Timeout))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return err == nil || !(errorsAs(err, &ne) && ne.Timeout())
}

func errorsAs(err error, ne *net.Error) bool {
	e, ok := err.(net.Error)
	*ne = e
	return ok
}

// A request that sends one byte of its declared body does not hold its
// connection: the read timeout closes it.
func TestServeSlowBodyClosed(t *testing.T) {
	f := newFixture(t, Options{ReadTimeout: 200 * time.Millisecond}, false)
	addr := f.serve()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "POST /api/send HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	if !closedByServer(t, c) {
		t.Error("the connection is still open")
	}
}

// 2,000 slow connections (a header never finished) hold at most MaxConns
// server goroutines.
func TestServeBoundsSlowConnections(t *testing.T) {
	f := newFixture(t, Options{}, false)
	addr := f.serve()
	base := runtime.NumGoroutine()
	conns := make([]net.Conn, 0, 2000)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 2000 {
		c, err := net.DialTimeout("tcp", addr, actortest.Timeout)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+addr+"\r\n")
	}
	// A connection made now is not served until one of the others closes:
	// every goroutine Serve may start for them has been started by then.
	if n := runtime.NumGoroutine() - base; n > f.studio.opt.MaxConns+20 {
		t.Errorf("%d goroutines more for 2,000 slow connections; want at most %d", n, f.studio.opt.MaxConns+20)
	}
}

func TestLabelClipsAndIsolates(t *testing.T) {
	long := "@" + strings.Repeat("n", 100_000)
	for in, want := range map[string]string{
		"@Manager":              "@Manager",
		long:                    long[:64] + "…",
		"@Eve\u202egnp.exe":     "@Evegnp.exe",
		"@\u05d3\u05e0\u05d4":   "\u2068@\u05d3\u05e0\u05d4\u2069",
		"@\u05d3\u2069 \u2067x": "\u2068@\u05d3 x\u2069",
	} {
		if got := label(in); got != want {
			t.Errorf("label(%q) = %q, want %q", clipS(in), got, want)
		}
	}
	team := uuid.New()
	who := message.NewSnapshotAddress(message.Identity{AgentID: uuid.New(), Name: long, Role: "R\u202eole", TeamID: team})
	sm := &message.StartMessage{}
	sm.Sender = who
	ev, ok := render(sm)
	if !ok || ev.Name != long[:64]+"…" || ev.Role != "Role" {
		t.Errorf("join event name %q role %q", clipS(ev.Name), ev.Role)
	}
}

// A provider error that echoes a key reaches the page scrubbed.
func TestErrorEventScrubbed(t *testing.T) {
	const key = "sk-proj-Hq3mZ8vK2pL7wX4tR9yB1cD6"
	f := newFixture(t, Options{}, false)
	f.model.Model("@Manager").Enqueue(llmtest.APIError(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: "+key))
	s := f.open("", nil)
	s.until(kind("live"))
	if err := agent.Say(f.ctx, f.human, f.manager, agent.NewRequest("go")); err != nil {
		t.Fatal(err)
	}
	ev := s.until(kind("error"))
	text := ev[len(ev)-1].s("text")
	if strings.Contains(text, key) || !strings.Contains(text, "provider error 401") || !strings.Contains(text, "[REDACTED]") {
		t.Errorf("the page's error event %q", text)
	}
}
