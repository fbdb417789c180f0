package orchestrator

import (
	"testing"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/internal/telemetry"
	"github.com/akgentic/akgentic-go/message"
)

// Every record kind the runtime knows has its entry in the kinds table, and
// the entry agrees with itself: the message it builds is of its type, has
// its name, and maps back to its kind.
func TestKindTableCoversEveryKind(t *testing.T) {
	turn := message.NewUserMessage("hi")
	n := 0
	for k := telemetry.Start; k.String() != "Kind(?)"; k++ {
		n++
		if int(k) >= len(kinds) || kinds[k].build == nil {
			t.Fatalf("kind %v has no entry in the kinds table", k)
		}
		r := telemetry.Record{Kind: k, Message: turn}
		for _, sl := range []*slabs{nil, {}} {
			m := toMessage(&r, uuid.New(), sl)
			if got := kindOf(m); got != k {
				t.Errorf("kind %v builds a %T, which maps back to kind %v", k, m, got)
			}
			if got, want := kindFor(k).name, message.TypeName(m); got != want {
				t.Errorf("kind %v is named %q, its message %q", k, got, want)
			}
		}
	}
	if n != len(kinds)-1 {
		t.Errorf("the kinds table has %d entries, the runtime %d kinds", len(kinds)-1, n)
	}
	if got := kindOf(turn); got != 0 {
		t.Errorf("a UserMessage maps to kind %v, want none", got)
	}
}
