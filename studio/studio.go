package studio

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/internal/webauth"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

//go:embed static
var static embed.FS

// Options configure a Studio. The zero Options serve a read-only page to
// loopback requests only.
type Options struct {
	// Person is the address the input box speaks as: the team's person,
	// a member embedding orchestrator.UserProxy (such as agent.HumanProxy).
	// Messages typed in the page are sent from it, and answers to the
	// questions agents asked it go through it. Nil makes the page
	// read-only (sending is refused with 403).
	Person *message.Address
	// Token, when set, lets requests that are not from loopback in: they
	// must carry it (the page's URL ?token=…, or an "Authorization:
	// Bearer …" header). Without a Token only loopback requests are
	// served. A loopback request is one whose peer address and Host
	// header are both loopback, so a reverse proxy that forwards the
	// public Host needs the token too.
	Token string
	// Title is the page's title (default "akgentic studio").
	Title string
	// Buffer is how many events a page may fall behind the team before
	// it is told to catch up again (default 4096). The team never waits
	// for a page.
	Buffer int
	// Logger receives the studio's own warnings (default slog.Default()).
	Logger *slog.Logger
	// MaxStreams bounds the event streams open at once (default 64;
	// negative: no limit), and MaxStreamsPerClient those of one client
	// address (default 8; behind a reverse proxy every page has the
	// proxy's address: raise it, or set it negative). A stream past
	// either is refused with 503 and a Retry-After, its first refusal
	// logged.
	MaxStreams, MaxStreamsPerClient int
	// MaxConns bounds the connections Serve holds at once (default 512;
	// negative: no limit): past it, new ones wait to be accepted.
	MaxConns int
	// ReadTimeout bounds reading a request, body included, in Serve
	// (default 30 s); IdleTimeout closes a kept-alive connection with no
	// request (default 120 s); WriteTimeout bounds writing a response,
	// and each write of an event stream (default 30 s: a page that stops
	// reading loses its stream).
	ReadTimeout, IdleTimeout, WriteTimeout time.Duration
}

// Defaults of Options' stream limits (those of Serve are webauth's
// PageLimits).
const (
	defaultMaxStreams          = 64
	defaultMaxStreamsPerClient = 8
)

// limits applies the defaults of o's limits; 0 is then no limit.
func (o *Options) limits() {
	pick := func(v *int, def int) {
		switch {
		case *v == 0:
			*v = def
		case *v < 0:
			*v = 0
		}
	}
	pick(&o.MaxStreams, defaultMaxStreams)
	pick(&o.MaxStreamsPerClient, defaultMaxStreamsPerClient)
	l := webauth.PageLimits(o.MaxConns, o.ReadTimeout, o.WriteTimeout, o.IdleTimeout)
	o.MaxConns, o.ReadTimeout, o.WriteTimeout, o.IdleTimeout = l.MaxConns, l.ReadTimeout, l.WriteTimeout, l.IdleTimeout
}

// Studio is an http.Handler serving a live page of one team: its members
// with their role, status and spend, the conversation as it happens, the
// task board, the usage per member, and an input box that speaks as the
// team's person. Mount it anywhere (under a prefix with
// http.StripPrefix); every URL it uses is relative.
//
// It serves:
//
//	GET  /            the page (embedded HTML, CSS and JavaScript)
//	GET  /events      Server-Sent Events: the team's history, then its records as they happen
//	POST /api/send    {"to": member, "text": …} or {"answer": question id, "text": …}, as the person
//
// A page that opens late, or reconnects (Last-Event-ID, or ?after=ID),
// gets the history it lacks, then follows. History comes from
// orchestrator.Team.Messages: beyond the team's in-memory window it is read
// from the team's Archive (an eventlog.Writer given to WithSubscribers);
// without one the page is told how many records were left out.
type Studio struct {
	streams streamCount
	ctx     context.Context
	team    source
	in      speaker // nil: read-only
	opt     Options
	hub     *hub
	files   http.Handler
	page    []byte
}

// New returns the studio of team, subscribed to it until ctx ends: then
// every open event stream ends and the subscription is removed. A team
// that has already stopped is served from its history.
func New(ctx context.Context, team *orchestrator.Team, opt Options) (*Studio, error) {
	if team == nil {
		return nil, errors.New("studio: New: the team is nil")
	}
	if err := opt.defaults("New"); err != nil {
		return nil, err
	}
	if opt.Person != nil {
		switch {
		case opt.Person.TeamID() != team.ID():
			return nil, fmt.Errorf("studio: New: Options.Person %s is not a member of team %s", opt.Person.Name(), team.ID())
		case !opt.Person.IsUserProxy():
			return nil, fmt.Errorf("studio: New: Options.Person %s is not a user proxy (an actor embedding orchestrator.UserProxy, such as agent.HumanProxy)", opt.Person.Name())
		}
	}
	s, err := newStudio(ctx, team, opt)
	if err != nil {
		return nil, err
	}
	if opt.Person != nil {
		s.in = local{opt.Person}
	}
	if err := team.Subscribe(ctx, s.hub); err != nil {
		if !errors.Is(err, actor.ErrActorDead) {
			return nil, fmt.Errorf("studio: New: subscribing to team %s: %w", team.ID(), err)
		}
		s.hub.stopped = true // a stopped team: its history only
		return s, nil
	}
	context.AfterFunc(ctx, func() {
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = team.Unsubscribe(uctx, s.hub) // a stopped team has no subscribers left to remove
	})
	return s, nil
}

// defaults checks opt and applies its defaults; fn names the caller in
// the error.
func (o *Options) defaults(fn string) error {
	if o.Buffer < 0 {
		return fmt.Errorf("studio: %s: Options.Buffer is %d; want 0 (the default, 4096) or more", fn, o.Buffer)
	}
	if o.Buffer == 0 {
		o.Buffer = 4096
	}
	if o.Title == "" {
		o.Title = "akgentic studio"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.limits()
	return nil
}

// source is the team a page shows: what it reads of the team. The local
// *orchestrator.Team is one; a Mirror, fed with a team's records from
// elsewhere, is the other.
type source interface {
	ID() uuid.UUID
	Messages(ctx context.Context, f orchestrator.Filter) ([]message.Message, error)
	Members(ctx context.Context) ([]*message.Address, error)
	Cards(ctx context.Context) ([]*orchestrator.AgentCard, error)
	States(ctx context.Context) (map[uuid.UUID]any, error)
}

// newStudio is the studio of team with opt (its defaults applied), not
// yet fed.
func newStudio(ctx context.Context, team source, opt Options) (*Studio, error) {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		return nil, err
	}
	page, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		return nil, err
	}
	return &Studio{ctx: ctx, team: team, opt: opt, hub: newHub(opt.Buffer), files: http.FileServerFS(sub), page: page}, nil
}

// ServeHTTP serves the page, its event stream and its input (see Studio).
func (s *Studio) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	webauth.PageHeaders(h)
	if r.URL.Path == "/app.js" || r.URL.Path == "/style.css" { // public code: no token needed
		if webauth.Allow(w, r, "studio", http.MethodGet, http.MethodHead) {
			s.files.ServeHTTP(w, r)
		}
		return
	}
	if status, why := s.rule().Admit(r); status != 0 {
		http.Error(w, why, status)
		return
	}
	switch r.URL.Path {
	case "/":
		if !webauth.Allow(w, r, "studio", http.MethodGet, http.MethodHead) {
			return
		}
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		_, _ = w.Write(s.page)
	case "/events":
		if webauth.Allow(w, r, "studio", http.MethodGet) {
			s.events(w, r)
		}
	case "/api/send":
		if webauth.Allow(w, r, "studio", http.MethodPost) {
			s.send(w, r)
		}
	default:
		http.Error(w, fmt.Sprintf("studio: no such page %q (the page is at ./, its events at ./events, its input at ./api/send)", r.URL.Path), http.StatusNotFound)
	}
}

// rule is the studio's access rule: loopback requests are served; others
// need the token, in the URL (?token=) or a bearer header.
func (s *Studio) rule() webauth.Rule {
	return webauth.Rule{Token: s.opt.Token, Who: "studio", QueryToken: true, Hint: "add ?token=… to the URL printed at start"}
}

// Serve serves the studio on ln until ctx ends, then shuts the server
// down: open event streams end at once (their requests' context is ctx),
// other requests get 5 s to finish. It returns nil after a shutdown for
// ctx, or the error that stopped serving.
func (s *Studio) Serve(ctx context.Context, ln net.Listener) error {
	return webauth.Serve(ctx, ln, s, s.opt.Logger, "studio", webauth.Limits{
		MaxConns: s.opt.MaxConns, ReadTimeout: s.opt.ReadTimeout,
		WriteTimeout: s.opt.WriteTimeout, IdleTimeout: s.opt.IdleTimeout,
	})
}
