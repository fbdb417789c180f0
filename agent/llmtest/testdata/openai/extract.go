//go:build ignore

// Command extract writes schemas.json, the part of OpenAI's OpenAPI
// document (github.com/openai/openai-openapi, MIT, see LICENSE beside this
// file) that llmtest's contract test validates against: the chat
// completions request, response, stream chunk and error schemas and every
// schema they refer to, as one JSON Schema (draft 2020-12) document with
// the schemas under $defs.
//
//	go run extract.go -in /path/to/openai-openapi/openapi.json -commit <sha>
//
// The document is OpenAPI 3.1 but still marks nullable values with the
// 3.0 keyword "nullable": extract turns each into a JSON Schema null
// alternative. Descriptions, examples and x- extensions are left out.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// roots are the schemas the contract test validates against.
var roots = []string{
	"CreateChatCompletionRequest",
	"CreateChatCompletionResponse",
	"CreateChatCompletionStreamResponse",
	"ErrorResponse",
}

const refPrefix = "#/components/schemas/"

func main() {
	in := flag.String("in", "openapi.json", "OpenAI's OpenAPI document (JSON)")
	out := flag.String("out", "schemas.json", "the schemas to write")
	commit := flag.String("commit", "", "the commit of openai-openapi the document comes from")
	flag.Parse()
	if err := run(*in, *out, *commit); err != nil {
		fmt.Fprintln(os.Stderr, "extract:", err)
		os.Exit(1)
	}
}

func run(in, out, commit string) error {
	raw, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var doc struct {
		Info struct {
			Version string `json:"version"`
		} `json:"info"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	all := doc.Components.Schemas
	defs := map[string]any{}
	queue := slices.Clone(roots)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if _, done := defs[name]; done {
			continue
		}
		s, ok := all[name]
		if !ok {
			return fmt.Errorf("schema %s is not in the document", name)
		}
		defs[name] = convert(s, func(ref string) { queue = append(queue, ref) })
	}
	comment := fmt.Sprintf("Extracted by extract.go from openai-openapi's openapi.json (API version %s", doc.Info.Version)
	if commit != "" {
		comment += ", commit " + commit
	}
	comment += "). Do not edit: run extract.go again."
	result := map[string]any{
		"$schema":  "https://json-schema.org/draft/2020-12/schema",
		"$comment": comment,
		"$defs":    defs,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(result); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// dropped are the keywords left out: documentation, and OpenAPI's own.
var dropped = map[string]bool{
	"description": true, "example": true, "examples": true, "discriminator": true,
	"deprecated": true, "title": true, "nullable": true,
}

// convert returns node with its references pointed at $defs (calling ref
// for each schema referred to), nullable turned into a null alternative,
// and the dropped keywords left out.
func convert(node any, ref func(string)) any {
	switch v := node.(type) {
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = convert(e, ref)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if dropped[k] || strings.HasPrefix(k, "x-") {
				continue
			}
			switch k {
			case "$ref":
				s, _ := v[k].(string)
				name, ok := strings.CutPrefix(s, refPrefix)
				if ok {
					ref(name)
					out[k] = "#/$defs/" + name
					continue
				}
				out[k] = s
			case "properties", "$defs", "patternProperties":
				props, _ := v[k].(map[string]any)
				conv := make(map[string]any, len(props))
				for name, p := range props { // names, not keywords: keep them all
					conv[name] = convert(p, ref)
				}
				out[k] = conv
			default:
				out[k] = convert(v[k], ref)
			}
		}
		if n, _ := v["nullable"].(bool); n {
			return nullable(out)
		}
		return out
	}
	return node
}

// nullable returns schema s also accepting null.
func nullable(s map[string]any) any {
	if e, ok := s["enum"].([]any); ok {
		s["enum"] = append(e, nil)
	}
	switch t := s["type"].(type) {
	case string:
		s["type"] = []any{t, "null"}
		return s
	case []any:
		s["type"] = append(t, "null")
		return s
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}
