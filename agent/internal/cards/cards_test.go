package cards_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/akgentic/akgentic-go/agent/internal/cards"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/command"
	"github.com/akgentic/akgentic-go/message"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is a card with a kind, dependencies and fixed capabilities.
type fake struct {
	K    string   `json:"k"`
	Deps []string `json:"deps,omitempty"`
	Tool string   `json:"tool,omitempty"`
	Cmd  string   `json:"cmd,omitempty"`
	Fail bool     `json:"fail,omitempty"`
	// Hire and Media make the card provide the typed capabilities.
	Hire  bool `json:"hire,omitempty"`
	Media bool `json:"media,omitempty"`
	log   *[]string
}

func (f *fake) Kind() string        { return f.K }
func (f *fake) DependsOn() []string { return f.Deps }
func (f *fake) Attach(_ context.Context, o *tool.Owner) (tool.Capabilities, error) {
	if f.log != nil {
		*f.log = append(*f.log, f.K)
	}
	if f.Fail {
		return tool.Capabilities{}, errors.New("boom")
	}
	var caps tool.Capabilities
	if f.Tool != "" {
		caps.Tools = append(caps.Tools, &llm.Tool{Name: f.Tool})
	}
	if f.Cmd != "" {
		caps.Commands = append(caps.Commands, command.New(f.Cmd, "a command",
			func(context.Context, command.Args) (string, error) { return "ok", nil }))
	}
	caps.SystemPrompts = append(caps.SystemPrompts, func(context.Context) string { return f.K })
	if f.Hire {
		caps.Hire = func(_ context.Context, role string) (*message.Address, error) {
			return message.NewSnapshotAddress(message.Identity{Name: f.K + ":" + role}), nil
		}
	}
	if f.Media {
		caps.ExpandMedia = func(_ context.Context, prompt string) ([]llm.Part, error) {
			return []llm.Part{llm.TextPart(f.K + ":" + prompt)}, nil
		}
	}
	return caps, nil
}

func kinds(cs []tool.Card) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Kind())
	}
	return strings.Join(out, ",")
}

// Cards attach after what they depend on, otherwise in order; missing
// dependencies and cycles are errors before anything attaches.
func TestOrderPutsDependenciesFirst(t *testing.T) {
	got, err := cards.Order([]tool.Card{&fake{K: "C", Deps: []string{"B"}}, &fake{K: "A"}, &fake{K: "B", Deps: []string{"A"}}})
	if err != nil || kinds(got) != "A,B,C" {
		t.Fatalf("order %s, %v", kinds(got), err)
	}
	if _, err := cards.Order([]tool.Card{&fake{K: "A", Deps: []string{"Z"}}}); !errors.Is(err, cards.ErrDependency) || !strings.Contains(err.Error(), "Z") {
		t.Fatalf("missing dependency: %v", err)
	}
	_, err = cards.Order([]tool.Card{&fake{K: "A", Deps: []string{"B"}}, &fake{K: "B", Deps: []string{"A"}}})
	if !errors.Is(err, cards.ErrDependency) || !strings.Contains(err.Error(), "cycle among A, B") {
		t.Fatalf("cycle: %v", err)
	}
}

// Attach aggregates in dependency order, registers commands under the
// card's kind, and rejects duplicate tools and commands.
func TestAttachAggregatesInDependencyOrder(t *testing.T) {
	var log []string
	reg := command.NewRegistry()
	o := &tool.Owner{Registry: reg}
	caps, err := cards.Attach(context.Background(), o, []tool.Card{
		&fake{K: "B", Deps: []string{"A"}, Tool: "t2", Cmd: "c2", log: &log},
		&fake{K: "A", Tool: "t1", Cmd: "c1", log: &log},
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(log, ",") != "A,B" || len(caps.Tools) != 2 || caps.Tools[0].Name != "t1" || len(caps.SystemPrompts) != 2 {
		t.Fatalf("attach order %v, caps %+v", log, caps)
	}
	if !reg.Has("c1") || !reg.Has("c2") {
		t.Fatal("commands not registered")
	}
	for _, d := range reg.Descriptors() {
		if d.Name == "c1" && d.ToolCard != "A" {
			t.Fatalf("c1 owner %q", d.ToolCard)
		}
	}
	if _, err := cards.Attach(context.Background(), &tool.Owner{}, []tool.Card{&fake{K: "A", Tool: "t"}, &fake{K: "B", Tool: "t"}}); err == nil || !strings.Contains(err.Error(), `"t"`) {
		t.Fatalf("duplicate tool: %v", err)
	}
	if _, err := cards.Attach(context.Background(), &tool.Owner{Registry: command.NewRegistry()}, []tool.Card{&fake{K: "A", Cmd: "c"}, &fake{K: "B", Cmd: "c"}}); err == nil {
		t.Fatal("duplicate command accepted")
	}
	if _, err := cards.Attach(context.Background(), &tool.Owner{}, []tool.Card{&fake{K: "A", Fail: true}}); err == nil || !strings.Contains(err.Error(), "attach A: boom") {
		t.Fatalf("failing card: %v", err)
	}
}

// The typed capabilities the agent calls itself (a hire, the media
// expansion) are collected from whichever card provides them; two cards
// providing one is an error naming both, and releases what was attached.
func TestAttachTypedCapabilities(t *testing.T) {
	ctx := context.Background()
	caps, err := cards.Attach(ctx, &tool.Owner{}, []tool.Card{&fake{K: "A"}, &fake{K: "T", Hire: true}, &fake{K: "W", Media: true}})
	if err != nil {
		t.Fatal(err)
	}
	if caps.Hire == nil || caps.ExpandMedia == nil {
		t.Fatalf("typed capabilities not collected: hire %v, media %v", caps.Hire != nil, caps.ExpandMedia != nil)
	}
	if a, err := caps.Hire(ctx, "Dev"); err != nil || a.Name() != "T:Dev" {
		t.Fatalf("hire = %v, %v", a, err)
	}
	if parts, err := caps.ExpandMedia(ctx, "p"); err != nil || len(parts) != 1 || parts[0].Text != "W:p" {
		t.Fatalf("expand = %v, %v", parts, err)
	}
	none, err := cards.Attach(ctx, &tool.Owner{}, []tool.Card{&fake{K: "A"}})
	if err != nil || none.Hire != nil || none.ExpandMedia != nil {
		t.Fatalf("a card without them: %v, hire %v, media %v", err, none.Hire != nil, none.ExpandMedia != nil)
	}
	for _, dup := range [][]tool.Card{
		{&fake{K: "T", Hire: true}, &fake{K: "U", Hire: true}},
		{&fake{K: "T", Media: true}, &fake{K: "U", Media: true}},
	} {
		if _, err := cards.Attach(ctx, &tool.Owner{}, dup); err == nil || !strings.Contains(err.Error(), "T") || !strings.Contains(err.Error(), "U") {
			t.Fatalf("a capability of two cards: %v, want an error naming both", err)
		}
	}
}

// closer is a card whose Close is counted.
type closer struct {
	fake
	closed *[]string
}

func (c *closer) Attach(ctx context.Context, o *tool.Owner) (tool.Capabilities, error) {
	caps, err := c.fake.Attach(ctx, o)
	caps.Close = func() error {
		*c.closed = append(*c.closed, c.K)
		if c.Fail {
			return errors.New("close " + c.K)
		}
		return nil
	}
	return caps, err
}

// Attach gathers every card's Close into one.
func TestAttachClose(t *testing.T) {
	var closed []string
	caps, err := cards.Attach(context.Background(), &tool.Owner{}, []tool.Card{
		&closer{fake: fake{K: "A"}, closed: &closed},
		&fake{K: "B"},
		&closer{fake: fake{K: "C"}, closed: &closed},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := caps.Close(); err != nil || strings.Join(closed, ",") != "C,A" {
		t.Fatalf("closed %v, %v", closed, err)
	}
}

func TestOrderNilCard(t *testing.T) {
	if _, err := cards.Order([]tool.Card{&fake{K: "A"}, nil}); err == nil || !strings.Contains(err.Error(), "card 1 is nil") {
		t.Fatalf("nil card: %v", err)
	}
}

type closingCard struct {
	kind   string
	fail   bool
	closed *int
}

func (c *closingCard) Kind() string        { return c.kind }
func (c *closingCard) DependsOn() []string { return nil }
func (c *closingCard) Attach(context.Context, *tool.Owner) (tool.Capabilities, error) {
	if c.fail {
		return tool.Capabilities{}, errors.New("boom")
	}
	return tool.Capabilities{Close: func() error { *c.closed++; return nil }}, nil
}

// When a card fails to attach, the cards attached before it are closed.
func TestAttachFailureClosesEarlierCards(t *testing.T) {
	closed := 0
	caps, err := cards.Attach(context.Background(), &tool.Owner{}, []tool.Card{
		&closingCard{kind: "A", closed: &closed},
		&closingCard{kind: "B", fail: true},
	})
	if err == nil {
		t.Fatal("want error")
	}
	if caps.Close != nil || closed != 1 {
		t.Fatalf("card A closed %d times (want 1), caps.Close set: %v", closed, caps.Close != nil)
	}
}
