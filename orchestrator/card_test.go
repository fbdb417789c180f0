package orchestrator

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
)

// cardWorkerConfig is a config embedding actor.Config with reference-typed
// fields, to prove copies are deep.
type cardWorkerConfig struct {
	actor.Config
	Tools  []string       `json:"tools"`
	Params map[string]int `json:"params"`
}

// cardWorker declares cardWorkerConfig as its config type.
type cardWorker struct {
	actor.Agent[cardWorkerConfig, actor.NoState]
}

func (*cardWorker) Receive(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }

// cardPlain declares the plain actor.Config.
type cardPlain struct{ actor.Base }

func (*cardPlain) Receive(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }

// cardBare declares no config type at all.
type cardBare struct{}

func (*cardBare) Receive(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }

// cardStrictConfig carries its own validation tag.
type cardStrictConfig struct {
	actor.Config
	Retries int `json:"retries" validate:"min=1"`
}

// cardFuncConfig cannot be marshalled.
type cardFuncConfig struct {
	actor.Config
	Hook func() `json:"hook"`
}

// cardOneWay marshals but does not unmarshal.
type cardOneWay struct{}

func (cardOneWay) MarshalJSON() ([]byte, error) { return []byte(`"x"`), nil }
func (*cardOneWay) UnmarshalJSON([]byte) error  { return errors.New("one way") }

type cardOneWayConfig struct {
	actor.Config
	X cardOneWay `json:"x"`
}

// cardRejectConfig refuses every JSON form, even "{}".
type cardRejectConfig struct{ actor.Config }

func (*cardRejectConfig) UnmarshalJSON([]byte) error { return errors.New("reject") }

// cardReject declares cardRejectConfig.
type cardReject struct {
	actor.Agent[cardRejectConfig, actor.NoState]
}

func (*cardReject) Receive(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }

func init() {
	actor.RegisterKind("CardReject", func() actor.Actor { return &cardReject{} })
	actor.RegisterKind("CardWorker", func() actor.Actor { return &cardWorker{} })
	actor.RegisterKind("CardPlain", func() actor.Actor { return &cardPlain{} })
	actor.RegisterKind("CardBare", func() actor.Actor { return &cardBare{} })
}

func cardWorkerCard() AgentCard {
	return AgentCard{
		AgentClass:  "CardWorker",
		Skills:      []string{"web_search", "pdf_extraction"},
		Description: "Performs web research",
		Config: &cardWorkerConfig{
			Config: actor.Config{Name: "researcher", Role: "ResearchAgent"},
			Tools:  []string{"search"},
			Params: map[string]int{"depth": 2},
		},
		RoutesTo: []string{"Writer"},
		Metadata: map[string]any{"team": "alpha", "nested": map[string]any{"list": []any{1.0, "two"}}},
	}
}

// Validation names every failing field on its own line.
func TestAgentCardValidateNamesEveryFailingField(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(c *AgentCard)
		want   []string // one substring per expected line
		isErrs []error
	}{
		{name: "valid", edit: func(*AgentCard) {}},
		{name: "plain config", edit: func(c *AgentCard) { c.Config = &actor.Config{Role: "R"} }},
		{name: "empty description", edit: func(c *AgentCard) { c.Description = "" },
			want: []string{"description is required"}},
		{name: "empty agent_class", edit: func(c *AgentCard) { c.AgentClass = "" },
			want: []string{"agent_class is required"}},
		{name: "empty config.role", edit: func(c *AgentCard) { c.Config = &actor.Config{Name: "n"} },
			want: []string{"config.role is required"}},
		{name: "nil config has no role", edit: func(c *AgentCard) { c.Config = nil },
			want: []string{"config.role is required"}},
		{name: "typed nil config has no role", edit: func(c *AgentCard) { c.Config = (*actor.Config)(nil) },
			want: []string{"config.role is required"}},
		{name: "config value, not pointer", edit: func(c *AgentCard) { c.Config = actor.Config{Role: "R"} },
			want: []string{"type actor.Config does not embed actor.Config", "config.role is required"}},
		{name: "map config", edit: func(c *AgentCard) { c.Config = map[string]any{"role": "R"} },
			want: []string{"type map[string]interface {} does not embed actor.Config", "config.role is required"}},
		{name: "unregistered agent_class", edit: func(c *AgentCard) { c.AgentClass = "NoSuchKind" },
			want:   []string{`agent_class "NoSuchKind" is not a registered actor kind`},
			isErrs: []error{ErrUnknownAgentClass}},
		{name: "config validation tags", edit: func(c *AgentCard) {
			c.Config = &cardStrictConfig{Config: actor.Config{Role: "R"}}
		}, want: []string{"config.retries: value 0 fails min=1"}},
		{name: "config not marshallable", edit: func(c *AgentCard) {
			c.Config = &cardFuncConfig{Config: actor.Config{Role: "R"}}
		}, want: []string{"config: json: unsupported type: func()"}},
		{name: "everything wrong", edit: func(c *AgentCard) { *c = AgentCard{} },
			want: []string{"agent_class is required", "description is required", "config.role is required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cardWorkerCard()
			tt.edit(&c)
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("valid card rejected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("invalid card accepted")
			}
			if !errors.Is(err, ErrInvalidCard) {
				t.Errorf("error %v does not match ErrInvalidCard", err)
			}
			for _, target := range tt.isErrs {
				if !errors.Is(err, target) {
					t.Errorf("error %v does not match %v", err, target)
				}
			}
			if errors.Is(err, ErrUnknownAgentClass) && len(tt.isErrs) == 0 {
				t.Errorf("error %v matches ErrUnknownAgentClass", err)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("got %d lines, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for i, line := range lines {
				if !strings.HasPrefix(line, "agentcard: ") || !strings.Contains(line, tt.want[i]) {
					t.Errorf("line %d = %q, want prefix agentcard: and %q", i, line, tt.want[i])
				}
			}
		})
	}
}

// A nil card is invalid, not a panic.
func TestNilAgentCardIsInvalid(t *testing.T) {
	var c *AgentCard
	if err := c.Validate(); !errors.Is(err, ErrInvalidCard) || !strings.Contains(err.Error(), "nil card") {
		t.Fatalf("nil card: %v", err)
	}
	if c.Role() != "" || c.clone() != nil {
		t.Fatal("nil card has a role or a clone")
	}
}

// NewAgentCard validates, fills defaults and shares nothing with the
// caller.
func TestNewAgentCardValidatesFillsDefaultsAndCopies(t *testing.T) {
	in := AgentCard{AgentClass: "CardPlain", Description: "d", Config: &actor.Config{Name: "n", Role: "R"}}
	c, err := NewAgentCard(in)
	if err != nil {
		t.Fatal(err)
	}
	if c.Skills == nil || c.RoutesTo == nil || c.Metadata == nil {
		t.Fatalf("defaults not filled: %#v", c)
	}
	if len(c.Skills) != 0 || len(c.RoutesTo) != 0 || len(c.Metadata) != 0 || c.CanBeHired {
		t.Fatalf("defaults not empty: %#v", c)
	}
	if c.Role() != "R" {
		t.Fatalf("role %q", c.Role())
	}
	in.Config.(*actor.Config).Role = "Changed"
	if c.Role() != "R" {
		t.Fatal("card shares the caller's config")
	}

	w := cardWorkerCard()
	c, err = NewAgentCard(w)
	if err != nil {
		t.Fatal(err)
	}
	w.Skills[0] = "changed"
	w.Metadata["nested"].(map[string]any)["list"].([]any)[0] = "changed"
	w.Config.(*cardWorkerConfig).Tools[0] = "changed"
	if c.Skills[0] != "web_search" || c.Metadata["nested"].(map[string]any)["list"].([]any)[0] != 1.0 ||
		c.Config.(*cardWorkerConfig).Tools[0] != "search" {
		t.Fatalf("card shares the caller's values: %#v", c)
	}

	if c, err := NewAgentCard(AgentCard{AgentClass: "CardPlain", Config: &actor.Config{Role: "R"}}); c != nil ||
		!errors.Is(err, ErrInvalidCard) || !strings.Contains(err.Error(), "description is required") {
		t.Fatalf("invalid card: %v %v", c, err)
	}
}

// The role is derived from the config, never stored.
func TestAgentCardRoleComesFromConfig(t *testing.T) {
	c, err := NewAgentCard(cardWorkerCard())
	if err != nil {
		t.Fatal(err)
	}
	if c.Role() != "ResearchAgent" {
		t.Fatalf("role %q", c.Role())
	}
	c.Config.(*cardWorkerConfig).Role = "Other"
	if c.Role() != "Other" {
		t.Fatalf("role %q does not follow the config", c.Role())
	}
	for _, cfg := range []any{nil, (*actor.Config)(nil), actor.Config{Role: "R"}, "x"} {
		if r := (&AgentCard{Config: cfg}).Role(); r != "" {
			t.Errorf("config %#v gives role %q", cfg, r)
		}
	}
}

// Every copy is deep and independent of the card and of each other.
func TestAgentCardConfigCopyIsDeep(t *testing.T) {
	c, err := NewAgentCard(cardWorkerCard())
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.ConfigCopy()
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.ConfigCopy()
	if err != nil {
		t.Fatal(err)
	}
	ca, ok := a.(*cardWorkerConfig)
	if !ok {
		t.Fatalf("copy has type %T", a)
	}
	if !reflect.DeepEqual(ca, c.Config) || ca == c.Config {
		t.Fatalf("copy %+v is not an equal new value", ca)
	}
	ca.Role, ca.Name = "Mutated", "m"
	ca.Tools[0] = "mutated"
	ca.Tools = append(ca.Tools, "more")
	ca.Params["depth"] = 99
	ca.Params["new"] = 1
	want := &cardWorkerConfig{
		Config: actor.Config{Name: "researcher", Role: "ResearchAgent"},
		Tools:  []string{"search"},
		Params: map[string]int{"depth": 2},
	}
	if !reflect.DeepEqual(c.Config, want) {
		t.Fatalf("card config changed: %+v", c.Config)
	}
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("other copy changed: %+v", b)
	}
	if c.Role() != "ResearchAgent" {
		t.Fatalf("card role changed to %q", c.Role())
	}
}

// The copy keeps the config's concrete type, pointer or not, and a
// nil config copies as the kind's empty config.
func TestAgentCardConfigCopyKeepsConcreteType(t *testing.T) {
	tests := []struct {
		name string
		card AgentCard
		want any
	}{
		{"value config", AgentCard{Config: actor.Config{Role: "R"}}, actor.Config{Role: "R"}},
		{"plain pointer", AgentCard{Config: &actor.Config{Role: "R"}}, &actor.Config{Role: "R"}},
		{"nil, worker kind", AgentCard{AgentClass: "CardWorker"}, &cardWorkerConfig{}},
		{"typed nil, worker kind", AgentCard{AgentClass: "CardWorker", Config: (*cardWorkerConfig)(nil)}, &cardWorkerConfig{}},
		{"nil, bare kind", AgentCard{AgentClass: "CardBare"}, &actor.Config{}},
		{"nil, unknown kind", AgentCard{AgentClass: "Nope"}, &actor.Config{}},
		{"nil, kind whose config rejects {}", AgentCard{AgentClass: "CardReject"}, &actor.Config{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.card.ConfigCopy()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("copy %#v, want %#v", got, tt.want)
			}
		})
	}
}

// A config that cannot round-trip through JSON is an error naming
// the card's role; Clone falls back to a shallow copy.
func TestAgentCardConfigCopyFailsOnConfigNotJSON(t *testing.T) {
	for _, cfg := range []configurer{
		&cardFuncConfig{Config: actor.Config{Role: "Hooked"}, Hook: func() {}},
		&cardOneWayConfig{Config: actor.Config{Role: "Hooked"}},
	} {
		c := &AgentCard{AgentClass: "CardWorker", Description: "d", Config: cfg}
		if _, err := c.ConfigCopy(); err == nil || !strings.Contains(err.Error(), `agentcard "Hooked": copy config`) {
			t.Errorf("%T: copy error %v", cfg, err)
		}
		if err := c.Validate(); !errors.Is(err, ErrInvalidCard) {
			t.Errorf("%T: validated: %v", cfg, err)
		}
		cl := c.clone()
		if cl.Config == c.Config || cl.Role() != "Hooked" || reflect.TypeOf(cl.Config) != reflect.TypeOf(cfg) {
			t.Errorf("%T: clone config %#v", cfg, cl.Config)
		}
	}
	// A non-pointer config that cannot be copied is kept as it is.
	v := cardFuncConfig{Config: actor.Config{Role: "V"}}
	if cl := (&AgentCard{Config: v}).clone(); cl.Config.(cardFuncConfig).Role != "V" {
		t.Fatalf("clone of value config %#v", cl.Config)
	}
}

// Clone is deep: slices, nested metadata and config are all new.
func TestAgentCardCloneDeep(t *testing.T) {
	c, err := NewAgentCard(cardWorkerCard())
	if err != nil {
		t.Fatal(err)
	}
	c.CanBeHired = true
	cl := c.clone()
	if !reflect.DeepEqual(cl, c) {
		t.Fatalf("clone differs:\n%#v\n%#v", cl, c)
	}
	cl.Skills[0] = "x"
	cl.RoutesTo[0] = "x"
	cl.Metadata["team"] = "x"
	cl.Metadata["nested"].(map[string]any)["list"].([]any)[1] = "x"
	cl.Config.(*cardWorkerConfig).Params["depth"] = 0
	want, _ := NewAgentCard(cardWorkerCard())
	want.CanBeHired = true
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("original changed through its clone: %#v", c)
	}
	if nc := (&AgentCard{}).clone(); nc.Config != nil || nc.Skills == nil || nc.Metadata == nil {
		t.Fatalf("clone of empty card %#v", nc)
	}
}

// Skill membership and routing, empty routes_to meaning any role.
func TestAgentCardSkillsAndEmptyRoutesToAnyRole(t *testing.T) {
	c := &AgentCard{Skills: []string{"a", "b"}, RoutesTo: []string{"Writer"}}
	open := &AgentCard{}
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"has listed skill", c.hasSkill("a"), true},
		{"lacks skill", c.hasSkill("z"), false},
		{"no skills", open.hasSkill("a"), false},
		{"routes to listed role", c.CanRouteTo("Writer"), true},
		{"does not route to unlisted role", c.CanRouteTo("Editor"), false},
		{"empty routes_to routes anywhere", open.CanRouteTo("Editor"), true},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v", tt.name, tt.got)
		}
	}
}

// The card creates its actor by kind name.
func TestAgentCardNewActorByKindName(t *testing.T) {
	c, err := NewAgentCard(cardWorkerCard())
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.NewActor()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.(*cardWorker); !ok {
		t.Fatalf("actor %T", a)
	}
	if b, _ := c.NewActor(); b == a {
		t.Fatal("NewActor returned the same actor twice")
	}

	c.AgentClass = ""
	if _, err := c.NewActor(); !errors.Is(err, ErrInvalidCard) || !strings.Contains(err.Error(), `"ResearchAgent"`) {
		t.Fatalf("empty agent_class: %v", err)
	}
	c.AgentClass = "Missing"
	_, err = c.NewActor()
	if !errors.Is(err, ErrUnknownAgentClass) || !strings.Contains(err.Error(), `"Missing"`) {
		t.Fatalf("unknown agent_class: %v", err)
	}
}

// The dump has the card's fields and no role; a dump, loaded
// and dumped again, is byte-identical.
func TestAgentCardJSONRoundTripIsByteIdentical(t *testing.T) {
	hired := cardWorkerCard()
	hired.CanBeHired = true
	plain := AgentCard{AgentClass: "CardPlain", Description: "d", Config: &actor.Config{Name: "n", Role: "R"}}
	tests := []struct {
		name string
		card AgentCard
	}{
		{"worker kind", cardWorkerCard()},
		{"hireable", hired},
		{"plain kind, nil slices", plain},
		{"nil config", AgentCard{AgentClass: "CardWorker", Description: "d"}},
		{"unknown kind", AgentCard{AgentClass: "Nope", Description: "d", Config: &actor.Config{Role: "R"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dump, err := json.Marshal(tt.card)
			if err != nil {
				t.Fatal(err)
			}
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(dump, &keys); err != nil {
				t.Fatal(err)
			}
			wantKeys := []string{"agent_class", "can_be_hired", "config", "description", "metadata", "routes_to", "skills"}
			var got []string
			for k := range keys {
				got = append(got, k)
			}
			if len(got) != len(wantKeys) {
				t.Fatalf("keys %v, want %v", got, wantKeys)
			}
			for _, k := range wantKeys {
				if _, ok := keys[k]; !ok {
					t.Fatalf("key %q missing from %s", k, dump)
				}
			}
			var loaded AgentCard
			if err := json.Unmarshal(dump, &loaded); err != nil {
				t.Fatal(err)
			}
			if loaded.CanBeHired != tt.card.CanBeHired {
				t.Fatalf("can_be_hired %v, want %v", loaded.CanBeHired, tt.card.CanBeHired)
			}
			if loaded.Role() != tt.card.Role() {
				t.Fatalf("role %q, want %q", loaded.Role(), tt.card.Role())
			}
			again, err := json.Marshal(&loaded)
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(dump) {
				t.Fatalf("dump not stable:\n%s\n%s", dump, again)
			}
		})
	}
}

// The exact wire form, role only inside config.
func TestAgentCardJSONHasRoleOnlyInConfig(t *testing.T) {
	c := AgentCard{AgentClass: "CardPlain", Description: "d", Config: &actor.Config{Name: "n", Role: "R"}}
	dump, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"agent_class":"CardPlain","skills":[],"description":"d","config":{"name":"n","role":"R"},"routes_to":[],"metadata":{},"can_be_hired":false}`
	if string(dump) != want {
		t.Fatalf("dump\n%s\nwant\n%s", dump, want)
	}
	if _, err := json.Marshal(&AgentCard{Config: &cardFuncConfig{Hook: func() {}}}); err == nil {
		t.Fatal("unmarshallable config marshalled")
	}
}

// A legacy top-level role and other unknown keys are ignored;
// the role comes from config; can_be_hired defaults to false.
func TestAgentCardJSONIgnoresLegacyRole(t *testing.T) {
	var c AgentCard
	in := `{"role":"Legacy","agent_class":"CardPlain","description":"d","config":{"name":"n","role":"FromConfig"},"extra":1}`
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	if c.Role() != "FromConfig" {
		t.Fatalf("role %q", c.Role())
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("payload without top-level role rejected: %v", err)
	}
	if c.CanBeHired || c.Skills == nil || c.RoutesTo == nil || c.Metadata == nil {
		t.Fatalf("defaults not filled: %#v", c)
	}
	dump, _ := json.Marshal(&c)
	if strings.Contains(string(dump), "Legacy") || strings.Contains(string(dump), "extra") {
		t.Fatalf("unknown keys kept: %s", dump)
	}

	// A legacy role with an empty config role is still invalid.
	var bad AgentCard
	if err := json.Unmarshal([]byte(`{"role":"Legacy","agent_class":"CardPlain","description":"d"}`), &bad); err != nil {
		t.Fatal(err)
	}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "config.role") {
		t.Fatalf("legacy role stood in for config.role: %v", err)
	}
}

// A config object is decoded into the config type the kind declares.
func TestAgentCardJSONDecodesConfigIntoKindsType(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    any
		unknown bool
	}{
		{"declared config type",
			`{"agent_class":"CardWorker","description":"d","config":{"name":"w","role":"W","tools":["t"],"params":{"k":1}}}`,
			&cardWorkerConfig{Config: actor.Config{Name: "w", Role: "W"}, Tools: []string{"t"}, Params: map[string]int{"k": 1}}, false},
		{"plain actor.Base",
			`{"agent_class":"CardPlain","description":"d","config":{"name":"p","role":"P","tools":["t"]}}`,
			&actor.Config{Name: "p", Role: "P"}, false},
		{"kind declaring no config",
			`{"agent_class":"CardBare","description":"d","config":{"name":"b","role":"B"}}`,
			&actor.Config{Name: "b", Role: "B"}, false},
		{"absent config takes the declared empty config",
			`{"agent_class":"CardWorker","description":"d"}`,
			&cardWorkerConfig{}, false},
		{"null config",
			`{"agent_class":"CardWorker","description":"d","config":null}`,
			&cardWorkerConfig{}, false},
		{"unregistered kind falls back to actor.Config",
			`{"agent_class":"Ghost","description":"d","config":{"name":"g","role":"G","tools":["t"]}}`,
			&actor.Config{Name: "g", Role: "G"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c AgentCard
			if err := json.Unmarshal([]byte(tt.in), &c); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.Config, tt.want) {
				t.Fatalf("config %#v, want %#v", c.Config, tt.want)
			}
			err := c.Validate()
			if tt.unknown {
				if !errors.Is(err, ErrUnknownAgentClass) || !strings.Contains(err.Error(), `"Ghost"`) {
					t.Fatalf("unregistered kind: %v", err)
				}
			} else if errors.Is(err, ErrUnknownAgentClass) {
				t.Fatalf("registered kind reported unknown: %v", err)
			}
		})
	}
}

// Malformed cards do not load.
func TestAgentCardJSONRefusesMalformedCards(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"config not an object", `{"agent_class":"CardWorker","config":"x"}`, "config must be a JSON object"},
		{"config field of the wrong type", `{"agent_class":"CardWorker","config":{"tools":"x"}}`, "agentcard: config:"},
		{"plain config of the wrong type", `{"agent_class":"Ghost","config":{"role":1}}`, "agentcard: config:"},
		{"not an object", `[1]`, "agentcard:"},
	}
	for _, tt := range tests {
		var c AgentCard
		if err := json.Unmarshal([]byte(tt.in), &c); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
