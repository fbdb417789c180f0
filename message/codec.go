package message

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/akgentic/akgentic-go/internal/link"
)

// typeTag is the JSON key naming a value's registered type.
const typeTag = "__model__"

// ErrUnknownType is wrapped by decode errors for a type name that is not
// registered, and by encode errors for a type that is not.
var ErrUnknownType = errors.New("type not registered")

var registry = struct {
	sync.RWMutex
	byName map[string]reflect.Type
	byType map[reflect.Type]string
}{byName: map[string]reflect.Type{}, byType: map[reflect.Type]string{}}

// Register registers the struct type T under name so that values of type *T
// (and T) encode with that name as their type tag and decode back to *T.
// Persisted names are forever: renaming a type must keep its registered
// name, or stored events stop decoding. Registering the same name for
// another type, or the same type under another name, panics: it is a
// programming error caught at init.
func Register[T any](name string) {
	registerType(name, reflect.TypeFor[T]())
}

// registerType is Register for a reflect.Type (a struct type).
func registerType(name string, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if name == "" {
		panic("message: Register with an empty name")
	}
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("message: Register(%q): %s is not a struct type", name, t))
	}
	registry.Lock()
	defer registry.Unlock()
	if old, ok := registry.byName[name]; ok && old != t {
		panic(fmt.Sprintf("message: name %q already registered for %s", name, old))
	}
	if old, ok := registry.byType[t]; ok && old != name {
		panic(fmt.Sprintf("message: %s already registered as %q", t, old))
	}
	registry.byName[name] = t
	registry.byType[t] = name
}

// newOf returns a new zero *T for the type registered under name.
func newOf(name string) (any, error) {
	registry.RLock()
	t, ok := registry.byName[name]
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("message: %q: %w", name, ErrUnknownType)
	}
	return reflect.New(t).Interface(), nil
}

func nameOf(t reflect.Type) (string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	registry.RLock()
	defer registry.RUnlock()
	n, ok := registry.byType[t]
	return n, ok
}

func init() {
	Register[UserMessage]("UserMessage")
	Register[ResultMessage]("ResultMessage")
	Register[CancelMessage]("CancelMessage")
	Register[StopRecursively]("StopRecursively")
	Register[TeamStoppingEvent]("TeamStoppingEvent")
	Register[ClosedNotification]("ClosedNotification")
	Register[StartMessage]("StartMessage")
	Register[StopMessage]("StopMessage")
	Register[SentMessage]("SentMessage")
	Register[ReceivedMessage]("ReceivedMessage")
	Register[ProcessedMessage]("ProcessedMessage")
	Register[HandledMessage]("HandledMessage")
	Register[NotificationMessage]("NotificationMessage")
	Register[ErrorMessage]("ErrorMessage")
	Register[WarningMessage]("WarningMessage")
	Register[StateChangedMessage]("StateChangedMessage")
	Register[EventMessage]("EventMessage")
}

// Marshal encodes a registered value (a message, a telemetry record or a
// payload such as TeamStoppingEvent) as a JSON object whose first key is
// "__model__", the registered name. Nested messages and payloads carry their
// own tags. An unregistered type is an error wrapping ErrUnknownType.
func Marshal(v any) ([]byte, error) {
	if v == nil {
		return nil, errors.New("message: Marshal(nil)")
	}
	if isNil(v) {
		return nil, fmt.Errorf("message: Marshal of a nil %T", v)
	}
	a, name := own(v)
	if a == nil {
		var ok bool
		if name, ok = nameOf(reflect.TypeOf(v)); !ok {
			return nil, fmt.Errorf("message: encode %T: %w (call message.Register)", v, ErrUnknownType)
		}
		v = addressable(v)
		a, _ = own(v)
	}
	if a != nil {
		out, err := marshalOwn(a, name)
		if err != nil {
			return nil, fmt.Errorf("message: encode %s: %w", name, err)
		}
		return out, nil
	}
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("message: encode %s: %w", name, err)
	}
	return appendTag(make([]byte, 0, len(body)+len(typeTag)+len(name)+8), name, body)
}

// errNotObject: a registered type's MarshalJSON wrote something other than
// an object, so it cannot carry a type tag.
func errNotObject(name string) error {
	return fmt.Errorf("message: encode %s: not a JSON object", name)
}

// addressable returns a pointer to a copy of v when v is a struct value, so
// that the JSON methods the message types declare on their pointer receivers
// (which tag nested values) apply to values too; anything else is returned
// unchanged.
func addressable(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Struct {
		return v
	}
	p := reflect.New(rv.Type())
	p.Elem().Set(rv)
	return p.Interface()
}

// maxDepth bounds how deeply the JSON given to Unmarshal may nest. Each
// level of nested tagged values is decoded by its own pass over its part of
// the input, so decoding time grows with depth times size; real messages
// nest a few levels, and the bound keeps a hostile input cheap.
const maxDepth = 256

// Unmarshal decodes a JSON object written by Marshal into a new value of
// the registered type named by its "__model__" key (always a pointer, e.g.
// *UserMessage). A missing tag, an unknown name or a field of the wrong type
// is an error naming what was wrong; unknown keys are ignored. Input that
// nests objects and arrays more than 256 deep is refused. Equal
// addresses within one record (a SentMessage's sender and its message's)
// may be decoded as one *Address: addresses are immutable.
func Unmarshal(data []byte) (any, error) {
	if tooDeep(data, maxDepth) {
		return nil, fmt.Errorf("message: decode: JSON nested more than %d levels deep", maxDepth)
	}
	return unmarshal(data)
}

// tooDeep reports whether the JSON text nests objects and arrays more than
// limit levels deep. It does not validate the JSON.
func tooDeep(data []byte, limit int) bool {
	if bytes.Count(data, []byte("{"))+bytes.Count(data, []byte("[")) <= limit {
		return false // too few brackets to nest that deep; the count is vectorized, the scan below is not
	}
	depth, inString, escaped := 0, false, false
	for _, c := range data {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > limit {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

// tagPrefix starts every object Marshal writes.
var tagPrefix = []byte(`{"` + typeTag + `":`)

// fastTag reads the type name of an object that starts the way Marshal
// writes it ({"__model__":"Name",...) without a JSON pass; ok is false for
// anything else (the caller then parses). The final decode validates the
// whole input either way.
func fastTag(data []byte) (name string, ok bool) {
	rest, found := bytes.CutPrefix(data, tagPrefix)
	if !found || len(rest) == 0 || rest[0] != '"' {
		return "", false
	}
	rest = rest[1:]
	i := bytes.IndexByte(rest, '"')
	if i <= 0 || i > maxInterned || bytes.IndexByte(rest[:i], '\\') >= 0 || !utf8.Valid(rest[:i]) {
		return "", false
	}
	return intern(rest[:i]), true
}

// unmarshal is Unmarshal without the depth check, for nested values.
func unmarshal(data []byte) (any, error) {
	name, ok := fastTag(data)
	if ok && !slowDecode.Load() {
		if v, ok, err := decodeOwn(name, data); ok {
			return v, err
		}
	}
	if !ok {
		var head struct {
			Model json.RawMessage `json:"__model__"`
		}
		if err := json.Unmarshal(data, &head); err != nil {
			return nil, fmt.Errorf("message: decode: %w", err)
		}
		if head.Model == nil || bytes.Equal(head.Model, []byte("null")) {
			return nil, fmt.Errorf("message: decode: missing %q type tag", typeTag)
		}
		if err := json.Unmarshal(head.Model, &name); err != nil {
			return nil, fmt.Errorf("message: decode: %q is %s, not a type name", typeTag, head.Model)
		}
	}
	v, err := newOf(name)
	if err != nil {
		return nil, fmt.Errorf("message: decode: %w", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return nil, fmt.Errorf("message: decode %s: %w", name, explain(data, reflect.TypeOf(v).Elem(), err))
	}
	return v, nil
}

// fieldError is a decode error that names the JSON key whose value did not
// decode. Errors returned by Unmarshal wrap it when the key is known.
type fieldError struct {
	Field string // the JSON key, e.g. "timestamp"
	Err   error  // why its value did not decode
}

// Error says which field failed and why.
func (e *fieldError) Error() string {
	te, ok := e.Err.(*json.UnmarshalTypeError)
	if !ok || te.Type == nil {
		return fmt.Sprintf("field %q: %v", e.Field, e.Err)
	}
	msg := fmt.Sprintf("field %q: cannot decode a JSON %s as %s", e.Field, te.Value, te.Type)
	// te.Field is the Go path (embedded structs included) down to the
	// failing key; show the part below e.Field when there is one.
	segs := strings.Split(te.Field, ".")
	for i := len(segs) - 2; i >= 0; i-- {
		if segs[i] == e.Field {
			return msg + " (at " + strings.Join(segs[i:], ".") + ")"
		}
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *fieldError) Unwrap() error { return e.Err }

// inField wraps a nested value's decode error in a fieldError naming key.
func inField(key string, err error) error {
	if err == nil {
		return nil
	}
	return &fieldError{Field: key, Err: err}
}

// explain finds which top-level key of the object data made decoding into
// a *t fail with err, by decoding each key alone, and names it. It runs on
// the error path only; when no single key fails, err is returned as is.
// An error that already names its key (the nested values of the records,
// see inField) is returned as is: probing it again at every level of a
// nested payload would take time exponential in the nesting depth.
func explain(data []byte, t reflect.Type, err error) error {
	if _, ok := err.(*fieldError); ok {
		return err
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return err
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return err
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		if k != typeTag {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		one, merr := json.Marshal(map[string]json.RawMessage{k: obj[k]})
		if merr != nil {
			continue
		}
		if ferr := json.Unmarshal(one, reflect.New(t).Interface()); ferr != nil {
			return &fieldError{Field: k, Err: ferr}
		}
	}
	return err
}

// UnmarshalMessage is Unmarshal for a value that must be a Message.
func UnmarshalMessage(data []byte) (Message, error) {
	v, err := Unmarshal(data)
	if err != nil {
		return nil, err
	}
	m, ok := v.(Message)
	if !ok {
		return nil, fmt.Errorf("message: decode: %T is not a Message", v)
	}
	return m, nil
}

// marshalValue encodes a nested value: null for nil, tagged when its type is
// registered, plain JSON otherwise.
func marshalValue(v any) (json.RawMessage, error) {
	return appendValue(nil, v)
}

// unmarshalValue decodes a nested value: nil for null, the registered type
// for a tagged object, the raw JSON otherwise.
func unmarshalValue(raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if bytes.HasPrefix(raw, tagPrefix) {
		return unmarshal(raw)
	}
	if raw[0] == '{' {
		var head struct {
			Model *string `json:"__model__"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, err
		}
		if head.Model != nil {
			return unmarshal(raw)
		}
	}
	// Keep untagged JSON in the form Marshal writes it (compact, HTML
	// escaped), so that a decoded value re-encodes and decodes to itself.
	canon, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(canon), nil
}

// unmarshalMessage decodes a nested value that must be a Message (or null).
func unmarshalMessage(raw json.RawMessage) (Message, error) {
	v, err := unmarshalValue(raw)
	if err != nil || v == nil {
		return nil, err
	}
	m, ok := v.(Message)
	if !ok {
		return nil, fmt.Errorf("%s is not a message", TypeName(v))
	}
	return m, nil
}

func init() {
	// The orchestrator's own logged types (its metadata change) encode
	// their fields of type any the way the runtime's records do.
	link.MarshalValue, link.UnmarshalValue = marshalValue, unmarshalValue
}
