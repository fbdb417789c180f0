// Package command is the slash-command registry of an agent: typed commands
// that a person reaches by typing "/name args" and that code reaches through a
// typed callable.
//
// A command declares its parameters once. That single declaration drives
// text parsing, coercion, the /help text and the [Descriptor] handed out for
// discovery; the handler reads typed values back through the same parameter
// handles:
//
//	role := command.NewParam[string]("role", "Role to hire, e.g. Developer")
//	name := command.NewParam[string]("name", "Name for the new member, e.g. @Ada").Optional()
//	hire := command.New("hire_member", "Hire a new team member by role.",
//		func(ctx context.Context, in command.Args) (Address, error) {
//			n, _ := name.Lookup(in) // "", false when no name was given
//			return team.Hire(ctx, role.Get(in), n)
//		}, role, name)
//
//	reg := command.NewRegistry()
//	err := reg.Register("TeamTool", hire)
//
// Two surfaces reach the same table:
//
//   - [Registry.Dispatch] takes the text a person typed
//     ("/hire_member Developer name=@Ada"), splits it shell-style, binds and
//     coerces the arguments, runs the handler and returns the result rendered
//     as text. A first word that names no command returns [ErrNotRecognized]
//     (the caller then hands the original text to the model). Once a command
//     is identified every failure, including a handler panic, comes back as
//     the string "Command '<name>' failed: <reason>", never as an error.
//   - [Call] and [Callable] return the command's native value (for
//     hire_member, the new member's address); failures are returned as a
//     [*Error] naming the command.
//
// # Argument rules
//
// A token is a keyword only when the text before its first "=" names a
// parameter of the command; its value is everything after that "=". Any other
// token, "x=y" included, is positional. Positionals fill the parameters in
// declaration order and may not follow a keyword. A parameter bound twice,
// too many positionals and a missing required parameter are failures. Values
// are coerced to the type declared with [NewParam]: string, int (decimal),
// float64, bool (true/false, 1/0, yes/no, on/off, t/f, y/n, any case),
// time.Duration (Go syntax such as 90s or 1m30s; a bare number means
// seconds) or []string (comma-separated, or a JSON array); an [Enum] is a
// string that must be one of a fixed set.
//
// Splitting follows POSIX shell quoting via github.com/google/shlex, except
// that a word starting with "#" is kept as an argument (shlex would read it as
// a comment), so "/search_planning #urgent" searches for "#urgent".
//
// Every registry has a built-in "help" command: "/help" lists the commands
// with their arguments and "/help name" describes one. Commands whose name
// starts with "_" are internal: callable and listed in descriptors, but left
// out of the /help list.
package command
