package webauth

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestAdmitServesLoopbackAndAsksOthersForTheToken pins down the rule the
// handlers share: loopback in, others only with the token, a wrong token
// never, a forwarded request never as loopback, ?token= only where taken.
func TestAdmitServesLoopbackAndAsksOthersForTheToken(t *testing.T) {
	open := Rule{Who: "x"}
	locked := Rule{Who: "x", Token: "s3cret"}
	query := Rule{Who: "x", Token: "s3cret", QueryToken: true}
	for _, tc := range []struct {
		name       string
		rule       Rule
		peer, host string
		url        string
		header     http.Header
		status     int
		contains   string
	}{
		{"loopback", open, "127.0.0.1:1", "127.0.0.1:80", "/", nil, 0, ""},
		{"localhost", open, "[::1]:1", "localhost:80", "/", nil, 0, ""},
		{"remote without token", open, "192.0.2.1:1", "example.com", "/", nil, 403, "only loopback"},
		{"rebinding", open, "127.0.0.1:1", "evil.example", "/", nil, 403, "only loopback"},
		{"forwarded", open, "127.0.0.1:1", "127.0.0.1", "/", http.Header{"X-Forwarded-For": {"192.0.2.1"}}, 403, "only loopback"},
		{"remote, bearer", locked, "192.0.2.1:1", "example.com", "/", http.Header{"Authorization": {"Bearer s3cret"}}, 0, ""},
		{"remote, no token", locked, "192.0.2.1:1", "example.com", "/", nil, 401, "a token is required"},
		{"loopback, wrong token", locked, "127.0.0.1:1", "localhost", "/", http.Header{"Authorization": {"Bearer nope"}}, 401, "the token is wrong"},
		{"query token not taken", locked, "192.0.2.1:1", "example.com", "/?token=s3cret", nil, 401, "a token is required"},
		{"query token taken", query, "192.0.2.1:1", "example.com", "/?token=s3cret", nil, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, tc.url, nil)
			r.RemoteAddr, r.Host = tc.peer, tc.host
			for k, v := range tc.header {
				r.Header[k] = v
			}
			status, why := tc.rule.Admit(r)
			if status != tc.status || !strings.Contains(why, tc.contains) {
				t.Fatalf("Admit = %d %q; want %d containing %q", status, why, tc.status, tc.contains)
			}
		})
	}
}

// TestAllowNamesTheAllowedMethods: a wrong method is answered 405 with the
// Allow header.
func TestAllowNamesTheAllowedMethods(t *testing.T) {
	w := httptest.NewRecorder()
	if Allow(w, httptest.NewRequest(http.MethodPut, "/", nil), "x", http.MethodGet, http.MethodPost) {
		t.Fatal("PUT allowed")
	}
	if w.Code != 405 || w.Header().Get("Allow") != "GET, POST" {
		t.Fatalf("got %d Allow=%q", w.Code, w.Header().Get("Allow"))
	}
}

// TestServeEndsWithItsContext: Serve serves until its context ends, then
// returns nil; a listener that fails is an error naming who served.
func TestServeEndsWithItsContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hi") }), slog.New(slog.DiscardHandler), "x", Limits{})
	}()
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hi" {
		t.Fatalf("served %q", b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve after its context ended: %v", err)
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	if err := Serve(context.Background(), closed, http.NotFoundHandler(), slog.New(slog.DiscardHandler), "x", Limits{}); err == nil || !strings.HasPrefix(err.Error(), "x: serving on") {
		t.Fatalf("Serve on a closed listener: %v", err)
	}
}
