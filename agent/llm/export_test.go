package llm

// Test-only access to unexported parts, for the package's external tests.

// Client is the runner's model client.
type Client = client

// NewClient builds a client as NewRunner does.
var NewClient = newClient
