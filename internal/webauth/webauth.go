// Package webauth is the access rule and the serving loop the library's
// HTTP handlers share (the studio, the A2A server, the AG-UI endpoint):
// requests from loopback are served as they are; any other request must
// carry the handler's token (an "Authorization: Bearer" header, or the
// URL's ?token= where the handler allows it), and without a token it is
// refused.
package webauth

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Rule is one handler's access rule.
type Rule struct {
	// Token lets requests that are not from loopback in; "" serves
	// loopback only.
	Token string
	// Who names the handler in refusals ("studio", "a2a").
	Who string
	// QueryToken also takes the token from the URL's ?token= (a browser
	// page cannot set a header on its event stream).
	QueryToken bool
	// Hint, when set, ends the refusal of a request without a token
	// (what to add).
	Hint string
}

// Admit applies the rule: it returns 0, or the status and the reason to
// refuse r with. A wrong token is refused even from loopback.
func (rule Rule) Admit(r *http.Request) (int, string) {
	if given := rule.token(r); given != "" {
		if rule.Token != "" && subtle.ConstantTimeCompare([]byte(given), []byte(rule.Token)) == 1 {
			return 0, ""
		}
		return http.StatusUnauthorized, rule.Who + ": the token is wrong"
	}
	if IsLoopback(r) {
		return 0, ""
	}
	if rule.Token == "" {
		return http.StatusForbidden, fmt.Sprintf("%s: only loopback requests are served (no token is set: set its Options.Token to serve other hosts)", rule.Who)
	}
	hint := "send it as an \"Authorization: Bearer\" header"
	if rule.Hint != "" {
		hint = rule.Hint
	}
	return http.StatusUnauthorized, fmt.Sprintf("%s: a token is required for requests that are not from loopback (%s)", rule.Who, hint)
}

// token returns the token a request carries: a bearer header, or ?token=
// when the rule takes it.
func (rule Rule) token(r *http.Request) string {
	if rule.QueryToken {
		if t := r.URL.Query().Get("token"); t != "" {
			return t
		}
	}
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(a)
	}
	return ""
}

// IsLoopback reports whether both the peer and the Host the request was
// addressed to are loopback (a browser tricked by DNS rebinding sends the
// attacker's host name, which is refused), and the request did not come
// through a proxy: a reverse proxy on the same machine (nginx and Apache
// rewrite Host to the upstream's by default) connects from loopback for
// anyone, so a request with a forwarding header needs the token.
func IsLoopback(r *http.Request) bool {
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-Ip", "Via"} {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	peer, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		peer = r.RemoteAddr
	}
	if ip := net.ParseIP(peer); ip == nil || !ip.IsLoopback() {
		return false
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// PageHeaders sets the headers of a page that shows a team: no sniffing,
// no referrer (a token may be in the URL), no framing, and a
// Content-Security-Policy that runs the page's own script only.
func PageHeaders(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
}

// Allow answers 405 naming the allowed methods when r uses another.
func Allow(w http.ResponseWriter, r *http.Request, who string, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	http.Error(w, fmt.Sprintf("%s: %s %s is not allowed; use %s", who, r.Method, r.URL.Path, strings.Join(methods, " or ")), http.StatusMethodNotAllowed)
	return false
}

// Serve serves h on ln until ctx ends, then shuts the server down: open
// streams end at once (their requests' context is ctx), other requests
// get 5 s to finish. It returns nil after a shutdown for ctx, or the
// error that stopped serving, naming who.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger, who string, lim Limits) error {
	srv := &http.Server{
		Handler:           h,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       lim.ReadTimeout,
		WriteTimeout:      lim.WriteTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	if lim.ReadTimeout > 0 {
		srv.ReadHeaderTimeout = min(srv.ReadHeaderTimeout, lim.ReadTimeout)
	}
	if lim.MaxConns > 0 {
		ln = limitListener(ln, lim.MaxConns)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("%s: serving on %s: %w", who, ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	<-errc // http.ErrServerClosed
	return nil
}

// Limits bounds what Serve holds. A zero field leaves its bound off (the
// headers of a request are always read within 10 s).
type Limits struct {
	// MaxConns is how many connections are held at once: past it, Accept
	// waits for one to close.
	MaxConns int
	// ReadTimeout bounds reading a request, body included; WriteTimeout
	// writing its response (a stream moves its own deadline as it
	// writes); IdleTimeout closes a kept-alive connection with no request.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
}

// PageLimits are the limits of a page's server (the studio's, the fleet
// console's) from its options: maxConns 0 takes 512 and a negative one
// leaves the bound off; a timeout of 0 or less takes its default (30 s
// to read a request, 30 s per write, 120 s idle).
func PageLimits(maxConns int, read, write, idle time.Duration) Limits {
	switch {
	case maxConns == 0:
		maxConns = 512
	case maxConns < 0:
		maxConns = 0
	}
	pick := func(d, def time.Duration) time.Duration {
		if d <= 0 {
			return def
		}
		return d
	}
	return Limits{MaxConns: maxConns, ReadTimeout: pick(read, 30*time.Second), WriteTimeout: pick(write, 30*time.Second), IdleTimeout: pick(idle, 120*time.Second)}
}

// StreamLimits are the limits of an endpoint whose responses last as long
// as the work they follow (an A2A task's stream or blocking send, an AG-UI
// run): at most 512 connections, a request read within 30 s, a kept-alive
// connection closed after 120 s without one, and no write timeout.
var StreamLimits = Limits{MaxConns: 512, ReadTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second}

// limitListener accepts at most n connections at once: past them, Accept
// waits for one to close (the others wait in the kernel's queue), so a
// flood of slow connections holds at most n goroutines.
func limitListener(ln net.Listener, n int) net.Listener {
	return &limited{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type limited struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limited) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limited) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
