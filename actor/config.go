package actor

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/google/uuid"
)

// Config is the configuration every actor has: its name, role and
// optional squad. Extend it by embedding:
//
//	type WorkerConfig struct {
//		actor.Config
//		MaxRetries int `json:"max_retries"`
//	}
//
// The runtime copies the config it is given at spawn (the caller's value is
// never changed) and fills the defaults into the copy: an empty Name becomes
// a unique name, an empty Role the actor's type name.
type Config struct {
	Name    string    `json:"name"`
	Role    string    `json:"role"`
	SquadID uuid.UUID `json:"squad_id,omitzero"`
	// Tool marks the actor as a tool of its team (a planning board, say)
	// rather than a member that does work: its parent stops it after its
	// other children, and a restore recreates it before them.
	Tool bool `json:"tool,omitempty"`
}

// ActorConfig returns c; promoted to every config that embeds Config, it is
// how the runtime finds the common fields.
func (c *Config) ActorConfig() *Config { return c }

// configurer is implemented by *Config and by pointers to every struct that
// embeds it.
type configurer interface {
	ActorConfig() *Config
}

// copyConfig returns a pointer to a shallow copy of cfg (a value or a
// pointer to a struct embedding Config), never cfg itself.
func copyConfig(cfg any) (any, *Config, error) {
	if cfg == nil {
		c := &Config{}
		return c, c, nil
	}
	v := reflect.ValueOf(cfg)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			c := &Config{}
			return c, c, nil
		}
		v = v.Elem()
	}
	p := reflect.New(v.Type())
	p.Elem().Set(v)
	ptr := p.Interface()
	c, ok := ptr.(configurer)
	if !ok {
		return nil, nil, fmt.Errorf("actor: config type %s does not embed actor.Config", v.Type())
	}
	return ptr, c.ActorConfig(), nil
}

// kinds is the registry of actor kinds: name -> factory, so that a restored
// team can recreate its actors.
var kinds = struct {
	sync.RWMutex
	byName map[string]func() Actor
	byType map[reflect.Type]string
}{byName: map[string]func() Actor{}, byType: map[reflect.Type]string{}}

// RegisterKind registers a factory for an actor kind under name. The name is
// recorded in the actor's address (ActorType) and in serialized addresses,
// and a restore recreates the actor from it. Registering a name twice for a
// different type panics (a programming error caught at init).
func RegisterKind(name string, factory func() Actor) {
	if name == "" || factory == nil {
		panic("actor: RegisterKind needs a name and a factory")
	}
	t := reflect.TypeOf(factory())
	kinds.Lock()
	defer kinds.Unlock()
	if old, ok := kinds.byType[t]; ok && old != name {
		panic(fmt.Sprintf("actor: %s already registered as kind %q", t, old))
	}
	if f, ok := kinds.byName[name]; ok && reflect.TypeOf(f()) != t {
		panic(fmt.Sprintf("actor: kind %q already registered for another type", name))
	}
	kinds.byName[name] = factory
	kinds.byType[t] = name
}

// newKind returns a new actor of the kind registered under name.
func newKind(name string) (Actor, error) {
	kinds.RLock()
	f, ok := kinds.byName[name]
	kinds.RUnlock()
	if !ok {
		return nil, fmt.Errorf("actor: kind %q is not registered (actor.RegisterKind)", name)
	}
	return f(), nil
}

// kindOf returns the registered kind name of a, or its Go type name when it
// is not registered.
func kindOf(a Actor) string {
	t := reflect.TypeOf(a)
	kinds.RLock()
	name, ok := kinds.byType[t]
	kinds.RUnlock()
	if ok {
		return name
	}
	return typeName(a)
}

// configFactory is implemented by actors that declare a config type (those
// embedding Agent).
type configFactory interface {
	newConfig() any
}

// decodeConfig decodes a JSON config for actor a: into a's declared config
// type when a embeds Agent, else into Config. Restore uses it to rebuild the
// config recorded in a StartMessage.
func decodeConfig(a Actor, data []byte) (any, error) {
	var ptr any = &Config{}
	if f, ok := a.(configFactory); ok {
		ptr = f.newConfig()
	}
	if err := json.Unmarshal(data, ptr); err != nil {
		return nil, fmt.Errorf("actor: decode config for %s: %w", kindOf(a), err)
	}
	return ptr, nil
}
