package actor_test

import (
	"strings"
	"testing"

	"github.com/akgentic/akgentic-go/actor"
)

type restorable struct {
	actor.Agent[counterConfig, counterState]
}

func (*restorable) Receive(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }

func init() { actor.RegisterKind("Restorable", func() actor.Actor { return &restorable{} }) }

// The kind registry: a registered kind is named in addresses,
// recreated by name, and its config decoded into its declared type.
func TestKindRegistry(t *testing.T) {
	sys, _ := newSystem(t)
	a, err := actor.NewKindForTest("Restorable")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := actor.DecodeConfigForTest(a, []byte(`{"name":"r","role":"R","max_increment":3,"prefix":"P"}`))
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.(*counterConfig)
	if c.Name != "r" || c.MaxIncrement != 3 || c.Prefix != "P" {
		t.Fatalf("decoded config %+v", c)
	}
	addr := spawn(t, sys, a, cfg)
	if addr.ActorType() != "Restorable" || actor.KindOfForTest(a) != "Restorable" || addr.Name() != "r" {
		t.Fatalf("identity %+v", addr.Identity())
	}
	if _, err := actor.NewKindForTest("Nope"); err == nil || !strings.Contains(err.Error(), `"Nope"`) {
		t.Fatalf("unknown kind: %v", err)
	}
	if _, err := actor.DecodeConfigForTest(a, []byte(`{"max_increment":"x"}`)); err == nil {
		t.Fatal("bad config decoded")
	}
	plain, err := actor.DecodeConfigForTest(noop, []byte(`{"name":"n"}`))
	if err != nil || plain.(*actor.Config).Name != "n" {
		t.Fatalf("plain config %v %v", plain, err)
	}
	if actor.KindOfForTest(noop) != "Func" {
		t.Fatalf("unregistered kind name %q", actor.KindOfForTest(noop))
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering a kind name for another type did not panic")
		}
	}()
	actor.RegisterKind("Restorable", func() actor.Actor { return &plainAgent{} })
}
