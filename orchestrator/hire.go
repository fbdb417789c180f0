package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/internal/link"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/proxy"
)

// Spawn creates a member as a child of the orchestrator, with the same
// options as actor.Context.Spawn.
func (t *Team) Spawn(ctx context.Context, a actor.Actor, cfg any, opts ...actor.SpawnOption) (*message.Address, error) {
	if t == nil || t.addr == nil {
		return nil, noTeam()
	}
	return proxy.Ask(ctx, t.addr, func(c *actor.Context, o *orchestrator) (*message.Address, error) {
		if err := ctx.Err(); err != nil { // the caller gave up while this waited: do nothing
			return nil, err
		}
		if o.stopping || o.finished {
			return nil, fmt.Errorf("orchestrator: spawn %T: team is stopping: %w", a, actor.ErrActorDead)
		}
		return c.Spawn(a, cfg, opts...)
	})
}

func init() {
	link.InstallTeamNames(link.TeamNames[*Team]{Reserve: (*Team).reserveName, Release: (*Team).releaseName, Version: (*Team).version})
}

// versions maps each running orchestrator's agent id to its ledger's
// roster-and-catalog version (ledger.version), so that a Team made with Of
// reads it without a round trip.
var versions sync.Map // uuid.UUID -> *atomic.Uint64

// version returns the team's roster-and-catalog version (link.TeamNames).
func (t *Team) version() (uint64, bool) {
	if t == nil || t.addr == nil {
		return 0, false
	}
	v, ok := versions.Load(t.addr.AgentID())
	if !ok {
		return 0, false
	}
	return v.(*atomic.Uint64).Load(), true
}

// reserveName claims name for a member about to be created, so that two
// creators choosing names at once cannot both take it: it reports false
// when a member or an earlier reservation has it. The reservation ends when
// a member with that name joins, or with releaseName. Package teamtool
// reaches both through internal/link.
func (t *Team) reserveName(ctx context.Context, name string) (bool, error) {
	return mutate(ctx, t, func(o *orchestrator) (bool, error) {
		if o.reserved[name] || name == o.self.Name() {
			return false, nil
		}
		for _, a := range o.members {
			if a.Name() == name {
				return false, nil
			}
		}
		o.reserved[name] = true
		return true, nil
	})
}

// releaseName gives back a name reserved for a member that was not created.
func (t *Team) releaseName(ctx context.Context, name string) error {
	return t.live(ctx, func(o *orchestrator) { delete(o.reserved, name) })
}

// Hire creates a member from the catalog's card for role, as a child of
// the orchestrator: a new actor of the card's kind (NewActor) with a deep
// copy of its config (ConfigCopy) whose role is the card's and whose name
// is name, or the card config's name when name is empty. An unknown role is
// an error listing the roles the catalog has. It is the program building its
// team, so the card's CanBeHired is not checked (agents hiring through
// TeamTool are refused a card without it).
func (t *Team) Hire(ctx context.Context, role, name string, opts ...actor.SpawnOption) (*message.Address, error) {
	if t == nil || t.addr == nil {
		return nil, noTeam()
	}
	card, err := t.Card(ctx, role)
	if err != nil {
		return nil, err
	}
	if card == nil {
		roles, _ := t.Roles(ctx)
		return nil, fmt.Errorf("orchestrator: hire %q: no such role in the catalog (roles: %s)", role, strings.Join(roles, ", "))
	}
	a, err := card.NewActor()
	if err != nil {
		return nil, fmt.Errorf("orchestrator: hire %q: %w", role, err)
	}
	cfg, err := card.ConfigCopy()
	if err != nil {
		return nil, fmt.Errorf("orchestrator: hire %q: %w", role, err)
	}
	if c, ok := cfg.(configurer); ok {
		ac := c.ActorConfig()
		ac.Role = card.Role()
		if name != "" {
			ac.Name = name
		}
	}
	return t.Spawn(ctx, a, cfg, opts...)
}

// ChildOrCreate returns the live direct child named cfg's name, or spawns
// a as a new one. cfg is a pointer to actor.Config or to a struct
// embedding it. It looks at the orchestrator's children, not the
// roster, so a child created moments ago is found.
func (t *Team) ChildOrCreate(ctx context.Context, a actor.Actor, cfg any) (*message.Address, error) {
	if t == nil || t.addr == nil {
		return nil, noTeam()
	}
	base, ok := cfg.(configurer)
	if !ok || base.ActorConfig() == nil {
		return nil, fmt.Errorf("orchestrator: ChildOrCreate needs a pointer to a config embedding actor.Config, got %T", cfg)
	}
	name := base.ActorConfig().Name
	return proxy.Ask(ctx, t.addr, func(c *actor.Context, o *orchestrator) (*message.Address, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for _, ch := range c.Children() {
			if ch.IsAlive() && ch.Name() == name && name != "" {
				return ch, nil
			}
		}
		if o.stopping || o.finished {
			return nil, fmt.Errorf("orchestrator: create %q: team is stopping: %w", name, actor.ErrActorDead)
		}
		return c.Spawn(a, cfg)
	})
}

// configurer is implemented by a pointer to actor.Config and to every
// struct embedding it.
type configurer interface{ ActorConfig() *actor.Config }
