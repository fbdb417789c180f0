package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sashabaranov/go-openai/jsonschema"
)

// Tool is a function the model may call.
type Tool struct {
	// Name is the function name, [A-Za-z0-9_-]{1,64}.
	Name string
	// Description tells the model what the tool does.
	Description string
	// Parameters is the JSON Schema of the arguments object.
	Parameters *jsonschema.Definition
	// RawParameters, when set, is sent as the schema instead of Parameters,
	// byte for byte: a schema written elsewhere (an MCP server's), with
	// keywords Parameters cannot hold.
	RawParameters json.RawMessage
	// Strict is sent as the function's strict flag; [NewTool] sets it when
	// the schema allows.
	Strict bool
	// Serial forbids running this tool concurrently with the other calls of
	// the same response.
	Serial bool
	// Call runs the tool with the raw arguments JSON. A string result is
	// sent as is, anything else JSON-encoded. Return [Retry] (or wrap a
	// [*RetryError]) for a mistake the model can fix; any other error
	// aborts the run.
	Call func(ctx context.Context, args json.RawMessage) (any, error)
	// ReadOnly and Destructive are what the tool's author says of it (an
	// MCP tool's annotations; hints, not guarantees): it changes nothing
	// (ReadOnly), or it may delete or overwrite what it touches
	// (Destructive), a call a person may want to approve first. Neither is
	// set when nothing is known.
	ReadOnly, Destructive bool
}

// RetryError is a tool failure the model can fix: its text goes back to
// the model with a hint to try again.
type RetryError struct{ Message string }

// Error describes the failure.
func (e *RetryError) Error() string { return e.Message }

// Retry returns a [*RetryError] with a formatted message.
func Retry(format string, args ...any) error {
	return &RetryError{Message: fmt.Sprintf(format, args...)}
}

// NewTool declares a tool whose arguments are A, a struct: its schema comes
// from A's tags (json, description, enum; omitempty makes a field
// optional), and arguments are checked against it and against A's validate
// tags before fn runs. Bad arguments become a [*RetryError] naming what was
// wrong.
func NewTool[A any](name, description string, fn func(ctx context.Context, args A) (any, error)) (*Tool, error) {
	if !namePattern.MatchString(name) {
		return nil, fmt.Errorf("llm: tool name %q must match [A-Za-z0-9_-]{1,64}", name)
	}
	if fn == nil {
		return nil, fmt.Errorf("llm: tool %s has no function", name)
	}
	s, err := newSchema[A]()
	if err != nil {
		return nil, fmt.Errorf("llm: tool %s: %w", name, err)
	}
	return &Tool{
		Name:        name,
		Description: description,
		Parameters:  s.def,
		Strict:      s.strict,
		Call: func(ctx context.Context, raw json.RawMessage) (any, error) {
			args, err := s.parse(raw)
			if err != nil {
				var inv *invalidOutputError
				if errors.As(err, &inv) {
					return nil, &RetryError{Message: "invalid arguments: " + inv.Reason}
				}
				return nil, err
			}
			return fn(ctx, args)
		},
	}, nil
}
