package studio

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// defaultKeep is how many records a Mirror keeps by default: the
// team's own in-memory window.
const defaultKeep = 4096

// MirrorConfig says how many of a team's records a Mirror keeps and where
// the person's input goes. Send, Answer and Decide take the input as the
// team's person gives it (cluster.Client's methods of those names, for
// one team, fit them); a nil Send makes the page read-only, a nil Answer
// or Decide refuses answers or decisions.
type MirrorConfig struct {
	// Keep bounds the records kept for the pages (default 4096): a page
	// opened later gets the last Keep as its history, and is told how
	// many earlier ones it lacks. The roster and the latest state of
	// each member are kept whatever their age.
	Keep int
	// Send sends text (a message or a /command) to the member named to.
	Send func(ctx context.Context, to, text string) error
	// Answer answers question (the id of a message to the person).
	Answer func(ctx context.Context, question uuid.UUID, text string) error
	// Decide approves or denies request (an approval request to the
	// person), with reason.
	Decide func(ctx context.Context, request uuid.UUID, approve bool, reason string) error
}

// Mirror is the studio page of a team that runs elsewhere (in a cluster
// worker, another process): it is fed the team's records in their order
// (Add) and serves them as Studio serves a local team's, live. It keeps
// the last MirrorConfig.Keep records; the roster (who joined and did not
// leave), the latest state of each member (the task board) and the
// person (the member that is a user proxy) are derived from them; a page
// opened before the person's record is told the person when it comes.
// Add takes the team's catalog record too (orchestrator.CatalogChanged,
// which the team's subscribers get beside its records): the last one is
// the catalog the member panel shows, and each one is pushed to the open
// pages. Input typed in the page goes out through MirrorConfig.
type Mirror struct {
	*Studio
	t *mirrored
}

// mirrored is the team a Mirror is fed: its records kept, and what is
// derived from them. It is the page's source and its voice.
type mirrored struct {
	id  uuid.UUID
	cfg MirrorConfig
	hub *hub

	mu      sync.Mutex
	recs    []message.Message // the last cfg.Keep records, oldest first (a ring from head when full)
	head    int
	dropped int                                        // records no longer kept
	roster  []*message.Address                         // members in the order they joined
	states  map[uuid.UUID]*message.StateChangedMessage // the latest state change of each member
	who     *message.Address                           // the person
	cards   []*orchestrator.AgentCard                  // the catalog, from its last CatalogChanged
	ended   bool
}

// NewMirror returns the page of team, fed by Add, until ctx ends (its
// event streams end then). opt is the Studio's, except Person, which
// must be nil: the page speaks as the person the records name, through
// cfg.
func NewMirror(ctx context.Context, team uuid.UUID, cfg MirrorConfig, opt Options) (*Mirror, error) {
	switch {
	case opt.Person != nil:
		return nil, errors.New("studio: NewMirror: Options.Person is set; a mirror speaks as the person its records name, through MirrorConfig.Send")
	case cfg.Keep < 0:
		return nil, fmt.Errorf("studio: NewMirror: MirrorConfig.Keep is %d; want 0 (the default, %d) or more", cfg.Keep, defaultKeep)
	}
	if cfg.Keep == 0 {
		cfg.Keep = defaultKeep
	}
	if err := opt.defaults("NewMirror"); err != nil {
		return nil, err
	}
	t := &mirrored{id: team, cfg: cfg, states: map[uuid.UUID]*message.StateChangedMessage{}}
	s, err := newStudio(ctx, t, opt)
	if err != nil {
		return nil, err
	}
	t.hub = s.hub
	if cfg.Send != nil {
		s.in = t
	}
	return &Mirror{Studio: s, t: t}, nil
}

// Add takes the team's next record: it is kept, and shown on every open
// page. A CatalogChanged is not kept as a record: it replaces the catalog
// the pages show. Records must come in the team's order, from one goroutine at a
// time; after End, Add does nothing.
func (m *Mirror) Add(rec message.Message) { m.t.add(rec) }

// End tells every open page, and every page opened later, that the team
// has stopped: nothing more will come.
func (m *Mirror) End() { m.t.end() }

func (m *mirrored) add(rec message.Message) {
	if rec == nil {
		return
	}
	switch x := rec.(type) {
	case *orchestrator.MetadataChanged:
		return // not a log record
	case *orchestrator.CatalogChanged: // not a log record either: the catalog
		m.mu.Lock()
		m.cards = x.Cards
		m.mu.Unlock()
		m.hub.catalog(x.Cards) // kept first: a page joining now reads it in its hello
		return
	}
	m.mu.Lock()
	if m.ended {
		m.mu.Unlock()
		return
	}
	learnt := m.keep(rec)
	m.mu.Unlock()
	m.hub.add(rec) // kept first: a page joining now reads it in its history or gets it here
	if learnt != nil {
		// Kept first too: a page whose hello did not name the person is
		// told now; one joining later names it in its hello.
		m.hub.person(learnt)
	}
}

// keep stores rec and updates the roster and states (under m.mu). It
// returns the person when rec made it known.
func (m *mirrored) keep(rec message.Message) (learnt *message.Address) {
	if len(m.recs) < m.cfg.Keep {
		m.recs = append(m.recs, rec)
	} else {
		m.recs[m.head] = rec
		m.head = (m.head + 1) % len(m.recs)
		m.dropped++
	}
	who := rec.Envelope().Sender
	if who == nil {
		return nil
	}
	switch t := rec.(type) {
	case *message.StartMessage:
		// A member already in the roster starts again when its team is
		// restored (a takeover by another worker): it keeps its place.
		if i := slices.IndexFunc(m.roster, func(a *message.Address) bool { return a.AgentID() == who.AgentID() }); i >= 0 {
			m.roster[i] = who
		} else {
			m.roster = append(m.roster, who)
		}
		if who.IsUserProxy() && shown(who) && m.who == nil {
			m.who = who
			return who
		}
	case *message.StopMessage:
		m.roster = dropAgent(m.roster, who.AgentID())
	case *message.StateChangedMessage:
		m.states[who.AgentID()] = t
	}
	return nil
}

// dropAgent removes the agent id from roster.
func dropAgent(roster []*message.Address, id uuid.UUID) []*message.Address {
	for i, a := range roster {
		if a.AgentID() == id {
			return append(roster[:i], roster[i+1:]...)
		}
	}
	return roster
}

func (m *mirrored) end() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ended {
		m.ended = true
		m.hub.OnStop(m.id)
	}
}

// ID is the team's id.
func (m *mirrored) ID() uuid.UUID { return m.id }

// Messages returns the records kept, state changes apart unless asked
// for (as orchestrator.Team.Messages does), filtered by f. When some are no
// longer kept, the error wraps orchestrator.ErrOutsideWindow and says how
// many. The state changes asked for include the latest of each member
// even when it is no longer kept.
func (m *mirrored) Messages(_ context.Context, f orchestrator.Filter) ([]message.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	states := f.States || f.Type == "StateChangedMessage"
	var out []message.Message
	if states && m.dropped > 0 {
		for _, sc := range m.oldStates() {
			if matches(f, sc) {
				out = append(out, sc)
			}
		}
	}
	for i := range m.recs {
		rec := m.recs[(m.head+i)%len(m.recs)]
		if _, sc := rec.(*message.StateChangedMessage); sc && !states {
			continue
		}
		if matches(f, rec) {
			out = append(out, rec)
		}
	}
	if m.dropped > 0 {
		return out, fmt.Errorf("studio: %w: this page keeps the team's last %d records (MirrorConfig.Keep); the %d before them are not shown", orchestrator.ErrOutsideWindow, m.cfg.Keep, m.dropped)
	}
	return out, nil
}

// oldStates are the latest state changes of each member that are no
// longer among the records kept, oldest first (under m.mu).
func (m *mirrored) oldStates() []message.Message {
	kept := map[*message.StateChangedMessage]bool{}
	for _, rec := range m.recs {
		if sc, ok := rec.(*message.StateChangedMessage); ok {
			kept[sc] = true
		}
	}
	var out []message.Message
	for _, sc := range m.states {
		if !kept[sc] {
			out = append(out, sc)
		}
	}
	sortByTime(out)
	return out
}

// matches is orchestrator.Filter's selection.
func matches(f orchestrator.Filter, rec message.Message) bool {
	if f.Sender != uuid.Nil {
		if s := rec.Envelope().Sender; s == nil || s.AgentID() != f.Sender {
			return false
		}
	}
	return f.Type == "" || message.TypeName(rec) == f.Type
}

// Members returns the members the records say are in the team now.
func (m *mirrored) Members(context.Context) ([]*message.Address, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*message.Address(nil), m.roster...), nil
}

// Cards returns the catalog the records' last CatalogChanged holds.
func (m *mirrored) Cards(context.Context) ([]*orchestrator.AgentCard, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*orchestrator.AgentCard(nil), m.cards...), nil
}

// States returns the latest recorded state of each member.
func (m *mirrored) States(context.Context) (map[uuid.UUID]any, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[uuid.UUID]any, len(m.states))
	for id, sc := range m.states {
		out[id] = sc.State
	}
	return out, nil
}

func (m *mirrored) person() *message.Address {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.who
}

func (m *mirrored) say(ctx context.Context, to *message.Address, text string) error {
	return m.cfg.Send(ctx, to.Name(), text)
}

func (m *mirrored) answer(ctx context.Context, q message.Message, text string) error {
	if m.cfg.Answer == nil {
		return refuse(http.StatusForbidden, "this page cannot answer: its mirror has no MirrorConfig.Answer")
	}
	return m.cfg.Answer(ctx, q.Envelope().ID, text)
}

func (m *mirrored) decide(ctx context.Context, q message.Message, approve bool, reason string) error {
	if m.cfg.Decide == nil {
		return refuse(http.StatusForbidden, "this page cannot decide approvals: its mirror has no MirrorConfig.Decide")
	}
	return m.cfg.Decide(ctx, q.Envelope().ID, approve, reason)
}

// sortByTime sorts ms by their time, stably.
func sortByTime(ms []message.Message) {
	slices.SortStableFunc(ms, func(a, b message.Message) int {
		return a.Envelope().Timestamp.Compare(b.Envelope().Timestamp)
	})
}
