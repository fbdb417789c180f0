package tool_test

import (
	"context"
	"errors"
	"testing"

	"github.com/akgentic/akgentic-go/agent/tool"
)

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
	caps, err := tool.Attach(context.Background(), &tool.Owner{}, []tool.Card{
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
