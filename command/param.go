package command

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// parameter is one declared parameter of a command, whatever its type: a
// [*Param] made by [NewParam] or [Enum].
type parameter interface {
	info() *paramInfo
	// fromText coerces the text form of an argument (Dispatch).
	fromText(s string) (any, error)
	// fromValue checks a native Go value (Call).
	fromValue(v any) (any, error)
	// defaultValue is the value an unbound parameter gets.
	defaultValue() any
	// jsonDefault is the default as descriptors and /help report it.
	jsonDefault() any
	// validate reports a declaration mistake.
	validate() error
}

// paramInfo is the part of a parameter declaration that does not depend on
// its Go type.
type paramInfo struct {
	name        string
	description string
	jsonType    string   // string, integer, number, boolean or array
	kind        string   // the type as /help names it
	goType      string   // for error messages on the typed surface
	required    bool     // false once Default or Optional was called
	hasDefault  bool     // Default was called
	enum        []string // allowed values of an Enum
}

// Param is a declared parameter whose values have the Go type T. It is both
// the declaration passed to [New] and the handle a handler reads its value
// through ([Param.Get], [Param.Lookup]). Declare a parameter fully (Default,
// Optional) before passing it to New, and do not change it afterwards.
type Param[T any] struct {
	paramInfo
	def   T
	parse func(string) (T, error)
	check func(T) error // extra rule both surfaces apply (Enum membership); may be nil
}

func newParam[T any](name, description, jsonType, kind string, parse func(string) (T, error)) *Param[T] {
	var zero T
	return &Param[T]{
		paramInfo: paramInfo{
			name:        name,
			description: description,
			jsonType:    jsonType,
			kind:        kind,
			goType:      fmt.Sprintf("%T", zero),
			required:    true,
		},
		parse: parse,
	}
}

// NewParam declares a required parameter whose values have the Go type T.
// The text form of an argument is coerced by type:
//
//   - string: taken as is;
//   - int: written in decimal;
//   - float64: a number; NaN and infinities are refused;
//   - bool, in any case: true/false, 1/0, yes/no, on/off, t/f, y/n;
//   - time.Duration: Go syntax ("90s", "1m30s"); a bare number is a count
//     of seconds. Descriptors report it as a string;
//   - []string: comma-separated ("a, b,c": items are trimmed, empty items
//     dropped) or, when it starts with "[", a JSON array of strings.
//
// [Param.Default] and [Param.Optional] make it optional; [Enum] declares a
// string parameter restricted to a fixed set of values.
func NewParam[T string | int | float64 | bool | time.Duration | []string](name, description string) *Param[T] {
	var p any
	switch any(*new(T)).(type) {
	case string:
		p = newParam(name, description, "string", "string", func(s string) (string, error) { return s, nil })
	case int:
		p = newParam(name, description, "integer", "integer", parseInt)
	case float64:
		p = newParam(name, description, "number", "number", parseFloat)
	case bool:
		p = newParam(name, description, "boolean", "boolean", parseBool)
	case time.Duration:
		p = newParam(name, description, "string", "duration", parseDuration)
	case []string:
		p = newParam(name, description, "array", "list of strings", parseStrings)
	}
	return p.(*Param[T])
}

// Enum declares a required string parameter that must be one of values
// (compared exactly).
func Enum(name, description string, values ...string) *Param[string] {
	p := NewParam[string](name, description)
	p.enum = slices.Clone(values)
	p.kind = "one of " + strings.Join(p.enum, "|")
	p.check = func(s string) error {
		if !slices.Contains(p.enum, s) {
			return fmt.Errorf("%q is not one of: %s", s, strings.Join(p.enum, ", "))
		}
		return nil
	}
	return p
}

// Default makes the parameter optional: when no argument binds it, the
// handler sees v. It returns p.
func (p *Param[T]) Default(v T) *Param[T] {
	p.required, p.hasDefault, p.def = false, true, v
	return p
}

// Optional makes the parameter optional with no default: when no argument
// binds it, [Param.Lookup] reports false and [Param.Get] returns the zero
// value. It returns p.
func (p *Param[T]) Optional() *Param[T] {
	var zero T
	p.required, p.hasDefault, p.def = false, false, zero
	return p
}

// Get returns the parameter's value in a handler's arguments: the bound
// argument, else the default (or the zero value of an Optional parameter).
// It panics if p is not one of the command's declared parameters; the
// registry recovers that panic into the command's failure.
func (p *Param[T]) Get(in Args) T {
	v, _ := p.Lookup(in)
	return v
}

// Lookup is like [Param.Get] and also reports whether an argument bound the
// parameter (false when the value is a default).
func (p *Param[T]) Lookup(in Args) (T, bool) {
	for i, q := range in.params {
		if q == parameter(p) {
			v, _ := in.values[i].(T) // nil for an unbound Optional parameter
			return v, in.given[i]
		}
	}
	panic(fmt.Sprintf("command: parameter %q is not declared by this command", p.name))
}

func (p *Param[T]) info() *paramInfo { return &p.paramInfo }

func (p *Param[T]) fromText(s string) (any, error) {
	v, err := p.parse(s)
	if err == nil && p.check != nil {
		err = p.check(v)
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

func (p *Param[T]) fromValue(x any) (any, error) {
	v, ok := x.(T)
	if !ok {
		return nil, fmt.Errorf("want %s, got %T", p.goType, x)
	}
	if p.check != nil {
		if err := p.check(v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func (p *Param[T]) defaultValue() any {
	if !p.hasDefault {
		return nil
	}
	if list, ok := any(p.def).([]string); ok {
		return slices.Clone(list) // a handler may change its copy
	}
	return p.def
}

func (p *Param[T]) validate() error {
	if !validName(p.name) {
		return fmt.Errorf("parameter name %q is not a name (letters, digits, _ and -)", p.name)
	}
	if p.parse == nil {
		return fmt.Errorf("parameter %s was not made by a constructor such as command.NewParam", p.name)
	}
	if p.check != nil && len(p.enum) == 0 {
		return fmt.Errorf("parameter %s: Enum has no values", p.name)
	}
	if p.hasDefault && p.check != nil {
		if err := p.check(p.def); err != nil {
			return fmt.Errorf("parameter %s: default: %w", p.name, err)
		}
	}
	return nil
}

// jsonDefault is the default as it appears in descriptors: durations as Go
// duration text, everything else as is.
func (p *Param[T]) jsonDefault() any {
	v := p.defaultValue()
	if d, ok := v.(time.Duration); ok {
		return d.String()
	}
	return v
}

// validName reports whether s is usable as a command or parameter name:
// non-empty, made of ASCII letters, digits, '_' and '-'.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func parseInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%q is out of range for an integer", s)
	}
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	return n, nil
}

func parseFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a finite number", s)
	}
	return f, nil
}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "true", "1", "yes", "on", "t", "y":
		return true, nil
	case "false", "0", "no", "off", "f", "n":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean (use true/false, yes/no, on/off or 1/0)", s)
}

func parseDuration(s string) (time.Duration, error) {
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(secs) || math.Abs(secs) > math.MaxInt64/float64(time.Second) {
			return 0, fmt.Errorf("%q is out of range for a duration", s)
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (e.g. 90s, 1m30s)", s)
	}
	return d, nil
}

func parseStrings(s string) ([]string, error) {
	if strings.HasPrefix(s, "[") {
		var list []string
		if err := json.Unmarshal([]byte(s), &list); err != nil {
			return nil, fmt.Errorf("%q is not a JSON array of strings", s)
		}
		return list, nil
	}
	list := []string{}
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			list = append(list, item)
		}
	}
	return list, nil
}
