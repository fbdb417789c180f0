package llm

// Test-only access to unexported parts, for the package's external tests.

// Client is the runner's model client.
type Client = client

// NewClient builds a client as NewRunner does.
var NewClient = newClient

// InvalidOutputError is the error of Output.Parse.
type InvalidOutputError = invalidOutputError

// ParsePriceTable reads a price table in the embedded format.
var ParsePriceTable = parsePriceTable

// Lookup returns the price of model and whether any key matched.
func (t *PriceTable) Lookup(model string) (Price, bool) { return t.lookup(model) }

// SetTools replaces the tools the model may call, as NewRunner does.
func (r *Runner) SetTools(tools ...*Tool) error { return r.setTools(tools...) }

// LastInputTokens is the prompt size of the latest response, 0 if unknown
// (A43).
func (r *Runner) LastInputTokens() int { return r.lastInputTokens }

// HTTPConfig is the type of RuntimeConfig.HTTP, named.
type HTTPConfig = httpConfig
