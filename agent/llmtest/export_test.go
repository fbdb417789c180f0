package llmtest

// Test-only access to unexported parts, for the package's external tests.

// CheckStrictSchema reports why schema would be rejected by OpenAI's strict
// mode, or nil.
var CheckStrictSchema = checkStrictSchema

// RosterRouter is the default router.
var RosterRouter = rosterRouter

// WithAPIKey makes the server answer 401 invalid_api_key unless the request
// carries "Authorization: Bearer <key>".
var WithAPIKey = withAPIKey

// Exchange is one line of a transcript.
type Exchange = exchange

// ReadTranscript reads a JSON Lines transcript.
var ReadTranscript = readTranscript
