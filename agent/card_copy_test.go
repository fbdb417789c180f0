package agent_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/agent/tool"
	"github.com/akgentic/akgentic-go/agent/tool/teamtool"
	"github.com/akgentic/akgentic-go/orchestrator"
)

// orchestrator.ConfigCopier: a card copies an AgentConfig with its API key,
// which JSON never carries, so that members hired from the card keep it.
func TestCardKeepsAPIKey(t *testing.T) {
	cfg := agent.NewConfig("@Dev", "Developer")
	cfg.Model.APIKey = "sk-team-key"
	card, err := orchestrator.NewAgentCard(orchestrator.AgentCard{AgentClass: agent.Kind, Description: "dev", Config: cfg, CanBeHired: true})
	if err != nil {
		t.Fatal(err)
	}
	cp, _ := card.ConfigCopy()
	if got := cp.(*agent.AgentConfig).Model.APIKey; got != "sk-team-key" {
		t.Fatalf("hired member's APIKey = %q", got)
	}
}

// CopyConfig, made field by field, gives what a JSON round trip gives (the
// API key kept), and shares no pointer, map or slice with the original.
// Every field is filled, so a field added to AgentConfig (or to a struct
// in it) that the copy misses or shares fails here.
func TestCopyConfigIsTheJSONRoundTrip(t *testing.T) {
	for _, name := range []string{"full", "empty", "defaults"} {
		t.Run(name, func(t *testing.T) {
			cfg := agent.NewConfig("@Dev", "Developer")
			switch name {
			case "full":
				cfg = &agent.AgentConfig{}
				fill(reflect.ValueOf(cfg).Elem(), 1)
				cfg.Tools = tool.Cards{teamtool.New()}
			case "empty":
				cfg = &agent.AgentConfig{}
			}
			cfg.Model.APIKey = "sk-key"
			got, err := cfg.CopyConfig()
			if err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := new(agent.AgentConfig)
			if err := json.Unmarshal(data, want); err != nil {
				t.Fatal(err)
			}
			want.Model.APIKey = cfg.Model.APIKey
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("copy differs from the JSON round trip:\ngot  %+v\nwant %+v", got, want)
			}
			if path := shared(reflect.ValueOf(cfg).Elem(), reflect.ValueOf(got).Elem(), "AgentConfig"); path != "" {
				t.Fatalf("the copy shares %s with the original", path)
			}
		})
	}
}

// fill sets every settable field of v to a non-zero value (n varies them).
func fill(v reflect.Value, n int) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n+i)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, n)
		fill(e, n)
		v.SetMapIndex(k, e)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Interface {
			return // the tool cards: set by the caller
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), n)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), n+i)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(n) / 4)
	}
}

// shared returns the path of the first pointer, map or slice a and b
// share, "" when none.
func shared(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Struct:
		for i := range a.NumField() {
			if p := shared(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); p != "" {
				return p
			}
		}
	case reflect.Pointer, reflect.Map, reflect.Slice:
		if !a.IsNil() && !b.IsNil() && a.UnsafePointer() == b.UnsafePointer() {
			return path
		}
		switch {
		case a.IsNil() || b.IsNil():
		case a.Kind() == reflect.Pointer:
			return shared(a.Elem(), b.Elem(), path)
		case a.Kind() == reflect.Slice:
			for i := range min(a.Len(), b.Len()) {
				if p := shared(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
					return p
				}
			}
		}
	case reflect.Interface:
		if !a.IsNil() && !b.IsNil() {
			return shared(a.Elem(), b.Elem(), path)
		}
	}
	return ""
}
