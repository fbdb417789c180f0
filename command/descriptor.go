package command

import "slices"

// Descriptor is the serializable discovery record of a registered command,
// as listed by [Registry.Descriptors] and announced when an agent starts.
type Descriptor struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Args        []ArgSpec `json:"args"`        // in positional order
	ArgsSchema  *Schema   `json:"args_schema"` // the same arguments as a JSON Schema object
	ToolCard    string    `json:"tool_card"`   // the owner label given to Register; "CommandRegistry" for the built-in help
}

// ArgSpec describes one parameter of a command.
type ArgSpec struct {
	Name string `json:"name"`
	// Type is the JSON type name: string, integer, number, boolean or array
	// (of strings). Durations and enums are strings.
	Type        string   `json:"type"`
	Required    bool     `json:"required"`
	Description string   `json:"description,omitempty"`
	Enum        []string `json:"enum,omitempty"`    // the allowed values of an Enum
	Default     any      `json:"default,omitempty"` // set only by Param.Default
}

// Schema is the subset of JSON Schema that describes command arguments.
type Schema struct {
	Type                 string             `json:"type"`
	Description          string             `json:"description,omitempty"`
	Enum                 []string           `json:"enum,omitempty"`
	Default              any                `json:"default,omitempty"`
	Items                *Schema            `json:"items,omitempty"`
	Properties           map[string]*Schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	AdditionalProperties *bool              `json:"additionalProperties,omitempty"`
}

// describe builds the descriptor of c registered by owner. Every call
// builds fresh slices and maps, so callers may keep and change the result.
func describe(c *Command, owner string) Descriptor {
	closed := false
	d := Descriptor{
		Name:        c.name,
		Description: c.description,
		Args:        make([]ArgSpec, len(c.params)),
		ArgsSchema: &Schema{
			Type:                 "object",
			Properties:           make(map[string]*Schema, len(c.params)),
			AdditionalProperties: &closed,
		},
		ToolCard: owner,
	}
	for i, p := range c.params {
		in := p.info()
		spec := ArgSpec{
			Name:        in.name,
			Type:        in.jsonType,
			Required:    in.required,
			Description: in.description,
			Enum:        slices.Clone(in.enum),
		}
		if in.hasDefault {
			spec.Default = p.jsonDefault()
		}
		d.Args[i] = spec
		prop := &Schema{Type: spec.Type, Description: spec.Description, Enum: spec.Enum, Default: spec.Default}
		if spec.Type == "array" {
			prop.Items = &Schema{Type: "string"}
		}
		d.ArgsSchema.Properties[in.name] = prop
		if in.required {
			d.ArgsSchema.Required = append(d.ArgsSchema.Required, in.name)
		}
	}
	return d
}
