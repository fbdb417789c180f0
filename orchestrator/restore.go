package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/internal/link"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/proxy"
)

// MetadataChanged is published to the subscribers (not logged, not a
// state) when the team metadata is set, so that a durable event log can
// keep it and a restore can bring it back (metadata is otherwise not
// telemetry). Its sender is the orchestrator.
type MetadataChanged struct {
	message.Base
	Value any `json:"value"`
}

func init() { message.Register[MetadataChanged]("TeamMetadataChanged") }

type metadataJSON struct {
	*metadataAlias
	Value json.RawMessage `json:"value"`
}
type metadataAlias MetadataChanged

// MarshalJSON encodes the change with its value tagged (message.Marshal),
// so that a registered type decodes back to itself.
func (m *MetadataChanged) MarshalJSON() ([]byte, error) {
	raw, err := link.MarshalValue(m.Value)
	if err != nil {
		return nil, err
	}
	return json.Marshal(metadataJSON{(*metadataAlias)(m), raw})
}

// UnmarshalJSON decodes the change: a tagged value to its registered type,
// plain JSON to maps, slices, strings, float64 and bools.
func (m *MetadataChanged) UnmarshalJSON(data []byte) error {
	j := metadataJSON{metadataAlias: (*metadataAlias)(m)}
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	v, err := link.UnmarshalValue(j.Value)
	if err != nil {
		return fmt.Errorf("TeamMetadataChanged.value: %w", err)
	}
	if raw, ok := v.(json.RawMessage); ok { // untagged: plain JSON values
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("TeamMetadataChanged.value: %w", err)
		}
	}
	m.Value = v
	return nil
}

// CatalogChanged is published to the subscribers (not a record of the
// ledger's window, not a state) when cards are registered (Team.Register):
// the whole catalog after the change, in registration order. A durable
// log keeps it, and Restore brings the catalog back from it, so a restored
// team needs no registration of its own; Restore publishes each one it
// replays again, with the catalog as restored, to the subscribers given
// to it (WithSubscribers), so the last one they get is the restored
// catalog. Its sender is the orchestrator.
//
// It is published once per change, to the subscribers the team has then:
// a subscriber added later does not get the earlier ones. To know the
// catalog as it is now, call Team.Cards (then follow the CatalogChanged
// that come after).
type CatalogChanged struct {
	message.Base
	Cards []*AgentCard `json:"cards"`
}

func init() { message.Register[CatalogChanged]("TeamCatalogChanged") }

// publishCatalog fans a CatalogChanged out to the subscribers only.
func (o *orchestrator) publishCatalog() {
	if len(o.pumps) == 0 {
		return
	}
	m := &CatalogChanged{Cards: o.catalog.Cards()}
	o.stamp(m)
	m.Sender = m.Sender.Snapshot()
	o.fanOut(item{op: opMessage, x: m})
}

// restoreCatalog makes the catalog the cards of a replayed
// CatalogChanged, each on its own: a card this process cannot use (its
// agent_class not registered) is left out, and named in the error.
func (o *orchestrator) restoreCatalog(cc *CatalogChanged) error {
	o.catalog = catalog{}
	var errs []error
	for _, c := range cc.Cards {
		err := c.Validate()
		if err == nil {
			err = o.catalog.Register(c)
		}
		if err != nil {
			errs = append(errs, leftOutCard{role: c.Role(), err: err})
		}
	}
	o.led.version.Add(1)
	o.publishCatalog()
	return errors.Join(errs...)
}

// leftOutCard is a card of a replayed CatalogChanged that Restore left
// out, and why: one sentence, its reasons joined with "; ".
type leftOutCard struct {
	role string
	err  error
}

func (e leftOutCard) Error() string {
	why := e.err.Error()
	var ce *cardError
	if errors.As(e.err, &ce) {
		why = strings.Join(ce.problems, "; ")
	}
	return fmt.Sprintf("the recorded catalog's card of role %q is left out: %s", e.role, why)
}

func (e leftOutCard) Unwrap() error { return e.err }

// publishMetadata fans a MetadataChanged out to the subscribers only.
func (o *orchestrator) publishMetadata() {
	if len(o.pumps) == 0 {
		return
	}
	m := &MetadataChanged{Value: o.meta}
	o.stamp(m)
	m.Sender = m.Sender.Snapshot()
	o.fanOut(item{op: opMessage, x: m})
}

// Restore recreates a team from its log, as read back from a durable event
// log:
//
//  1. a new orchestrator with the log's team id and orchestrator id;
//  2. the subscribers of opts are told SetRestoring(true), every message is
//     replayed to the ledger and to them in order (a TeamStoppingEvent is
//     skipped; a MetadataChanged restores the metadata, a CatalogChanged
//     the catalog of cards), then SetRestoring(false);
//  3. every actor alive at the end of the log, or, when the log ends with
//     the team's stop, alive when that stop began, is recreated with its
//     original agent id and team, its kind (actor.RegisterKind) and its
//     recorded config, under its original parent when that parent was
//     recreated before it, else under the orchestrator; tools
//     (actor.Config.Tool) come first, so that agents starting find their
//     team's tools. Its Context.Restoring reports true; RestoredState
//     gives it its last published state. WithPrepare's function, if any, is called with it
//     before its spawn.
//
// The team is returned even when some actors could not be recreated (an
// unregistered kind, a config that does not decode) or failed their start
// (OnStart returned an error or panicked): the error names each of them,
// a member whose start failed is stopped, and they are left out of the
// roster.
func Restore(ctx context.Context, sys *actor.System, log []message.Message, opts ...Option) (*Team, error) {
	var teamID, orchID uuid.UUID
	for _, m := range log {
		if m == nil {
			continue
		}
		b := m.Envelope()
		if teamID == uuid.Nil && b.TeamID.Valid {
			teamID = b.TeamID.UUID
		}
		if orchID == uuid.Nil { // its own records, or its children's parent
			if isOrchestrator(b.Sender) {
				orchID = b.Sender.AgentID()
			} else if sm, ok := m.(*message.StartMessage); ok && isOrchestrator(sm.Parent) {
				orchID = sm.Parent.AgentID()
			}
		}
	}
	if teamID == uuid.Nil {
		return nil, errors.New("orchestrator: restore: the log names no team (no message has a team id)")
	}
	pre := []Option{WithTeamID(teamID)}
	if orchID != uuid.Nil {
		pre = append(pre, func(o *options) { o.agentID, o.spawn = orchID, append(o.spawn, rt.Restoring()) })
	}
	t, err := New(sys, append(pre, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: restore team %s: %w", teamID, err)
	}
	type alive struct {
		addr *message.Address
		cfg  any
		par  *message.Address
	}
	var starts []alive
	var errs []error
	err = t.live(ctx, func(o *orchestrator) {
		if err := o.replay(log); err != nil {
			errs = append(errs, err)
		}
		for _, a := range membersAt(log, orchID) {
			if live, ok := o.members[a.AgentID()]; ok && isLive(live) {
				continue
			}
			starts = append(starts, alive{addr: a})
		}
		// Configs and parents from the last StartMessage of each.
		idx := make(map[uuid.UUID]int, len(starts))
		for i, s := range starts {
			idx[s.addr.AgentID()] = i
		}
		for _, m := range log {
			if sm, ok := m.(*message.StartMessage); ok && sm.Sender != nil {
				if i, ok := idx[sm.Sender.AgentID()]; ok {
					starts[i].cfg, starts[i].par = sm.Config, sm.Parent
				}
			}
		}
	})
	if err != nil {
		return t, fmt.Errorf("orchestrator: restore team %s: replay: %w", teamID, err)
	}
	// Tools (actor.Config.Tool) first: a recreated agent's start may look
	// for its team's singleton tools (ChildOrCreate), which must be back by
	// then.
	slices.SortStableFunc(starts, func(a, b alive) int {
		return cmpBool(isToolConfig(b.cfg), isToolConfig(a.cfg))
	})
	var op options // WithPrepare
	for _, f := range opts {
		f(&op)
	}
	recreated := map[uuid.UUID]*message.Address{}
	for _, s := range starts {
		addr, err := recreate(ctx, t, s.addr, s.cfg, s.par, recreated, op.prepare)
		if err != nil {
			errs = append(errs, fmt.Errorf("recreate %s (%s, kind %q): %w", s.addr.Name(), s.addr.AgentID(), s.addr.ActorType(), err))
			continue
		}
		recreated[s.addr.AgentID()] = addr
	}
	// A member whose start failed (its OnStart returned an error or
	// panicked: a recorded state of the wrong type, say) is not restored:
	// it is stopped, leaves the roster, and the error names it.
	for _, f := range startFailures(ctx, t, log, recreated) {
		errs = append(errs, fmt.Errorf("recreate %s (%s, kind %q): its start failed: %s", f.addr.Name(), f.addr.AgentID(), f.addr.ActorType(), f.reason))
		if err := sys.Stop(ctx, f.addr); err != nil && !errors.Is(err, actor.ErrActorDead) {
			errs = append(errs, fmt.Errorf("stop %s, whose start failed: %w", f.addr.Name(), err))
		}
	}
	// No phantom members to hold the team's stop: a replayed
	// member that was not recreated (it failed, or it was stopping when the
	// log ends) leaves the roster.
	_ = t.live(ctx, func(o *orchestrator) {
		for _, a := range o.roster() {
			if !isLive(a) {
				o.leave(a)
			}
		}
	})
	if len(errs) > 0 {
		return t, fmt.Errorf("orchestrator: restore team %s: %w", teamID, errors.Join(errs...))
	}
	return t, nil
}

// startFailure is a recreated member whose start failed, and why.
type startFailure struct {
	addr   *message.Address
	reason string
}

// startFailures returns the members of recreated whose start failed: once
// each has started (a call on its goroutine runs after its OnStart), the
// ErrorMessages without a current message (a failed start's) that the
// replayed log did not hold, by a member of recreated, in ledger order.
func startFailures(ctx context.Context, t *Team, log []message.Message, recreated map[uuid.UUID]*message.Address) []startFailure {
	if len(recreated) == 0 {
		return nil
	}
	for _, addr := range recreated {
		_ = proxy.Do(ctx, addr, func(*actor.Context, actor.Actor) error { return nil }) // a member already gone: nothing to wait for
	}
	old := map[uuid.UUID]bool{}
	for _, m := range log {
		if em, ok := m.(*message.ErrorMessage); ok {
			old[em.ID] = true
		}
	}
	// The window only (never the archive): the failures are among the
	// latest records.
	msgs, _ := query(ctx, t, func(r reader) ([]message.Message, error) {
		var out []message.Message
		eachMessage(r.log(), false, func(m message.Message) {
			if _, ok := m.(*message.ErrorMessage); ok {
				out = append(out, m)
			}
		})
		return out, nil
	})
	var out []startFailure
	seen := map[uuid.UUID]bool{}
	for _, m := range msgs {
		em, ok := m.(*message.ErrorMessage)
		if !ok || em.CurrentMessage != nil || em.Sender == nil || old[em.ID] || seen[em.Sender.AgentID()] {
			continue
		}
		if addr, ok := recreated[em.Sender.AgentID()]; ok {
			seen[em.Sender.AgentID()] = true
			out = append(out, startFailure{addr: addr, reason: em.Content})
		}
	}
	return out
}

// membersAt returns the members to bring back from a log, in join order:
// those alive when the team's last stop began (its TeamStoppingEvent), so
// that a team stopped cleanly resumes with the members it had; without a
// stop, those alive at the end (a crash).
func membersAt(log []message.Message, orchID uuid.UUID) []*message.Address {
	end := len(log)
	for i := len(log) - 1; i >= 0; i-- {
		if _, ok := log[i].(*message.StartMessage); ok {
			break // the team went on after its last stop (it was restored)
		}
		if ev, ok := log[i].(*message.EventMessage); ok && isStoppingEvent(ev.Event) {
			end = i
			break
		}
	}
	alive := map[uuid.UUID]*message.Address{}
	var order []uuid.UUID
	for _, m := range log[:end] {
		if m == nil {
			continue
		}
		s := m.Envelope().Sender
		// The team's own orchestrator is excluded by id, by
		// kind only when the log does not say which it is.
		if s == nil || s.AgentID() == orchID || (orchID == uuid.Nil && isOrchestrator(s)) {
			continue
		}
		switch m.(type) {
		case *message.StartMessage:
			if _, ok := alive[s.AgentID()]; !ok {
				order = append(order, s.AgentID())
			}
			alive[s.AgentID()] = s
		case *message.StopMessage:
			delete(alive, s.AgentID())
		}
	}
	var out []*message.Address
	for _, id := range order {
		if a, ok := alive[id]; ok {
			out = append(out, a)
			delete(alive, id) // once, even if it restarted
		}
	}
	return out
}

// isToolConfig reports whether a recorded config marks a tool
// (actor.Config.Tool), in whatever form the log kept it.
func isToolConfig(cfg any) bool {
	switch c := cfg.(type) {
	case configurer:
		return c.ActorConfig().Tool
	case json.RawMessage:
		var base actor.Config
		return json.Unmarshal(c, &base) == nil && base.Tool
	}
	return false
}

// cmpBool orders true before false when called as cmpBool(b, a).
func cmpBool(x, y bool) int {
	switch {
	case x == y:
		return 0
	case x:
		return 1
	}
	return -1
}

// replay appends recorded messages to the team's log and fans them out,
// with SetRestoring(true) before and SetRestoring(false) after:
// no re-stamping; an EventMessage carrying a TeamStoppingEvent is skipped;
// a MetadataChanged sets the metadata, a CatalogChanged the catalog (the
// error names the cards left out). The roster and states follow the
// replayed StartMessages, StopMessages and StateChangedMessages.
func (o *orchestrator) replay(log []message.Message) error {
	o.setRestoring(true)
	var err error
	for _, m := range log {
		if m == nil {
			continue
		}
		switch x := m.(type) {
		case *MetadataChanged:
			o.meta = x.Value
			o.publishMetadata()
			continue
		case *CatalogChanged:
			err = o.restoreCatalog(x) // the last one counts
			continue
		}
		o.restoreMessage(m)
	}
	o.setRestoring(false)
	return err
}

// isOrchestrator recognises an orchestrator's address, live or decoded
// (a serialized address keeps its kind, not the live flag).
func isOrchestrator(a *message.Address) bool {
	return a != nil && (a.IsOrchestrator() || a.ActorType() == kindOrchestrator)
}

// recreate spawns one recorded actor again, prepared by every function of
// prepare, in order, before its spawn.
func recreate(ctx context.Context, t *Team, was *message.Address, cfg any, parent *message.Address, done map[uuid.UUID]*message.Address, prepare []func(actor.Actor)) (*message.Address, error) {
	a, err := rt.NewKind(was.ActorType())
	if err != nil {
		return nil, err
	}
	for _, p := range prepare {
		p(a)
	}
	if raw, ok := cfg.(json.RawMessage); ok {
		if cfg, err = rt.DecodeConfig(a, raw); err != nil {
			return nil, err
		}
	}
	opts := []actor.SpawnOption{actor.WithAgentID(was.AgentID()), rt.Restoring()}
	if parent != nil {
		if p, ok := done[parent.AgentID()]; ok {
			return actorSpawnUnder(ctx, p, a, cfg, opts)
		}
	}
	return t.Spawn(ctx, a, cfg, opts...)
}

func actorSpawnUnder(ctx context.Context, parent *message.Address, a actor.Actor, cfg any, opts []actor.SpawnOption) (*message.Address, error) {
	return proxy.Ask(ctx, parent, func(c *actor.Context, _ actor.Actor) (*message.Address, error) {
		return c.Spawn(a, cfg, opts...)
	})
}

// RestoredState returns the last state the calling actor published before
// its team was saved, decoded into S, and whether there was one. Call it
// from OnStart when c.Restoring() is true:
//
//	if c.Restoring() {
//		if s, ok, err := orchestrator.RestoredState[MyState](ctx, c); err == nil && ok {
//			w.InitState(s)
//		}
//	}
func RestoredState[S any](ctx context.Context, c *actor.Context) (*S, bool, error) {
	states, err := Of(c.Orchestrator()).States(ctx)
	if err != nil {
		return nil, false, err
	}
	v, ok := states[c.Self().AgentID()]
	if !ok || v == nil {
		return nil, false, nil
	}
	if s, ok := v.(*S); ok {
		cp := *s
		return &cp, true, nil
	}
	data, ok := v.(json.RawMessage)
	if !ok {
		if data, err = json.Marshal(v); err != nil {
			return nil, false, fmt.Errorf("orchestrator: restored state of %s: %w", c.Self().Name(), err)
		}
	}
	s := new(S)
	if err := json.Unmarshal(data, s); err != nil {
		return nil, false, fmt.Errorf("orchestrator: restored state of %s into %T: %w", c.Self().Name(), s, err)
	}
	return s, true, nil
}
