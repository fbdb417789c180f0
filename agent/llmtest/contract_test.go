package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// contractSchemas is the part of OpenAI's OpenAPI document the contract is
// checked against, extracted by testdata/openai/extract.go.
const contractSchemas = "testdata/openai/schemas.json"

// contract validates, against OpenAI's schemas, what the servers of this
// package's tests accept and write (contractHook), and keeps what did not
// match.
type contract struct {
	mu         sync.Mutex
	schemas    map[string]*jsonschema.Schema
	checked    map[string]int
	violations []string
}

// theContract is the package tests' contract check, installed before any
// test runs.
var theContract = newContract()

func init() { contractHook = theContract.check }

func newContract() *contract {
	c := &contract{schemas: map[string]*jsonschema.Schema{}, checked: map[string]int{}}
	if err := c.load(); err != nil {
		c.violations = append(c.violations, "loading OpenAI's schemas: "+err.Error())
	}
	return c
}

func (c *contract) load() error {
	f, err := os.Open(contractSchemas)
	if err != nil {
		return err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return err
	}
	comp := jsonschema.NewCompiler()
	if err := comp.AddResource("openai.json", doc); err != nil {
		return err
	}
	for _, name := range []string{schemaRequest, schemaResponse, schemaChunk, schemaError} {
		s, err := comp.Compile("openai.json#/$defs/" + name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		c.schemas[name] = s
	}
	return nil
}

// validate reports why body does not match the named schema, or nil.
func (c *contract) validate(schema string, body []byte) error {
	s, ok := c.schemas[schema]
	if !ok {
		return fmt.Errorf("no schema %s", schema)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return s.Validate(inst)
}

func (c *contract) check(schema string, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checked[schema]++
	if err := c.validate(schema, body); err != nil {
		c.violations = append(c.violations, fmt.Sprintf("%s: %v\nbody: %s", schema, err, clip(string(body), 2000)))
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ContractReport returns what the package's tests sent and served that
// OpenAI's schemas refuse, and how many bodies were checked per schema.
func ContractReport() (violations []string, checked map[string]int) {
	theContract.mu.Lock()
	defer theContract.mu.Unlock()
	checked = make(map[string]int, len(theContract.checked))
	for k, v := range theContract.checked {
		checked[k] = v
	}
	return append([]string(nil), theContract.violations...), checked
}

// ValidateContract validates body against the named schema of OpenAI's
// document (CreateChatCompletionRequest, CreateChatCompletionResponse,
// CreateChatCompletionStreamResponse, ErrorResponse).
func ValidateContract(schema string, body []byte) error {
	theContract.mu.Lock()
	defer theContract.mu.Unlock()
	return theContract.validate(schema, body)
}

// The parameters the fake knows are those of the request schema of
// OpenAI's document, neither more nor fewer.
func TestRequestFieldsAreTheDocumentsParameters(t *testing.T) {
	raw, err := os.ReadFile(contractSchemas)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs map[string]struct {
			AllOf []struct {
				Ref        string                     `json:"$ref"`
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"allOf"`
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	var collect func(name string)
	collect = func(name string) {
		d, ok := doc.Defs[name]
		if !ok {
			t.Fatalf("no schema %s", name)
		}
		for k := range d.Properties {
			want[k] = true
		}
		for _, part := range d.AllOf {
			if ref, ok := strings.CutPrefix(part.Ref, "#/$defs/"); ok {
				collect(ref)
			}
			for k := range part.Properties {
				want[k] = true
			}
		}
	}
	collect(schemaRequest)
	if len(want) == 0 || !maps.Equal(want, requestFields) {
		t.Fatalf("the fake knows %v,\nthe document %v", slices.Sorted(maps.Keys(requestFields)), slices.Sorted(maps.Keys(want)))
	}
}
