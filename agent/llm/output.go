package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	openai "github.com/sashabaranov/go-openai"
	"github.com/sashabaranov/go-openai/jsonschema"
)

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Output is the structured output a run must end with: a JSON Schema made
// from T (go-openai's jsonschema tags: json, description, enum) sent as a
// strict json_schema response format, and a parser that validates the
// model's JSON against that schema and T's validate tags.
type Output[T any] struct {
	name   string
	schema schema[T]
	// format is the response format every run sends, its schema encoded
	// once here: encoding the *jsonschema.Definition by reflection on every
	// request was a tenth of an agent turn's CPU.
	format *openai.ChatCompletionResponseFormat
}

// NewOutput builds the output for T under name (the json_schema name,
// [A-Za-z0-9_-]{1,64}). T must be a struct whose schema strict mode accepts:
// no omitempty fields, no maps or interfaces.
func NewOutput[T any](name string) (*Output[T], error) {
	if !namePattern.MatchString(name) {
		return nil, fmt.Errorf("llm: output name %q must match [A-Za-z0-9_-]{1,64}", name)
	}
	s, err := newSchema[T]()
	if err != nil {
		return nil, fmt.Errorf("llm: output %s: %w", name, err)
	}
	if !s.strict {
		return nil, fmt.Errorf("llm: output %s: schema of %T is not strict-valid: %s", name, *new(T), s.whyNotStrict)
	}
	wire, err := json.Marshal(s.def)
	if err != nil {
		return nil, fmt.Errorf("llm: output %s: encoding its schema: %w", name, err)
	}
	format := &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
		JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: name, Schema: json.RawMessage(wire), Strict: true}}
	return &Output[T]{name: name, schema: s, format: format}, nil
}

// Name is the json_schema name sent on the wire.
func (o *Output[T]) Name() string { return o.name }

// Schema is the JSON Schema sent on the wire.
func (o *Output[T]) Schema() *jsonschema.Definition { return o.schema.def }

// Parse decodes and validates content, the model's final text. The error
// text says what is wrong, in words meant for the model.
func (o *Output[T]) Parse(content string) (T, error) { return o.schema.parse([]byte(content)) }

// invalidOutputError says why a model's JSON was refused; its text is fed
// back to the model.
type invalidOutputError struct{ Reason string }

// Error describes the failure.
func (e *invalidOutputError) Error() string { return e.Reason }

// schema is a JSON Schema made from T, with a parser.
type schema[T any] struct {
	def          *jsonschema.Definition
	defs         map[string]jsonschema.Definition
	strict       bool
	whyNotStrict string
	isStruct     bool
}

func newSchema[T any]() (schema[T], error) {
	var zero T
	t := reflect.TypeOf(zero)
	if t == nil {
		return schema[T]{}, errors.New("type must be a struct, not an interface")
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return schema[T]{}, fmt.Errorf("type must be a struct, got %s", t)
	}
	def, err := jsonschema.GenerateSchemaForType(zero)
	if err != nil {
		return schema[T]{}, err
	}
	if len(def.Defs) == 0 {
		def.Defs = nil
	}
	s := schema[T]{def: def, defs: map[string]jsonschema.Definition{}, isStruct: true}
	for k, v := range def.Defs {
		s.defs["#/$defs/"+k] = v
	}
	if why := checkStrict(*def, "#"); why != "" {
		s.whyNotStrict = why
	} else {
		s.strict = true
	}
	return s, nil
}

// checkStrict returns why def is not strict-valid, or "".
func checkStrict(def jsonschema.Definition, path string) string {
	if def.Nullable {
		return path + ": the nullable keyword is not accepted; use anyOf with null"
	}
	if def.Type == jsonschema.Object {
		if ap, ok := def.AdditionalProperties.(bool); !ok || ap {
			return path + ": additionalProperties must be false"
		}
		for _, k := range sortedKeys(def.Properties) {
			if !slices.Contains(def.Required, k) {
				return fmt.Sprintf("%s: property %q must be required (drop omitempty)", path, k)
			}
		}
	}
	for _, k := range sortedKeys(def.Properties) {
		if why := checkStrict(def.Properties[k], path+"/properties/"+k); why != "" {
			return why
		}
	}
	if def.Items != nil {
		if why := checkStrict(*def.Items, path+"/items"); why != "" {
			return why
		}
	}
	for i, sub := range def.AnyOf {
		if why := checkStrict(sub, fmt.Sprintf("%s/anyOf/%d", path, i)); why != "" {
			return why
		}
	}
	for _, k := range sortedKeys(def.Defs) {
		if why := checkStrict(def.Defs[k], path+"/$defs/"+k); why != "" {
			return why
		}
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// parse decodes b as T after checking it against the schema, then runs T's
// validate tags. Errors name the path of the offending value.
func (s schema[T]) parse(b []byte) (T, error) {
	var zero T
	if len(bytes.TrimSpace(b)) == 0 {
		return zero, &invalidOutputError{Reason: "the response is empty; answer with a JSON object that matches the schema"}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return zero, &invalidOutputError{Reason: "the response is not valid JSON: " + err.Error()}
	}
	if dec.More() {
		return zero, &invalidOutputError{Reason: "the response has data after the JSON value; answer with exactly one JSON object"}
	}
	if err := s.check(*s.def, doc, "$"); err != nil {
		return zero, &invalidOutputError{Reason: err.Error()}
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		return zero, &invalidOutputError{Reason: "the response does not decode: " + err.Error()}
	}
	if s.isStruct {
		if err := validate.Struct(out); err != nil {
			return zero, &invalidOutputError{Reason: "the response fails validation: " + describeValidation(err).Error()}
		}
	}
	return out, nil
}

// check validates v (decoded with UseNumber) against def.
func (s schema[T]) check(def jsonschema.Definition, v any, path string) error {
	if def.Ref != "" {
		ref, ok := s.defs[def.Ref]
		if !ok {
			return fmt.Errorf("%s: schema reference %s is unknown", path, def.Ref)
		}
		return s.check(ref, v, path)
	}
	if len(def.AnyOf) > 0 {
		for _, sub := range def.AnyOf {
			if s.check(sub, v, path) == nil {
				return nil
			}
		}
		return fmt.Errorf("%s: %s matches none of the allowed forms", path, describe(v))
	}
	if v == nil && def.Nullable {
		return nil
	}
	switch def.Type {
	case jsonschema.Object:
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: expected an object, got %s", path, describe(v))
		}
		for _, k := range def.Required {
			if _, ok := obj[k]; !ok {
				return fmt.Errorf("%s: missing required property %q", path, k)
			}
		}
		for _, k := range sortedKeys(obj) {
			sub, ok := def.Properties[k]
			if !ok {
				if ap, isBool := def.AdditionalProperties.(bool); isBool && !ap {
					return fmt.Errorf("%s: unknown property %q (allowed: %s)", path, k, strings.Join(sortedKeys(def.Properties), ", "))
				}
				continue
			}
			if err := s.check(sub, obj[k], path+"."+k); err != nil {
				return err
			}
		}
	case jsonschema.Array:
		arr, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: expected an array, got %s", path, describe(v))
		}
		if def.Items != nil {
			for i, item := range arr {
				if err := s.check(*def.Items, item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	case jsonschema.String:
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: expected a string, got %s", path, describe(v))
		}
		if len(def.Enum) > 0 && !slices.Contains(def.Enum, str) {
			return fmt.Errorf("%s: %q is not one of %s", path, str, strings.Join(def.Enum, ", "))
		}
	case jsonschema.Integer:
		n, ok := v.(json.Number)
		if _, err := n.Int64(); !ok || err != nil {
			return fmt.Errorf("%s: expected an integer, got %s", path, describe(v))
		}
	case jsonschema.Number:
		if _, ok := v.(json.Number); !ok {
			return fmt.Errorf("%s: expected a number, got %s", path, describe(v))
		}
	case jsonschema.Boolean:
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: expected true or false, got %s", path, describe(v))
		}
	case jsonschema.Null:
		if v != nil {
			return fmt.Errorf("%s: expected null, got %s", path, describe(v))
		}
	}
	return nil
}

// describe names a decoded JSON value's kind for error messages.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return fmt.Sprintf("the string %q", x)
	case json.Number:
		return "the number " + x.String()
	case bool:
		return fmt.Sprintf("%t", x)
	}
	return fmt.Sprintf("%T", v)
}
