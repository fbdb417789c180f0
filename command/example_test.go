package command_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/akgentic/akgentic-go/command"
)

// Address stands in for the address a real hire returns.
type Address struct{ Role, Name string }

func (a Address) String() string { return "<ActorAddress " + a.Role + " " + a.Name + ">" }

// teamCommands declares hire_member once; the declaration drives parsing,
// coercion, /help and descriptors, and the handler reads typed values back.
func teamCommands() []*command.Command {
	role := command.NewParam[string]("role", "Role to hire, e.g. Developer")
	name := command.NewParam[string]("name", "Name for the new member, e.g. @Ada").Optional()
	hire := command.New("hire_member", "Hire a new team member by role.",
		func(_ context.Context, in command.Args) (Address, error) {
			n, ok := name.Lookup(in)
			if !ok {
				n = "@" + role.Get(in) + "101"
			}
			return Address{Role: role.Get(in), Name: n}, nil
		}, role, name)
	return []*command.Command{hire}
}

// A person's text goes through Dispatch; an unknown command is left for the
// model; a failure of a known command is a reply, not an error.
func Example() {
	reg := command.NewRegistry()
	if err := reg.Register("TeamTool", teamCommands()...); err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, text := range []string{
		"/hire_member Developer name=@Ada",
		`/hire_member QA "Alice Smith"`,
		"/hire_member",
		"/deploy now",
	} {
		reply, err := reg.Dispatch(ctx, text)
		if errors.Is(err, command.ErrNotRecognized) {
			fmt.Printf("%s -> not a command, give it to the model\n", text)
			continue
		}
		fmt.Printf("%s -> %s\n", text, reply)
	}
	// Output:
	// /hire_member Developer name=@Ada -> <ActorAddress Developer @Ada>
	// /hire_member QA "Alice Smith" -> <ActorAddress QA Alice Smith>
	// /hire_member -> Command 'hire_member' failed: missing required argument(s): role
	// /deploy now -> not a command, give it to the model
}

// Code reaches the same command through a typed callable that returns the
// native value.
func ExampleCallable() {
	reg := command.NewRegistry()
	if err := reg.Register("TeamTool", teamCommands()...); err != nil {
		panic(err)
	}
	hire, err := command.Callable[Address](reg, "hire_member")
	if err != nil {
		panic(err) // not registered, or it does not return an Address
	}
	addr, err := hire(context.Background(), "Developer")
	fmt.Println(addr.Name, err)
	addr, err = hire(context.Background(), "QA", command.Named("name", "@Bo"))
	fmt.Println(addr.Name, err)
	// Output:
	// @Developer101 <nil>
	// @Bo <nil>
}

// Every registry answers /help from the same declarations.
func ExampleRegistry_Dispatch_help() {
	reg := command.NewRegistry()
	if err := reg.Register("TeamTool", teamCommands()...); err != nil {
		panic(err)
	}
	reply, _ := reg.Dispatch(context.Background(), "/help hire_member")
	fmt.Println(reply)
	// Output:
	// /hire_member <role> [name]
	// Hire a new team member by role.
	// Provided by TeamTool.
	// Arguments (in this order, or by name as name=value):
	//   role (string, required): Role to hire, e.g. Developer
	//   name (string, optional): Name for the new member, e.g. @Ada
}

// Descriptors are what an agent announces at start-up.
func ExampleRegistry_Descriptors() {
	reg := command.NewRegistry()
	if err := reg.Register("TeamTool", teamCommands()...); err != nil {
		panic(err)
	}
	for _, d := range reg.Descriptors() {
		var args []string
		for _, a := range d.Args {
			args = append(args, fmt.Sprintf("%s:%s(required=%v)", a.Name, a.Type, a.Required))
		}
		fmt.Printf("%s by %s: %s\n", d.Name, d.ToolCard, strings.Join(args, " "))
	}
	// Output:
	// hire_member by TeamTool: role:string(required=true) name:string(required=false)
	// help by CommandRegistry: command:string(required=false)
}
