package orchestrator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/go-playground/validator/v10"

	"github.com/akgentic/akgentic-go/actor"
)

var (
	// ErrInvalidCard is matched (errors.Is) by every error Validate,
	// NewAgentCard and Team.Register return for a card that fails
	// validation, and by NewActor's error for a card with no agent_class.
	ErrInvalidCard = errors.New("agentcard: invalid card")

	// ErrUnknownAgentClass is matched (errors.Is) by the error NewActor
	// returns, and by Validate's error, when the card's agent_class is not a
	// kind registered with actor.RegisterKind.
	ErrUnknownAgentClass = errors.New("agentcard: unknown agent_class")
)

// AgentCard describes an agent kind for hiring and discovery: what
// the agent can do (Skills, Description), how to create it (AgentClass,
// Config) and whom it may hand work to (RoutesTo). Register cards in a
// catalog so running agents can find capabilities without hard-coding each
// other.
//
// A card has no role field: its role is its config's role (Role).
// Build cards with NewAgentCard, which validates them and gives them their
// own copy of everything; a card decoded from JSON is not validated until
// Validate (or NewAgentCard, or Team.Register) is called.
type AgentCard struct {
	// AgentClass is the name of the agent's kind, as registered with
	// actor.RegisterKind; NewActor creates an actor from it.
	AgentClass string `json:"agent_class" validate:"required"`

	// Skills lists what the agent can do; Team.CardsWithSkill searches it.
	// Defaults to empty.
	Skills []string `json:"skills"`

	// Description says what the agent does; required.
	Description string `json:"description" validate:"required"`

	// Config is the agent's configuration: a pointer to actor.Config or to
	// a struct embedding it (anything with an ActorConfig method, promoted from actor.Config). Its
	// role is the card's role and must not be empty. Nil means an empty
	// config. The config must survive a JSON round trip, as it does
	// to be spawned and restored: ConfigCopy and Clone copy it that way.
	// Validation tags (validator/v10) on the config's own fields
	// are checked by Validate.
	Config any `json:"config"`

	// RoutesTo lists the roles the agent may route work to; empty means
	// any role; CanRouteTo reads it. This package only carries
	// it: the agents enforce it: package agent refuses a request or an
	// instruction to a member of another role, and TeamTool refuses to hire
	// one.
	RoutesTo []string `json:"routes_to"`

	// Metadata is free-form data about the agent. Defaults to empty.
	// Clone copies its nested map[string]any and []any containers; other
	// values are shared.
	Metadata map[string]any `json:"metadata"`

	// CanBeHired says whether an agent may hire this role at runtime. It
	// defaults to false and survives JSON and the worker hop. This
	// package carries it; TeamTool's hire refuses a card without it.
	// Team.Hire, the program building its team, does not check it.
	CanBeHired bool `json:"can_be_hired"`
}

// cardValidate is the validator for AgentCard, naming fields by their JSON
// keys so messages read "config.role", not "Config.Role".
var cardValidate = func() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			return ""
		case "":
			return f.Name
		}
		return name
	})
	return v
}()

// NewAgentCard validates c and returns a card of its own: every
// slice, the metadata and the config are copied, so the caller's values are
// not shared, and nil Skills, RoutesTo and Metadata become empty. The error
// matches ErrInvalidCard.
func NewAgentCard(c AgentCard) (*AgentCard, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c.clone(), nil
}

// cardError is a failed validation: one problem per failing field.
type cardError struct {
	problems     []string
	unknownClass bool
}

func (e *cardError) Error() string {
	return "agentcard: " + strings.Join(e.problems, "\nagentcard: ")
}

// Is matches ErrInvalidCard, and ErrUnknownAgentClass when the agent_class
// is not registered.
func (e *cardError) Is(target error) bool {
	return target == ErrInvalidCard || (target == ErrUnknownAgentClass && e.unknownClass)
}

// Validate checks the card, reporting one line per failing
// field, each prefixed "agentcard:": description and agent_class are
// required; agent_class must name a kind registered with actor.RegisterKind;
// the config must embed actor.Config, must survive a JSON round trip
// (ConfigCopy), must pass its own validation tags, and its role, the card's
// role, must not be empty ("config.role"). The error matches ErrInvalidCard.
func (c *AgentCard) Validate() error {
	if c == nil {
		return &cardError{problems: []string{"nil card"}}
	}
	e := &cardError{}
	var verrs validator.ValidationErrors
	if err := cardValidate.Struct(c); errors.As(err, &verrs) {
		for _, fe := range verrs {
			e.problems = append(e.problems, describeCardField(fe))
		}
	} else if err != nil {
		e.problems = append(e.problems, err.Error())
	}
	if c.AgentClass != "" {
		if _, err := rt.NewKind(c.AgentClass); err != nil {
			e.unknownClass = true
			e.problems = append(e.problems, fmt.Sprintf("agent_class %q is not a registered actor kind (actor.RegisterKind)", c.AgentClass))
		}
	}
	if c.Config != nil {
		if _, ok := c.Config.(configurer); !ok {
			e.problems = append(e.problems, fmt.Sprintf("config: type %T does not embed actor.Config (use a pointer to actor.Config or to a struct embedding it)", c.Config))
		} else if _, err := c.ConfigCopy(); err != nil {
			e.problems = append(e.problems, fmt.Sprintf("config: %v", errors.Unwrap(err)))
		}
	}
	if err := cardValidate.Var(c.Role(), "required"); err != nil {
		e.problems = append(e.problems, "config.role is required: a card's role is its config's role")
	}
	if len(e.problems) == 0 {
		return nil
	}
	return e
}

// describeCardField turns a validator error into "field is required" or
// "field: value V fails rule=param", the field named by its JSON path.
func describeCardField(fe validator.FieldError) string {
	field := fe.Namespace()
	if _, rest, ok := strings.Cut(field, "."); ok {
		field = rest // drop the "AgentCard." root
	}
	if fe.Tag() == "required" {
		return field + " is required"
	}
	rule := fe.Tag()
	if fe.Param() != "" {
		rule += "=" + fe.Param()
	}
	return fmt.Sprintf("%s: value %v fails %s", field, fe.Value(), rule)
}

// Role returns the card's role: its config's role. It is derived,
// never stored, so it cannot disagree with the config. A nil card or config
// has the empty role.
func (c *AgentCard) Role() string {
	if c == nil {
		return ""
	}
	if cfg, ok := c.Config.(configurer); ok {
		if ac := cfg.ActorConfig(); ac != nil {
			return ac.Role
		}
	}
	return ""
}

// ConfigCopy returns a deep, independent copy of the card's config on each
// call: the config is round-tripped through JSON into a new value of
// the same concrete type (a pointer config gives a new pointer), so mutating
// the copy changes neither the card nor other copies. A nil config gives
// the empty config of the card's kind (see Config). Errors name the card's
// role.
func (c *AgentCard) ConfigCopy() (any, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil card", ErrInvalidCard)
	}
	if c.Config == nil {
		return c.emptyConfig(), nil
	}
	if cc, ok := c.Config.(ConfigCopier); ok {
		return cc.CopyConfig()
	}
	v := reflect.ValueOf(c.Config)
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return c.emptyConfig(), nil
	}
	data, err := json.Marshal(c.Config)
	if err != nil {
		return nil, fmt.Errorf("agentcard %q: copy config: %w", c.Role(), err)
	}
	t := v.Type()
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	p := reflect.New(t)
	if err := json.Unmarshal(data, p.Interface()); err != nil {
		return nil, fmt.Errorf("agentcard %q: copy config: %w", c.Role(), err)
	}
	if v.Kind() == reflect.Pointer {
		return p.Interface(), nil
	}
	return p.Elem().Interface(), nil
}

// ConfigCopier is implemented by configs holding what JSON does not carry
// (an API key, which is never serialized): ConfigCopy and Clone use
// CopyConfig instead of a JSON round trip, so that members hired from a
// card keep it.
type ConfigCopier interface {
	CopyConfig() (any, error)
}

// emptyConfig is what a nil config stands for: a new config of the type the
// card's kind declares, or an empty *actor.Config when the kind declares
// none or is not registered.
func (c *AgentCard) emptyConfig() any {
	cfg, err := c.decodeConfig([]byte("{}"))
	if err != nil {
		return &actor.Config{}
	}
	return cfg
}

// decodeConfig decodes a JSON config into the config type the card's kind
// declares, or into *actor.Config when the kind declares none or is not
// registered.
func (c *AgentCard) decodeConfig(data []byte) (any, error) {
	if a, err := rt.NewKind(c.AgentClass); err == nil {
		return rt.DecodeConfig(a, data)
	}
	cfg := &actor.Config{}
	if err := json.Unmarshal(data, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// clone returns a deep copy of the card: new slices (empty, never nil), a
// new metadata map (nested map[string]any and []any copied) and a config
// copied with ConfigCopy. A config that cannot be copied that way (only
// possible in a card that fails Validate) is copied shallowly. A nil card
// clones to nil.
func (c *AgentCard) clone() *AgentCard {
	if c == nil {
		return nil
	}
	out := *c
	out.Skills = append([]string{}, c.Skills...)
	out.RoutesTo = append([]string{}, c.RoutesTo...)
	out.Metadata = cardCopyMap(c.Metadata)
	if c.Config != nil {
		cfg, err := c.ConfigCopy()
		if err != nil {
			cfg = cardShallowCopy(c.Config)
		}
		out.Config = cfg
	}
	return &out
}

// cardShallowCopy returns a pointer to a copy of *v when v is a non-nil
// pointer, else v.
func cardShallowCopy(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return v
	}
	p := reflect.New(rv.Type().Elem())
	p.Elem().Set(rv.Elem())
	return p.Interface()
}

func cardCopyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cardCopyValue(v)
	}
	return out
}

func cardCopyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cardCopyMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cardCopyValue(e)
		}
		return out
	}
	return v
}

// hasSkill reports whether the card lists skill s.
func (c *AgentCard) hasSkill(s string) bool { return c != nil && slices.Contains(c.Skills, s) }

// CanRouteTo reports whether the agent may route work to role: true when
// RoutesTo lists it or is empty, meaning any role; false for a nil
// card. It is information: nothing in the runtime enforces it.
func (c *AgentCard) CanRouteTo(role string) bool {
	return c != nil && (len(c.RoutesTo) == 0 || slices.Contains(c.RoutesTo, role))
}

// NewActor returns a new actor of the card's kind, by its registered name.
// An empty AgentClass gives an error matching ErrInvalidCard; an
// unregistered one an error naming it and matching ErrUnknownAgentClass.
// Spawn it with ConfigCopy as its config.
func (c *AgentCard) NewActor() (actor.Actor, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil card", ErrInvalidCard)
	}
	if c.AgentClass == "" {
		return nil, fmt.Errorf("%w: role %q: agent_class is empty", ErrInvalidCard, c.Role())
	}
	a, err := rt.NewKind(c.AgentClass)
	if err != nil {
		return nil, fmt.Errorf("%w %q (role %q): %w", ErrUnknownAgentClass, c.AgentClass, c.Role(), err)
	}
	return a, nil
}

// cardJSON is the wire form of an AgentCard: its fields and no role.
type cardJSON struct {
	AgentClass  string          `json:"agent_class"`
	Skills      []string        `json:"skills"`
	Description string          `json:"description"`
	Config      json.RawMessage `json:"config"`
	RoutesTo    []string        `json:"routes_to"`
	Metadata    map[string]any  `json:"metadata"`
	CanBeHired  bool            `json:"can_be_hired"`
}

// MarshalJSON writes the card's fields under their JSON keys; role is not
// one of them, it travels inside config. Nil slices and metadata are
// written empty and a nil config as the empty config of the card's kind, so
// that a dump, loaded and dumped again, gives the same bytes.
func (c AgentCard) MarshalJSON() ([]byte, error) {
	cfg := c.Config
	if cfg == nil || (reflect.ValueOf(cfg).Kind() == reflect.Pointer && reflect.ValueOf(cfg).IsNil()) {
		cfg = c.emptyConfig()
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("agentcard %q: config: %w", c.Role(), err)
	}
	return json.Marshal(cardJSON{
		AgentClass:  c.AgentClass,
		Skills:      append([]string{}, c.Skills...),
		Description: c.Description,
		Config:      raw,
		RoutesTo:    append([]string{}, c.RoutesTo...),
		Metadata:    cardCopyMap(c.Metadata),
		CanBeHired:  c.CanBeHired,
	})
}

// UnmarshalJSON reads a card written by MarshalJSON or by akgentic-core.
// Unknown keys, such as a legacy top-level "role", are ignored.
// The config object is decoded into the config type the card's kind
// declares when agent_class is registered, else into *actor.Config;
// an absent or null config becomes that type's empty value. Missing slices
// and metadata become empty. The card is not validated: an unregistered
// agent_class is reported by Validate.
func (c *AgentCard) UnmarshalJSON(data []byte) error {
	var w cardJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("agentcard: %w", err)
	}
	out := AgentCard{
		AgentClass:  w.AgentClass,
		Skills:      append([]string{}, w.Skills...),
		Description: w.Description,
		RoutesTo:    append([]string{}, w.RoutesTo...),
		Metadata:    w.Metadata,
		CanBeHired:  w.CanBeHired,
	}
	if out.Metadata == nil {
		out.Metadata = map[string]any{}
	}
	raw := bytes.TrimSpace(w.Config)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		out.Config = out.emptyConfig()
	} else {
		if raw[0] != '{' {
			return fmt.Errorf("agentcard: config must be a JSON object, got %s", raw)
		}
		cfg, err := out.decodeConfig(raw)
		if err != nil {
			return fmt.Errorf("agentcard: config: %w", err)
		}
		out.Config = cfg
	}
	*c = out
	return nil
}
