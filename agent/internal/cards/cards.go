// Package cards attaches an agent's tool cards: in dependency order, their
// commands registered, their capabilities aggregated. It also holds the
// agent layer's default query timeout and the roster a turn saw
// (TurnRoster: the TeamTool notes it, the agent routes by it). BaseAgent
// and the tests of the card packages use it; a card itself only sees
// package tool.
package cards

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/akgentic/akgentic-go/agent/tool"
)

// QueryTimeout bounds each question the agent layer asks on a model's
// behalf when the caller gave no deadline: a query to the team (the
// roster, the catalog, a hire or fire), a call to a tool actor (a planning
// board), a slash command, a restore's lookup. One named default, so that a
// wedged team costs the same bounded wait everywhere.
const QueryTimeout = 30 * time.Second

// ErrDependency is returned by Order for a missing dependency or a cycle.
var ErrDependency = errors.New("tool: card dependency")

// dependsOn returns the kinds c must be attached after: what its DependsOn
// method lists, when it has one (tool.Card).
func dependsOn(c tool.Card) []string {
	if d, ok := c.(interface{ DependsOn() []string }); ok {
		return d.DependsOn()
	}
	return nil
}

// Order returns the cards in dependency order: every card after the kinds
// it depends on, otherwise in the given order. A missing dependency or a
// cycle is an error naming it, before anything is attached.
func Order(cards []tool.Card) ([]tool.Card, error) {
	present := map[string]bool{}
	for i, c := range cards {
		if c == nil {
			return nil, fmt.Errorf("tool: card %d is nil", i)
		}
		present[c.Kind()] = true
	}
	for _, c := range cards {
		for _, d := range dependsOn(c) {
			if !present[d] {
				return nil, fmt.Errorf("%w: %s depends on %s, which is not configured", ErrDependency, c.Kind(), d)
			}
		}
	}
	var out []tool.Card
	placed := map[string]bool{}
	done := make([]bool, len(cards))
	for len(out) < len(cards) {
		progress := false
		for i, c := range cards {
			if done[i] {
				continue
			}
			ready := true
			for _, d := range dependsOn(c) {
				if !placed[d] {
					ready = false
					break
				}
			}
			if !ready {
				continue
			}
			// A kind is placed once all its cards are.
			out, done[i], progress = append(out, c), true, true
			placed[c.Kind()] = allPlaced(cards, done, c.Kind())
		}
		if !progress {
			var stuck []string
			for i, c := range cards {
				if !done[i] {
					stuck = append(stuck, c.Kind())
				}
			}
			sort.Strings(stuck)
			return nil, fmt.Errorf("%w: cycle among %s", ErrDependency, strings.Join(stuck, ", "))
		}
	}
	return out, nil
}

func allPlaced(cards []tool.Card, done []bool, kind string) bool {
	for i, c := range cards {
		if c.Kind() == kind && !done[i] {
			return false
		}
	}
	return true
}

// Attach orders the cards, attaches each to o in that order, registers
// their commands in o.Registry (owner label: the card's kind) and returns
// the aggregated tools, system prompts and typed capabilities, and one
// Close for all. A duplicate command or tool name, or a typed capability
// provided by two cards, is an error naming them.
func Attach(ctx context.Context, o *tool.Owner, cards []tool.Card) (tool.Capabilities, error) {
	ordered, err := Order(cards)
	if err != nil {
		return tool.Capabilities{}, err
	}
	var all tool.Capabilities
	fail := func(caps tool.Capabilities, err error) (tool.Capabilities, error) {
		// Release what was attached so far, this card included.
		for _, cl := range []func() error{caps.Close, all.Close} {
			if cl != nil {
				_ = cl()
			}
		}
		return tool.Capabilities{}, err
	}
	toolNames := map[string]string{}
	var hirer, expander string // the kinds providing Hire and ExpandMedia
	for _, c := range ordered {
		caps, err := c.Attach(ctx, o)
		if err != nil {
			return fail(caps, fmt.Errorf("tool: attach %s: %w", c.Kind(), err))
		}
		if caps.Hire != nil && hirer != "" {
			return fail(caps, fmt.Errorf("tool: hiring of %s is also provided by %s", c.Kind(), hirer))
		}
		if caps.ExpandMedia != nil && expander != "" {
			return fail(caps, fmt.Errorf("tool: media expansion of %s is also provided by %s", c.Kind(), expander))
		}
		for _, t := range caps.Tools {
			if prev, dup := toolNames[t.Name]; dup {
				return fail(caps, fmt.Errorf("tool: tool %q of %s is also provided by %s", t.Name, c.Kind(), prev))
			}
			toolNames[t.Name] = c.Kind()
		}
		if len(caps.Commands) > 0 && o.Registry != nil {
			if err := o.Registry.Register(c.Kind(), caps.Commands...); err != nil {
				return fail(caps, fmt.Errorf("tool: commands of %s: %w", c.Kind(), err))
			}
		}
		if caps.Close != nil {
			prev := all.Close
			next := caps.Close
			all.Close = func() error {
				err := next()
				if prev != nil {
					err = errors.Join(prev(), err)
				}
				return err
			}
		}
		all.Tools = append(all.Tools, caps.Tools...)
		all.SystemPrompts = append(all.SystemPrompts, caps.SystemPrompts...)
		all.Commands = append(all.Commands, caps.Commands...)
		if caps.Hire != nil {
			all.Hire, hirer = caps.Hire, c.Kind()
		}
		if caps.ExpandMedia != nil {
			all.ExpandMedia, expander = caps.ExpandMedia, c.Kind()
		}
	}
	return all, nil
}
