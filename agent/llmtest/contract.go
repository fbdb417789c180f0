package llmtest

// The schemas of OpenAI's OpenAPI document that what the server accepts
// and writes must match.
const (
	schemaRequest  = "CreateChatCompletionRequest"
	schemaResponse = "CreateChatCompletionResponse"
	schemaChunk    = "CreateChatCompletionStreamResponse"
	schemaError    = "ErrorResponse"
)

// contractHook, when set, sees every request body the server accepted and
// every body it wrote itself (answers, stream chunks, errors; not the
// bodies of Raw steps, which are the test's), with the name of the schema
// of OpenAI's OpenAPI document it must match. The package's tests set it,
// before any server starts, to validate them all against that document, so
// that the fake cannot drift from the contract; it is nil otherwise.
var contractHook func(schema string, body []byte)

// checkContract passes body to contractHook, if set.
func checkContract(schema string, body []byte) {
	if contractHook != nil {
		contractHook(schema, body)
	}
}
