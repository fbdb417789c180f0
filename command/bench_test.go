package command

import (
	"context"
	"testing"

	"github.com/google/shlex"
)

// benchRegistry holds hire_member with a handler that does no work, so the
// benchmark measures the registry: split, classify, bind, coerce, call,
// render.
func benchRegistry(b *testing.B) *Registry {
	role := NewParam[string]("role", "Role to hire")
	name := NewParam[string]("name", "Name for the new member").Optional()
	limit := NewParam[int]("limit", "A typed parameter to coerce").Default(3)
	hire := New("hire_member", "Hire a member by role.", func(_ context.Context, in Args) (address, error) {
		n, _ := name.Lookup(in)
		return address{Role: role.Get(in), Name: n, ID: "id"}, nil
	}, role, name, limit)
	r := NewRegistry()
	r.Logger = discard
	if err := r.Register("TeamTool", hire); err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkDispatch measures one parse and one call of a slash command, next
// to the cost of shlex.Split alone on the same text and to the typed surface.
func BenchmarkDispatch(b *testing.B) {
	const text = "/hire_member Developer name=@Ada limit=5"
	r := benchRegistry(b)
	ctx := context.Background()
	b.Run("dispatch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Dispatch(ctx, text); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("not-recognized", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Dispatch(ctx, "/deploy now"); err == nil {
				b.Fatal("recognized")
			}
		}
	})
	b.Run("baseline-shlex-split", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := shlex.Split(text[1:]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("call", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Call[address](ctx, r, "hire_member", "Developer", Named("name", "@Ada"), Named("limit", 5)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
