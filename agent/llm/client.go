package llm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/akgentic/akgentic-go/internal/scrub"
	openai "github.com/sashabaranov/go-openai"
)

// client is a chat-completions client over go-openai for any
// OpenAI-compatible endpoint, with retries inside its HTTP doer and
// the model settings of a [ModelConfig] applied to every request. It
// is safe for concurrent use.
type client struct {
	oa        *openai.Client
	model     ModelConfig
	bottom    openai.HTTPDoer
	retry     *retryDoer // its backoff also paces a cut stream's retries
	closeOnce sync.Once

	// What every usage event names, worked out once from model:
	// ModelConfig.server and ModelConfig.providerName.
	host, provider string
	port           int
}

// newClient validates model and builds a client with the HTTP parts of
// opts (HTTPClient, Sleep, Jitter, Logger). The API key comes from
// model.APIKey or the environment variable model.APIKeyEnv; an empty key is
// allowed (local servers need none) and sends no Authorization header.
func newClient(model ModelConfig, httpCfg httpConfig, opts Options) (*client, error) {
	if err := validate.Struct(model); err != nil {
		return nil, fmt.Errorf("llm: invalid model config: %w", describeValidation(err))
	}
	bottom := opts.HTTPClient
	if bottom == nil {
		bottom = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	retry := &retryDoer{Next: bottom, Config: httpCfg, Sleep: opts.Sleep, Jitter: opts.Jitter, Logger: opts.Logger}
	doer := wireDoer{next: retry, zeroTemperature: model.Temperature != nil && *model.Temperature == 0}
	var cfg openai.ClientConfig
	switch model.provider() {
	case providerAzure:
		cfg = openai.DefaultAzureConfig(model.apiKey(), model.BaseURL)
		if model.AzureAPIVersion != "" {
			cfg.APIVersion = model.AzureAPIVersion
		}
	default:
		cfg = openai.DefaultConfig(model.apiKey())
		if model.BaseURL != "" {
			cfg.BaseURL = model.BaseURL
		}
	}
	cfg.HTTPClient = doer
	scrub.Register(model.apiKey())
	c := &client{oa: openai.NewClientWithConfig(cfg), model: model, bottom: bottom, retry: retry, provider: model.providerName()}
	c.host, c.port = model.server()
	return c, nil
}

// Model returns the client's model config (its API key included; do not log
// it with %#v).
func (c *client) Model() ModelConfig { return c.model }

// CreateChatCompletion applies the model settings to req (model name when
// empty, temperature, seed, max tokens, reasoning effort) and sends it. An
// error answer of the provider comes back as a providerError.
func (c *client) CreateChatCompletion(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	c.apply(&req)
	resp, err := c.oa.CreateChatCompletion(ctx, req)
	return resp, asProviderError(err)
}

// providerError is an error answer of the provider with its words kept in
// the text: go-openai's APIError text has the status and message only, and
// drops the code (context_length_exceeded, rate_limit_exceeded) a person
// acts on. The *openai.APIError stays reachable with errors.As.
type providerError struct{ api *openai.APIError }

// Error is "provider error <status> (<type>, code <code>, param <param>):
// <message>", leaving out the parts the provider did not send. Its
// message is scrubbed when it is made (asProviderError).
func (e providerError) Error() string {
	var b strings.Builder
	b.WriteString("provider error")
	if e.api.HTTPStatusCode > 0 {
		fmt.Fprintf(&b, " %d", e.api.HTTPStatusCode)
	}
	var details []string
	if e.api.Type != "" {
		details = append(details, e.api.Type)
	}
	if e.api.Code != nil {
		details = append(details, fmt.Sprintf("code %v", e.api.Code))
	}
	if e.api.Param != nil && *e.api.Param != "" {
		details = append(details, "param "+*e.api.Param)
	}
	if len(details) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(details, ", "))
	}
	b.WriteString(": ")
	b.WriteString(e.api.Message)
	return b.String()
}

// Unwrap returns go-openai's error.
func (e providerError) Unwrap() error { return e.api }

// asProviderError returns err as the client gives it: an error answer of
// the provider as a providerError, its message scrubbed (a provider or a
// proxy may echo the key), any other error scrubbed (scrub.Error).
func asProviderError(err error) error {
	ae, ok := err.(*openai.APIError)
	if !ok {
		return scrub.Error(err)
	}
	clean := *ae
	clean.Message = scrub.String(ae.Message)
	if ae.Param != nil {
		param := scrub.String(*ae.Param)
		clean.Param = &param
	}
	return providerError{&clean}
}

func (c *client) apply(req *openai.ChatCompletionRequest) {
	m := c.model
	if req.Model == "" {
		req.Model = m.Model
	}
	if m.Temperature != nil {
		req.Temperature = *m.Temperature // 0 is added by wireDoer
	}
	if m.Seed != nil {
		req.Seed = m.Seed
	}
	if m.MaxTokens > 0 {
		if isReasoningModel(req.Model) {
			req.MaxCompletionTokens = m.MaxTokens
		} else {
			req.MaxTokens = m.MaxTokens
		}
	}
	if m.ReasoningEffort != "" && isReasoningModel(req.Model) {
		req.ReasoningEffort = m.ReasoningEffort
	}
}

// Close releases idle HTTP connections. It is idempotent and never fails.
func (c *client) Close() error {
	c.closeOnce.Do(func() {
		if ic, ok := c.bottom.(interface{ CloseIdleConnections() }); ok {
			ic.CloseIdleConnections()
		}
	})
	return nil
}

// wireDoer mends the JSON body go-openai encoded where its encoder leaves
// out what the API needs: it adds "temperature":0 to a body that lacks it
// when zeroTemperature is set (Temperature is omitempty, so an explicit 0
// would never reach the server), and turns each emptyContent back into
// "content":"".
type wireDoer struct {
	next            openai.HTTPDoer
	zeroTemperature bool
}

func (z wireDoer) Do(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return z.next.Do(req)
	}
	b, err := readBody(req)
	if err != nil {
		return nil, fmt.Errorf("llm: reading request body: %w", err)
	}
	if z.zeroTemperature && len(b) > 2 && b[0] == '{' && !bytes.Contains(b, []byte(`"temperature":`)) {
		patched := make([]byte, 0, len(b)+16)
		patched = append(patched, `{"temperature":0,`...)
		patched = append(patched, b[1:]...)
		b = patched
	}
	if bytes.Contains(b, emptyContentJSON) {
		b = bytes.ReplaceAll(b, emptyContentJSON, emptyContentWire)
	}
	// The request is go-openai's, made for this one call and not used
	// after it: its body is replaced in place (a clone would copy its
	// headers and URL on every model call).
	req.Body = io.NopCloser(bytes.NewReader(b))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil } // not the unmended body's
	req.ContentLength = int64(len(b))
	return z.next.Do(req)
}

// readBody reads and closes req's body: in one buffer of its length when
// the length is known (go-openai sets it), else as io.ReadAll does.
func readBody(req *http.Request) ([]byte, error) {
	defer req.Body.Close()
	if n := req.ContentLength; n > 0 {
		b := make([]byte, n)
		if _, err := io.ReadFull(req.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(req.Body)
}
