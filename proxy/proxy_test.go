package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/actor/actortest"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type account struct {
	actor.Base
	balance int
}

func (a *account) Receive(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }

func (a *account) Deposit(n int) int { a.balance += n; return a.balance }

type other struct{ actor.Base }

func (*other) Receive(*actor.Context, any) (any, error) { return nil, nil }

// Typed ask and tell run on the actor's goroutine.
func TestAskAndTell(t *testing.T) {
	_, rec, root := actortest.Team(t)
	team := orchestrator.Of(root)
	addr := actortest.Spawn(t, root, &account{}, actor.Config{Name: "acct"})
	// Telemetry reaches the recorder on the orchestrator's goroutine: Sync
	// before counting.
	if err := team.Sync(actortest.Context(t)); err != nil {
		t.Fatal(err)
	}
	before := len(rec.Records())
	got, err := proxy.Ask(actortest.Context(t), addr, func(_ *actor.Context, a *account) (int, error) { return a.Deposit(10), nil })
	if err != nil || got != 10 {
		t.Fatalf("ask = %d, %v", got, err)
	}
	if err := proxy.Tell(addr, func(_ *actor.Context, a *account) error { a.Deposit(5); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := proxy.Do(actortest.Context(t), addr, func(c *actor.Context, a *account) error {
		if a.balance != 15 {
			return fmt.Errorf("balance %d", a.balance)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Proxy calls are not turns.
	if err := team.Sync(actortest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if after := rec.Records(); len(after) != before {
		t.Fatalf("proxy calls emitted telemetry: %s", actortest.Describe(after[before:]))
	}
}

// A wrong target type is an error naming both types; a handler error
// and a panic come back to the asker.
func TestAskErrors(t *testing.T) {
	sys, _, _ := actortest.Team(t)
	addr, _ := sys.Spawn(&other{}, actor.Config{Name: "o"})
	_, err := proxy.Ask(actortest.Context(t), addr, func(_ *actor.Context, a *account) (int, error) { return 0, nil })
	var te *proxy.TypeError
	if !errors.As(err, &te) || te.Want != "*proxy_test.account" || te.Got != "*proxy_test.other" {
		t.Fatalf("type error %v", err)
	}
	acct, _ := sys.Spawn(&account{}, nil)
	_, err = proxy.Ask(actortest.Context(t), acct, func(_ *actor.Context, a *account) (int, error) { return 0, errors.New("nope") })
	if err == nil || err.Error() != "nope" {
		t.Fatalf("handler error %v", err)
	}
	_, err = proxy.Ask(actortest.Context(t), acct, func(_ *actor.Context, a *account) (int, error) { panic("boom") })
	var pe *actor.PanicError
	if !errors.As(err, &pe) || pe.Value != "boom" {
		t.Fatalf("panic %v", err)
	}
	// The actor survives.
	if v, err := proxy.Ask(actortest.Context(t), acct, func(_ *actor.Context, a *account) (int, error) { return a.Deposit(1), nil }); err != nil || v != 1 {
		t.Fatalf("after panic: %v %v", v, err)
	}
	// A dead actor.
	if err := sys.Stop(actortest.Context(t), acct); err != nil {
		t.Fatal(err)
	}
	if err := proxy.Tell(acct, func(*actor.Context, *account) error { return nil }); !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("tell to dead: %v", err)
	}
	if _, err := proxy.Ask(actortest.Context(t), acct, func(*actor.Context, *account) (int, error) { return 0, nil }); !errors.Is(err, actor.ErrActorDead) {
		t.Fatalf("ask to dead: %v", err)
	}
}

// A failing proxy tell is logged at error level, never lost silently.
func TestTellFailureIsLogged(t *testing.T) {
	logs := actortest.NewLogCapture(t)
	sys := actor.NewSystem(actor.SystemConfig{Logger: logs.Logger()})
	defer actortest.Shutdown(t, sys)
	addr, _ := sys.Spawn(&other{}, nil)
	_ = proxy.Tell(addr, func(*actor.Context, *account) error { return nil })
	_ = proxy.Tell(addr, func(*actor.Context, *other) error { return errors.New("lost?") })
	if _, err := proxy.Ask(actortest.Context(t), addr, func(*actor.Context, *other) (int, error) { return 0, nil }); err != nil {
		t.Fatal(err)
	}
	if n := logs.Count(slog.LevelError, "proxy tell failed"); n != 2 || !strings.Contains(logs.Text(), "lost?") {
		t.Fatalf("logs:\n%s", logs.Text())
	}
}

// An ask past its deadline returns a timeout naming the target.
func TestAskTimeout(t *testing.T) {
	sys, _, _ := actortest.Team(t)
	release := make(chan struct{})
	addr, _ := sys.Spawn(&other{}, actor.Config{Name: "busy"})
	_ = proxy.Tell(addr, func(*actor.Context, *other) error { <-release; return nil })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := proxy.Ask(ctx, addr, func(*actor.Context, *other) (int, error) { return 1, nil })
	close(release)
	if !errors.Is(err, actor.ErrTimeout) || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("timeout: %v", err)
	}
}

func ExampleAsk() {
	sys := actor.NewSystem(actor.SystemConfig{})
	defer sys.Shutdown(context.Background())
	addr, _ := sys.Spawn(&account{}, actor.Config{Name: "acct"})
	balance, err := proxy.Ask(context.Background(), addr, func(_ *actor.Context, a *account) (int, error) {
		return a.Deposit(42), nil
	})
	fmt.Println(balance, err)
	// Output: 42 <nil>
}
