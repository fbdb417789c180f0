package orchestrator

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// catalog is the team's directory of agent cards, keyed by card role and
// kept in registration order: "what agent kinds exist?", as opposed to
// the roster of running instances. The zero value is an empty catalog ready
// to use.
//
// The catalog keeps its own copies of the cards it is given and hands out
// copies, so no caller can change it behind its back.
//
// A catalog is not safe for concurrent use: it belongs to the orchestrator's
// goroutine, and other actors reach it by asking the orchestrator.
type catalog struct {
	order  []string              // roles in registration order
	byRole map[string]*AgentCard // the catalog's own copies
}

// Register validates cards and adds copies of them, keyed by role. A
// card whose role is already registered replaces the old card in its
// original position; within one call the last card for a role wins.
// Registration is all-or-nothing: if any card is invalid (or nil) nothing is
// registered, and the error names each invalid card's index and role and
// matches ErrInvalidCard.
func (c *catalog) Register(cards ...*AgentCard) error {
	var errs []error
	for i, card := range cards {
		if err := card.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("catalog: card %d (role %q): %w", i, card.Role(), err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if c.byRole == nil {
		c.byRole = map[string]*AgentCard{}
	}
	for _, card := range cards {
		role := card.Role()
		if _, ok := c.byRole[role]; !ok {
			c.order = append(c.order, role)
		}
		c.byRole[role] = card.clone()
	}
	return nil
}

// Cards returns copies of all cards in registration order.
func (c *catalog) Cards() []*AgentCard {
	out := make([]*AgentCard, 0, len(c.order))
	for _, role := range c.order {
		out = append(out, c.byRole[role].clone())
	}
	return out
}

// ByRole returns a copy of the card registered for role, or nil.
func (c *catalog) ByRole(role string) *AgentCard {
	return c.byRole[role].clone()
}

// BySkill returns copies of the cards listing skill, in registration order;
// empty, not nil, when none does.
func (c *catalog) BySkill(skill string) []*AgentCard {
	out := []*AgentCard{}
	for _, role := range c.order {
		if card := c.byRole[role]; card.hasSkill(skill) {
			out = append(out, card.clone())
		}
	}
	return out
}

// Roles returns the registered roles in registration order.
func (c *catalog) Roles() []string {
	return append([]string{}, c.order...)
}

// Skills returns every skill of every card, sorted and without duplicates.
func (c *catalog) Skills() []string {
	out := []string{}
	for _, card := range c.byRole {
		out = append(out, card.Skills...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Len returns the number of registered cards.
func (c *catalog) Len() int { return len(c.order) }

// clone returns a catalog no later Register can change: the final view of a
// stopped team. The cards themselves are never modified in place (Register
// replaces them), so they are shared.
func (c *catalog) clone() catalog {
	return catalog{order: slices.Clone(c.order), byRole: maps.Clone(c.byRole)}
}
