package a2a

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/internal/webauth"
)

// TestServeCutsABodyThatNeverComes: Serve reads a request within its read
// timeout (30 s by default, shortened here): a client that sends the
// headers and then stalls gets the protocol's invalid-request error
// naming the read, not a held connection.
func TestServeCutsABodyThatNeverComes(t *testing.T) {
	if webauth.StreamLimits.WriteTimeout != 0 || webauth.StreamLimits.ReadTimeout == 0 || webauth.StreamLimits.MaxConns == 0 {
		t.Fatalf("Serve's limits are %+v; want a connection cap, a read timeout and no write timeout", webauth.StreamLimits)
	}
	f := newFixture(t, Options{})
	f.server.limits = webauth.Limits{MaxConns: 4, ReadTimeout: 100 * time.Millisecond}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- f.server.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second)) // a bound on the test, not a synchronisation
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	if !strings.Contains(b.String(), "reading the body") || !strings.Contains(b.String(), "-32600") {
		t.Fatalf("a stalled body got %s %s; want the invalid-request error naming the read", resp.Status, b.String())
	}
}
