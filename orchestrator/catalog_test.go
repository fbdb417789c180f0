package orchestrator

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
)

// catalogCard returns a valid card for role with skills.
func catalogCard(t *testing.T, role, description string, skills ...string) *AgentCard {
	t.Helper()
	c, err := NewAgentCard(AgentCard{
		AgentClass:  "CardWorker",
		Description: description,
		Skills:      skills,
		Config:      &cardWorkerConfig{Config: actor.Config{Name: strings.ToLower(role), Role: role}, Tools: []string{"t"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func cardRoles(cards []*AgentCard) []string {
	out := []string{}
	for _, c := range cards {
		out = append(out, c.Role())
	}
	return out
}

// The zero catalog is empty and answers every query.
func TestZeroCatalogIsEmpty(t *testing.T) {
	var c catalog
	if c.Len() != 0 || len(c.Cards()) != 0 || len(c.Roles()) != 0 || len(c.Skills()) != 0 ||
		c.ByRole("R") != nil || len(c.BySkill("s")) != 0 {
		t.Fatal("zero catalog is not empty")
	}
	if c.Cards() == nil || c.Roles() == nil || c.Skills() == nil || c.BySkill("s") == nil {
		t.Fatal("zero catalog answers nil slices")
	}
	if err := c.Register(); err != nil || c.Len() != 0 {
		t.Fatalf("registering nothing: %v, len %d", err, c.Len())
	}
}

// Cards are kept in registration order; a role registered again is
// replaced in its original position.
func TestCatalogKeepsOrderAndReplacesInPlace(t *testing.T) {
	var c catalog
	if err := c.Register(catalogCard(t, "Research", "v1", "search")); err != nil {
		t.Fatal(err)
	}
	if err := c.Register(catalogCard(t, "Writer", "w", "writing"), catalogCard(t, "Editor", "e", "editing")); err != nil {
		t.Fatal(err)
	}
	if err := c.Register(catalogCard(t, "Research", "v2", "pdf")); err != nil {
		t.Fatal(err)
	}
	want := []string{"Research", "Writer", "Editor"}
	if got := c.Roles(); !reflect.DeepEqual(got, want) {
		t.Fatalf("roles %v, want %v", got, want)
	}
	if got := cardRoles(c.Cards()); !reflect.DeepEqual(got, want) {
		t.Fatalf("cards %v, want %v", got, want)
	}
	if c.Len() != 3 {
		t.Fatalf("len %d", c.Len())
	}
	if r := c.ByRole("Research"); r == nil || r.Description != "v2" || !r.hasSkill("pdf") || r.hasSkill("search") {
		t.Fatalf("overwritten card %#v", r)
	}

	// Within one call the last card for a role wins, at the first position.
	var d catalog
	if err := d.Register(catalogCard(t, "A", "a1"), catalogCard(t, "B", "b"), catalogCard(t, "A", "a2")); err != nil {
		t.Fatal(err)
	}
	if got := d.Roles(); !reflect.DeepEqual(got, []string{"A", "B"}) || d.ByRole("A").Description != "a2" {
		t.Fatalf("roles %v, A %q", got, d.ByRole("A").Description)
	}
}

// Lookups by role and by skill; skills sorted and unique.
func TestCatalogLookupsByRoleAndSkill(t *testing.T) {
	var c catalog
	err := c.Register(
		catalogCard(t, "Research", "r", "web_search", "pdf_extraction"),
		catalogCard(t, "Writer", "w", "writing", "web_search"),
		catalogCard(t, "Editor", "e", "writing"),
	)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		skill string
		want  []string
	}{
		{"web_search", []string{"Research", "Writer"}},
		{"writing", []string{"Writer", "Editor"}},
		{"pdf_extraction", []string{"Research"}},
		{"none", []string{}},
	}
	for _, tt := range tests {
		if got := cardRoles(c.BySkill(tt.skill)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("BySkill(%q) = %v, want %v", tt.skill, got, tt.want)
		}
	}
	if got, want := c.Skills(), []string{"pdf_extraction", "web_search", "writing"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("skills %v, want %v", got, want)
	}
	if r := c.ByRole("Writer"); r == nil || r.Description != "w" {
		t.Fatalf("ByRole(Writer) = %#v", r)
	}
	if r := c.ByRole("Nobody"); r != nil {
		t.Fatalf("ByRole(Nobody) = %#v", r)
	}
}

// An invalid card registers nothing, and the error names its index
// and role.
func TestCatalogRegisterIsAllOrNothing(t *testing.T) {
	var c catalog
	if err := c.Register(catalogCard(t, "Existing", "x", "old")); err != nil {
		t.Fatal(err)
	}
	noDesc := catalogCard(t, "NoDesc", "d")
	noDesc.Description = ""
	replaced := catalogCard(t, "Existing", "replaced", "new")
	tests := []struct {
		name  string
		cards []*AgentCard
		want  []string
	}{
		{"second card invalid", []*AgentCard{catalogCard(t, "Good", "g"), noDesc},
			[]string{`catalog: card 1 (role "NoDesc")`, "description is required"}},
		{"nil card", []*AgentCard{replaced, nil},
			[]string{`catalog: card 1 (role "")`, "nil card"}},
		{"two invalid cards", []*AgentCard{noDesc, {AgentClass: "Ghost", Description: "g", Config: &actor.Config{Role: "G"}}},
			[]string{`card 0 (role "NoDesc")`, `card 1 (role "G")`, `agent_class "Ghost"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Register(tt.cards...)
			if !errors.Is(err, ErrInvalidCard) {
				t.Fatalf("error %v does not match ErrInvalidCard", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if got := c.Roles(); !reflect.DeepEqual(got, []string{"Existing"}) {
				t.Fatalf("roles after a failed register: %v", got)
			}
			if c.ByRole("Existing").Description != "x" || len(c.Skills()) != 1 {
				t.Fatal("existing card changed by a failed register")
			}
		})
	}
}

// The catalog keeps its own copies and hands out copies.
func TestCatalogHandsOutCopies(t *testing.T) {
	var c catalog
	in := catalogCard(t, "Research", "r", "search")
	if err := c.Register(in); err != nil {
		t.Fatal(err)
	}
	// Changing the registered card afterwards does not reach the catalog.
	in.Skills[0] = "changed"
	in.Config.(*cardWorkerConfig).Role = "Changed"

	check := func(when string) {
		t.Helper()
		r := c.ByRole("Research")
		if r == nil || !r.hasSkill("search") || r.Config.(*cardWorkerConfig).Tools[0] != "t" || r.Description != "r" {
			t.Fatalf("%s: catalog card changed: %#v", when, r)
		}
		if !reflect.DeepEqual(c.Roles(), []string{"Research"}) {
			t.Fatalf("%s: roles %v", when, c.Roles())
		}
	}
	check("after changing the registered card")

	for _, got := range [][]*AgentCard{c.Cards(), c.BySkill("search"), {c.ByRole("Research")}} {
		got[0].Skills[0] = "mutated"
		got[0].Description = "mutated"
		cfg := got[0].Config.(*cardWorkerConfig)
		cfg.Tools[0] = "mutated"
		cfg.Role = "Mutated"
	}
	check("after mutating returned cards")

	roles := c.Roles()
	roles[0] = "mutated"
	skills := c.Skills()
	skills[0] = "mutated"
	check("after mutating returned slices")
	if got := c.Skills(); !reflect.DeepEqual(got, []string{"search"}) {
		t.Fatalf("skills %v", got)
	}
}

// Nil cards give errors, not panics, whether asked directly or registered
// with a team.
func TestNilCards(t *testing.T) {
	var card *AgentCard
	if _, err := card.NewActor(); err == nil {
		t.Error("NewActor of a nil card")
	}
	if _, err := card.ConfigCopy(); err == nil {
		t.Error("ConfigCopy of a nil card")
	}
	var c catalog
	if err := c.Register(nil); err == nil || c.Len() != 0 {
		t.Errorf("catalog.Register(nil) = %v, len %d", err, c.Len())
	}
	sys := actor.NewSystem(actor.SystemConfig{Logger: slog.New(slog.DiscardHandler)})
	defer func() { _ = sys.Shutdown(context.Background()) }()
	team, err := New(sys)
	if err != nil {
		t.Fatal(err)
	}
	if err := team.Register(t.Context(), nil); err == nil {
		t.Error("Team.Register(nil)")
	}
}
