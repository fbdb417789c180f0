// Package fleet serves the studio over a cluster: a list of the
// cluster's teams (template, owner, state, last activity; a page of them
// at a time, refreshing itself), each linking
// to the team's studio page, fed live from the team's records in the
// cluster's stream (cluster.Client.Watch) and speaking as the team's
// person through its durable inbox (Send, Answer, Decide).
//
// It is a package of its own so that a program serving one local team
// (package studio) does not link the NATS client.
package fleet

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/cluster"
	"github.com/akgentic/akgentic-go/internal/clock"
	"github.com/akgentic/akgentic-go/internal/webauth"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/studio"
)

// listScript is the list page's script: it fetches the list again
// (teams.json) every refresh, while the page is visible.
//
//go:embed fleet.js
var listScript []byte

// catchUp bounds how long a team page's first stream waits for the
// team's records stored so far, before it is served what came.
const catchUp = 10 * time.Second

// Console is an http.Handler serving a cluster's teams. Mount it
// anywhere (under a prefix with http.StripPrefix); every URL it uses is
// relative. It serves:
//
//	GET  /              the list of teams: template, owner, state, last activity;
//	                    a page of 50 at a time (?page=N), refreshed by its script
//	GET  /teams.json    the same page of the list, as JSON
//	GET  /teams/ID/     the team's studio page (see studio.Studio), its
//	                    events at ./events and its input at ./api/send
//
// A team's page is fed by one Client.Watch while at least one of its
// event streams (or an input being sent) is open, and by none otherwise:
// the records it keeps (studio.Options.Buffer of them, at most) are
// dropped with it. A page opened late gets the records kept as its
// history. Its access rule is the studio's (studio.Options.Token).
type Console struct {
	ctx    context.Context
	client *cluster.Client
	opt    studio.Options
	page   *studio.Mirror // the page and its code, the same for every team (never fed)
	rule   webauth.Rule
	log    *slog.Logger

	// The list: its page size, how often its script fetches it again,
	// and how a team's last record is read (a test counts the reads).
	pageSize   int
	refresh    time.Duration
	lastRecord func(ctx context.Context, team uuid.UUID) (uint64, time.Time, error)

	mu    sync.Mutex
	teams map[uuid.UUID]*followed
}

// The list's defaults: a page of teams (one last record read for each
// shown team per load), and how often the page fetches it again.
const (
	defaultPageSize = 50
	defaultRefresh  = 5 * time.Second
)

// followed is a team whose page is open: its mirror, fed by one watch.
type followed struct {
	m      *studio.Mirror
	users  int           // requests using it (under Console.mu)
	ready  chan struct{} // closed once the records stored when it began came, or the watch ended
	err    error         // why the watch ended early (set before ready closes)
	cancel context.CancelFunc
	done   chan struct{} // the watch ended
}

// New returns the console of the cluster c reaches, until ctx ends (then
// every page's stream ends). opt is the studio's for every team page,
// except Person, which must be nil (each page speaks as its team's
// person, the one the team's records name); New refuses a Person set.
func New(ctx context.Context, c *cluster.Client, opt studio.Options) (*Console, error) {
	if c == nil {
		return nil, errors.New("fleet: New: the client is nil")
	}
	if opt.Person != nil {
		return nil, errors.New("fleet: New: studio.Options.Person is set, but must be nil: each team's page speaks as the person its records name")
	}
	if opt.Title == "" {
		opt.Title = "akgentic fleet"
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	page, err := studio.NewMirror(ctx, uuid.Nil, studio.MirrorConfig{}, opt)
	if err != nil {
		return nil, fmt.Errorf("fleet: New: %w", err)
	}
	return &Console{
		ctx: ctx, client: c, opt: opt, page: page, log: opt.Logger, teams: map[uuid.UUID]*followed{},
		pageSize: defaultPageSize, refresh: defaultRefresh, lastRecord: c.LastRecord,
		rule: webauth.Rule{Token: opt.Token, Who: "fleet", QueryToken: true, Hint: "add ?token=… to the URL printed at start"},
	}, nil
}

// ServeHTTP serves the list of teams and each team's page (see Console).
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if p == "/app.js" || p == "/style.css" {
		c.page.ServeHTTP(w, r) // public code
		return
	}
	if p == "/fleet.js" { // public code too
		webauth.PageHeaders(w.Header())
		if webauth.Allow(w, r, "fleet", http.MethodGet, http.MethodHead) {
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			w.Header().Set("Cache-Control", "no-cache")
			_, _ = w.Write(listScript)
		}
		return
	}
	if status, why := c.rule.Admit(r); status != 0 {
		webauth.PageHeaders(w.Header())
		http.Error(w, why, status)
		return
	}
	if p == "/" || p == "/teams.json" {
		if webauth.Allow(w, r, "fleet", http.MethodGet, http.MethodHead) {
			c.list(w, r, p == "/teams.json")
		}
		return
	}
	rest, ok := strings.CutPrefix(p, "/teams/")
	if !ok {
		http.Error(w, fmt.Sprintf("fleet: no such page %q (the teams are listed at ./ and ./teams.json, a team's page is at ./teams/ID/)", p), http.StatusNotFound)
		return
	}
	ids, sub, slash := strings.Cut(rest, "/")
	id, err := uuid.Parse(ids)
	if err != nil {
		http.Error(w, fmt.Sprintf("fleet: %q is not a team id (a UUID)", ids), http.StatusNotFound)
		return
	}
	if !slash { // the page's relative URLs need the slash
		to := id.String() + "/"
		if r.URL.RawQuery != "" {
			to += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, to, http.StatusMovedPermanently)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = "/"+sub, ""
	switch r2.URL.Path {
	case "/events", "/api/send":
		c.team(w, r2, id)
	default: // the page and its code
		c.page.ServeHTTP(w, r2)
	}
}

// Serve serves the console on ln until ctx ends, then shuts the server
// down, with the studio's limits (studio.Options' MaxConns and timeouts;
// Studio.Serve says what they bound). It returns nil after a shutdown
// for ctx, or the error that stopped serving.
func (c *Console) Serve(ctx context.Context, ln net.Listener) error {
	return webauth.Serve(ctx, ln, c, c.log, "fleet", webauth.PageLimits(c.opt.MaxConns, c.opt.ReadTimeout, c.opt.WriteTimeout, c.opt.IdleTimeout))
}

// team serves a request of a team page that reads or feeds the team: the
// team is followed while it runs.
func (c *Console) team(w http.ResponseWriter, r *http.Request, id uuid.UUID) {
	f, err := c.acquire(id)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer c.release(id, f)
	t := time.NewTimer(catchUp)
	defer t.Stop()
	select {
	case <-f.ready:
		if f.err == nil {
			break
		}
		status := http.StatusServiceUnavailable
		if errors.Is(f.err, cluster.ErrNoSuchTeam) {
			status = http.StatusNotFound
		}
		http.Error(w, "fleet: "+f.err.Error(), status)
		return
	case <-t.C: // serve what came: the rest follows live
	case <-r.Context().Done():
		return
	}
	f.m.ServeHTTP(w, r)
}

// acquire returns the followed team id, starting its watch if none runs.
func (c *Console) acquire(id uuid.UUID) (*followed, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.teams[id]; f != nil {
		f.users++
		return f, nil
	}
	if err := c.ctx.Err(); err != nil {
		return nil, fmt.Errorf("fleet: the console has ended: %w", context.Cause(c.ctx))
	}
	ctx, cancel := context.WithCancel(c.ctx)
	client, team := c.client, id
	m, err := studio.NewMirror(ctx, id, studio.MirrorConfig{
		Keep: c.opt.Buffer,
		Send: func(ctx context.Context, to, text string) error {
			_, err := client.Send(ctx, team, to, text)
			return err
		},
		Answer: func(ctx context.Context, q uuid.UUID, text string) error {
			_, err := client.Answer(ctx, team, q, text)
			return err
		},
		Decide: func(ctx context.Context, q uuid.UUID, approve bool, reason string) error {
			_, err := client.Decide(ctx, team, q, approve, reason)
			return err
		},
	}, c.opt)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("fleet: %w", err)
	}
	f := &followed{m: m, users: 1, ready: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	c.teams[id] = f
	go c.follow(ctx, id, f)
	return f, nil
}

// release ends a request of f; the last one ends its watch and waits for
// it.
func (c *Console) release(id uuid.UUID, f *followed) {
	c.mu.Lock()
	f.users--
	last := f.users == 0
	if last {
		delete(c.teams, id)
	}
	c.mu.Unlock()
	if last {
		f.cancel()
		<-f.done
	}
}

// follow feeds f's mirror with the team's records until ctx ends or the
// team has stopped (then the page is told).
func (c *Console) follow(ctx context.Context, id uuid.UUID, f *followed) {
	defer close(f.done)
	ready := sync.OnceFunc(func() { close(f.ready) })
	defer ready()
	teams, err := c.client.Teams(ctx)
	if err != nil {
		f.err = err
		return
	}
	if !slices.ContainsFunc(teams, func(t cluster.TeamInfo) bool { return t.ID == id }) {
		f.err = fmt.Errorf("%w: %s", cluster.ErrNoSuchTeam, id)
		return
	}
	last, _, err := c.client.LastRecord(ctx, id)
	if err != nil {
		c.log.Debug("fleet: the team's last record was not read; its page is served as its records come", "team_id", id, "error", err)
	}
	if last == 0 {
		ready()
	}
	var n uint64         // records read (added, or that did not decode): the ledger index of the last, as far as every record has one
	var recent recentIDs // a watch followed again may yield a record added already
	for wait := retryMin; ; wait = min(2*wait, retryMax) {
		var failed error
		for rec, err := range c.client.Watch(ctx, id, n+1) {
			if errors.Is(err, cluster.ErrBadRecord) { // skipped: the watch goes on
				c.log.Warn("fleet: a record of the team does not decode; its page goes on without it", "team_id", id, "error", err)
				n++
				continue
			}
			if err != nil {
				failed = err
				c.log.Warn("fleet: a team's watch reported an error", "team_id", id, "error", err)
				continue
			}
			failed = nil
			if !recent.add(rec.Envelope().ID) {
				continue
			}
			f.m.Add(rec)
			if n++; n >= last {
				ready()
			}
			if stopping(rec) && c.stopped(ctx, id) {
				f.m.End()
				return
			}
		}
		switch {
		case ctx.Err() != nil:
			return
		case failed == nil: // a stopped team read to its last record
			f.m.End()
			return
		}
		// The watch failed (the connection lost): it follows again from
		// the next record, after a pause.
		if clock.Sleep(ctx, wait) != nil {
			return
		}
	}
}

// recentIDs is a ring of the ids of the records added last.
type recentIDs struct {
	ids  [1024]uuid.UUID
	next int
	set  map[uuid.UUID]struct{}
}

// add reports whether id is new, and keeps it among the recent ones.
func (r *recentIDs) add(id uuid.UUID) bool {
	if r.set == nil {
		r.set = make(map[uuid.UUID]struct{}, len(r.ids))
	}
	if _, dup := r.set[id]; dup {
		return false
	}
	delete(r.set, r.ids[r.next])
	r.ids[r.next] = id
	r.next = (r.next + 1) % len(r.ids)
	r.set[id] = struct{}{}
	return true
}

// The pauses before a failed watch is followed again.
const (
	retryMin = 100 * time.Millisecond
	retryMax = 5 * time.Second
)

// stopping reports a record that begins or ends the team's stop: its
// TeamStoppingEvent, or the Stop record of its orchestrator.
func stopping(rec message.Message) bool {
	switch t := rec.(type) {
	case *message.EventMessage:
		_, ok := message.EventAs[message.TeamStoppingEvent](t)
		return ok
	case *message.StopMessage:
		a := t.Sender
		return a != nil && (a.IsOrchestrator() || a.ActorType() == "Orchestrator")
	}
	return false
}

// stopped reports whether the team's lease says it stopped for good (not
// passivated, not moving to another worker). Its owner marks the lease
// after the team's last records: it is read a few times, a short while
// apart.
func (c *Console) stopped(ctx context.Context, id uuid.UUID) bool {
	wait := 50 * time.Millisecond
	for range 6 {
		teams, err := c.client.Teams(ctx)
		if err == nil {
			i := slices.IndexFunc(teams, func(t cluster.TeamInfo) bool { return t.ID == id })
			if i < 0 || teams[i].Stopped {
				return true
			}
			if teams[i].Passive {
				return false
			}
		}
		if clock.Sleep(ctx, wait) != nil {
			return false
		}
		wait *= 2
	}
	return false
}

// row is one team of the list (a row of the page, an entry of
// teams.json).
type row struct {
	ID       string `json:"id"`
	Link     string `json:"link"` // the team's page, relative to the list
	Template string `json:"template"`
	Owner    string `json:"owner"`
	State    string `json:"state"`
	Last     string `json:"last"` // its last record's time, or why it is unknown
	Error    string `json:"error,omitempty"`
}

// listing is one page of the list of teams.
type listing struct {
	Title string `json:"title"`
	Teams []row  `json:"teams"`
	Page  int    `json:"page"`  // from 1
	Pages int    `json:"pages"` // at least 1
	Total int    `json:"total"` // the teams in the cluster
	// Refresh is how often the page's script fetches the list again, in
	// milliseconds.
	Refresh int64 `json:"refresh"`
	// Prev and Next are the links to the pages before and after ("": none).
	Prev string `json:"prev,omitempty"`
	Next string `json:"next,omitempty"`
}

// listOf reads the page of the list that r asks for (?page=N, from 1; a
// page past the last is the last): the teams in a stable order (the
// running first, then by template and id), and the last record of the
// shown ones only.
func (c *Console) listOf(r *http.Request) (listing, int, error) {
	page := 1
	if v := r.URL.Query().Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return listing{}, http.StatusBadRequest, fmt.Errorf("fleet: ?page= is %q, not a page number (1 or more)", v)
		}
		page = n
	}
	teams, err := c.client.Teams(r.Context())
	if err != nil {
		return listing{}, http.StatusServiceUnavailable, fmt.Errorf("fleet: %w", err)
	}
	now := time.Now()
	slices.SortFunc(teams, func(a, b cluster.TeamInfo) int {
		if d := rank(a, now) - rank(b, now); d != 0 {
			return d
		}
		if d := strings.Compare(a.Template, b.Template); d != 0 {
			return d
		}
		return strings.Compare(a.ID.String(), b.ID.String())
	})
	l := listing{Title: c.opt.Title, Page: page, Pages: max(1, (len(teams)+c.pageSize-1)/c.pageSize), Total: len(teams), Refresh: c.refresh.Milliseconds(), Teams: []row{}}
	l.Page = min(l.Page, l.Pages)
	token := ""
	if tok := r.URL.Query().Get("token"); tok != "" {
		token = "token=" + url.QueryEscape(tok)
	}
	link := func(page int) string {
		q := "?page=" + strconv.Itoa(page)
		if token != "" {
			q += "&" + token
		}
		return q
	}
	if l.Page > 1 {
		l.Prev = link(l.Page - 1)
	}
	if l.Page < l.Pages {
		l.Next = link(l.Page + 1)
	}
	from := (l.Page - 1) * c.pageSize
	for _, t := range teams[from:min(from+c.pageSize, len(teams))] {
		x := row{ID: t.ID.String(), Link: "teams/" + t.ID.String() + "/", Template: t.Template, Owner: t.Owner, State: stateOf(t, now), Last: "no record yet", Error: t.Error}
		if token != "" {
			x.Link += "?" + token
		}
		if _, at, err := c.lastRecord(r.Context(), t.ID); err != nil {
			x.Last = "unknown (" + err.Error() + ")"
		} else if !at.IsZero() {
			x.Last = at.UTC().Format("2006-01-02 15:04:05 UTC")
		}
		l.Teams = append(l.Teams, x)
	}
	return l, 0, nil
}

// list serves a page of the list of teams: as HTML (the rows of the
// page, and its script, fleet.js, which fetches the list again every
// refresh), or as JSON (teams.json, for that script).
func (c *Console) list(w http.ResponseWriter, r *http.Request, asJSON bool) {
	webauth.PageHeaders(w.Header())
	w.Header().Set("Cache-Control", "no-store")
	l, status, err := c.listOf(r)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	if asJSON {
		w.Header().Set("Content-Type", "application/json")
		err = json.NewEncoder(w).Encode(l)
	} else {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		err = listPage.Execute(w, l)
	}
	if err != nil {
		c.log.Debug("fleet: the list of teams was not written", "error", err)
	}
}

// stateOf is a team's state as the list shows it.
func stateOf(t cluster.TeamInfo, now time.Time) string {
	switch {
	case t.Stopped:
		return "stopped"
	case t.Error != "":
		return "error"
	case t.Passive:
		return "passive"
	case t.Until.Before(now):
		return "waiting for a worker"
	}
	return "active"
}

// rank orders the states in the list: the teams that run first, the
// stopped last.
func rank(t cluster.TeamInfo, now time.Time) int {
	switch stateOf(t, now) {
	case "active":
		return 0
	case "waiting for a worker":
		return 1
	case "error":
		return 2
	case "passive":
		return 3
	}
	return 4
}

var listPage = template.Must(template.New("list").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title><link rel="stylesheet" href="style.css"></head>
<body class="fleet"><main class="fleet-list" id="fleet" data-page="{{.Page}}" data-refresh="{{.Refresh}}">
<h1>{{.Title}}</h1>
<table id="teams"{{if not .Teams}} hidden{{end}}><thead><tr><th>team</th><th>template</th><th>owner</th><th>state</th><th>last activity</th></tr></thead><tbody>
{{range .Teams}}<tr data-team="{{.ID}}"><td><a href="{{.Link}}">{{.ID}}</a></td><td class="template">{{.Template}}</td><td class="owner">{{.Owner}}</td><td class="state"{{if .Error}} title="{{.Error}}"{{end}}>{{.State}}</td><td class="last">{{.Last}}</td></tr>
{{end}}</tbody></table>
<p id="none"{{if .Teams}} hidden{{end}}>No team in the cluster yet.</p>
<nav class="pager"><a id="prev" href="{{.Prev}}"{{if not .Prev}} hidden{{end}}>← previous</a>
<span id="pageinfo">page {{.Page}} of {{.Pages}} · {{.Total}} teams</span>
<a id="next" href="{{.Next}}"{{if not .Next}} hidden{{end}}>next →</a></nav>
<p class="dim" id="updated">The list refreshes itself.</p>
</main><script src="fleet.js"></script></body></html>
`))
