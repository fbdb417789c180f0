package llm

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-playground/validator/v10"
	openai "github.com/sashabaranov/go-openai"
)

// Provider names accepted by [ModelConfig].
const (
	providerOpenAI = "openai"
	providerAzure  = "azure"
)

// defaultModel is the model of DefaultConfig.
const defaultModel = "gpt-5.2"

// ModelConfig says which model to call and how. The zero value is not
// ready: start from [DefaultConfig]'s Model.
type ModelConfig struct {
	// Provider is openai (default), azure or openai-compatible (any server
	// speaking the OpenAI chat-completions API: Ollama, vLLM, llmtest).
	Provider string `json:"provider" validate:"omitempty,oneof=openai azure openai-compatible"`
	// Model is the model name sent on the wire; for azure, the deployment.
	Model string `json:"model" validate:"required"`
	// BaseURL overrides the provider's endpoint; required for azure and
	// openai-compatible.
	BaseURL string `json:"base_url,omitempty" validate:"required_if=Provider azure,required_if=Provider openai-compatible,omitempty,url"`
	// APIKey is the key itself. Leave it empty to read APIKeyEnv. It is
	// never logged, printed or serialized.
	APIKey string `json:"-"`
	// APIKeyEnv names the environment variable holding the key when APIKey
	// is empty (default OPENAI_API_KEY).
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// AzureAPIVersion is the api-version query parameter for azure.
	AzureAPIVersion string `json:"azure_api_version,omitempty"`
	// Temperature in [0, 2]; nil omits it. An explicit 0 is sent as 0
	// (go-openai alone would drop it).
	Temperature *float32 `json:"temperature,omitempty" validate:"omitempty,gte=0,lte=2"`
	// Seed, when set, is sent for reproducible sampling.
	Seed *int `json:"seed,omitempty"`
	// MaxTokens caps the completion; sent as max_completion_tokens to
	// reasoning models (gpt-5*, o-series), as max_tokens otherwise.
	MaxTokens int `json:"max_tokens,omitempty" validate:"gte=0"`
	// ContextLength is the model's context window in tokens; compaction is
	// off unless it is set.
	ContextLength int `json:"context_length,omitempty" validate:"gte=0"`
	// ReasoningEffort is low, medium or high; only reasoning models accept it.
	ReasoningEffort string `json:"reasoning_effort,omitempty" validate:"omitempty,oneof=low medium high"`
}

// String describes the config without its API key.
func (m ModelConfig) String() string {
	return fmt.Sprintf("ModelConfig{provider=%s model=%s base_url=%s key=%s}", m.provider(), m.Model, m.BaseURL, redact(m.APIKey))
}

// LogValue logs the config without its API key.
func (m ModelConfig) LogValue() slog.Value {
	return slog.GroupValue(slog.String("provider", m.provider()), slog.String("model", m.Model),
		slog.String("base_url", m.BaseURL), slog.String("api_key", redact(m.APIKey)))
}

func redact(key string) string {
	if key == "" {
		return "unset"
	}
	return "[redacted]"
}

// knownHosts are the hosts of OpenAI-compatible endpoints whose provider
// the OpenTelemetry GenAI conventions name.
var knownHosts = map[string]string{
	"api.openai.com":                    "openai",
	"api.groq.com":                      "groq",
	"api.deepseek.com":                  "deepseek",
	"api.mistral.ai":                    "mistral_ai",
	"api.x.ai":                          "x_ai",
	"api.perplexity.ai":                 "perplexity",
	"generativelanguage.googleapis.com": "gcp.gemini",
}

// providerName is the provider as the OpenTelemetry GenAI conventions name
// it (gen_ai.provider.name).
func (m ModelConfig) providerName() string {
	switch m.provider() {
	case providerOpenAI:
		return "openai"
	case providerAzure:
		return "azure.ai.openai"
	}
	host, _ := m.server()
	if p, ok := knownHosts[host]; ok {
		return p
	}
	return m.provider()
}

// server returns the host and port requests go to: those of BaseURL, or
// of OpenAI's endpoint when it is empty.
func (m ModelConfig) server() (string, int) {
	raw := m.BaseURL
	if raw == "" {
		raw = openai.DefaultConfig("").BaseURL
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "", 0
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		port = 443
		if u.Scheme == "http" {
			port = 80
		}
	}
	return u.Hostname(), port
}

func (m ModelConfig) provider() string {
	if m.Provider == "" {
		return providerOpenAI
	}
	return m.Provider
}

// apiKey resolves the key: APIKey, else the environment variable.
func (m ModelConfig) apiKey() string {
	if m.APIKey != "" {
		return m.APIKey
	}
	env := m.APIKeyEnv
	if env == "" {
		env = "OPENAI_API_KEY"
	}
	return os.Getenv(env)
}

// isReasoningModel reports whether OpenAI treats the model as a reasoning
// model (gpt-5*, o1*, o3*, o4*): those take max_completion_tokens, accept
// reasoning_effort and fix temperature at 1.
func isReasoningModel(model string) bool {
	for _, p := range []string{"gpt-5", "o1", "o3", "o4"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// httpConfig is RuntimeConfig.HTTP: it tunes the HTTP layer. The
// field list and tags must stay identical to RuntimeConfig.HTTP's.
type httpConfig struct {
	Timeout          time.Duration `json:"timeout,omitempty" validate:"gte=0"`
	MaxAttempts      int           `json:"max_attempts,omitempty" validate:"gte=0"`
	BackoffBase      time.Duration `json:"backoff_base,omitempty" validate:"gte=0"`
	BackoffMax       time.Duration `json:"backoff_max,omitempty" validate:"gte=0"`
	RetryAfterMax    time.Duration `json:"retry_after_max,omitempty" validate:"gte=0"`
	MaxResponseBytes int64         `json:"max_response_bytes,omitempty" validate:"gte=0"`
}

func (h httpConfig) withDefaults() httpConfig {
	if h.Timeout == 0 {
		h.Timeout = 120 * time.Second
	}
	if h.MaxAttempts == 0 {
		h.MaxAttempts = 5
	}
	if h.BackoffBase == 0 {
		h.BackoffBase = 500 * time.Millisecond
	}
	if h.BackoffMax == 0 {
		h.BackoffMax = 60 * time.Second
	}
	if h.RetryAfterMax == 0 {
		h.RetryAfterMax = 300 * time.Second
	}
	if h.MaxResponseBytes == 0 {
		h.MaxResponseBytes = 16 << 20
	}
	return h
}

// End strategies. In native structured-output mode both behave the
// same; the field is carried for a final-tool mode that is not built yet.
const (
	endStrategyExhaustive = "exhaustive"
	endStrategyEarly      = "early"
)

// RuntimeConfig holds the loop's knobs.
type RuntimeConfig struct {
	// Retries is the budget of model-fixable failures per run: invalid
	// outputs, and per tool the retry errors it returns (default 3).
	Retries int `json:"retries" validate:"gte=0"`
	// EndStrategy is exhaustive (default) or early; any other value
	// is a config error naming it. In the native structured-output mode
	// this package uses, it has no observable effect: a response with tool
	// calls is never final, so its calls all run. It matters only in
	// the final-tool output mode (not implemented), where early accepts the
	// output call and skips the others.
	EndStrategy string `json:"end_strategy,omitempty" validate:"omitempty,oneof=exhaustive early"`
	// ParallelToolCalls, when set, is sent as parallel_tool_calls; nil sends
	// nothing. Tool calls of one response run concurrently unless it
	// is false or a tool is marked Serial; results keep call order.
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty"`
	// Stream, when true, streams each answer (stream: true with
	// stream_options.include_usage): its text is reported piece by
	// piece as TextDeltaEvents while it is written, and the whole answer is
	// then validated and recorded exactly as an unstreamed one. A stream cut
	// mid-way is sent again (HTTP.MaxAttempts in all), never taken as an
	// answer. Off by default. HTTP.Timeout bounds each whole stream.
	Stream bool `json:"stream,omitempty"`
	// MaxParallelToolCalls bounds the tool calls of one answer that run
	// at once (0: 8): that many goroutines run the answer's calls, the
	// others wait for one of them.
	MaxParallelToolCalls int `json:"max_parallel_tool_calls,omitempty" validate:"gte=0"`
	// MaxToolCallsPerAnswer bounds the tool calls of one answer that run
	// (0: 64). Each call past it is answered "not run", naming the
	// limit, so the model can make the calls it still needs in its next
	// answer; a LimitEvent reports it.
	MaxToolCallsPerAnswer int `json:"max_tool_calls_per_answer,omitempty" validate:"gte=0"`
	// MaxToolResultBytes bounds one tool result sent to the model (0: 256
	// KiB). A longer one is cut at a character boundary and ends with a
	// line naming the limit and the full size; a LimitEvent reports it.
	MaxToolResultBytes int `json:"max_tool_result_bytes,omitempty" validate:"gte=0"`
	// HTTP tunes timeouts and retries; zero fields take the defaults.
	HTTP struct {
		// Timeout bounds each attempt (default 120 s). A timed-out
		// attempt is not retried.
		Timeout time.Duration `json:"timeout,omitempty" validate:"gte=0"`
		// MaxAttempts is the total number of attempts, first included
		// (default 5).
		MaxAttempts int `json:"max_attempts,omitempty" validate:"gte=0"`
		// BackoffBase is the multiplier of the random exponential backoff
		// (default 0.5 s): attempt n waits a random time in [0, base·2^n).
		BackoffBase time.Duration `json:"backoff_base,omitempty" validate:"gte=0"`
		// BackoffMax caps one backoff (default 60 s).
		BackoffMax time.Duration `json:"backoff_max,omitempty" validate:"gte=0"`
		// RetryAfterMax caps a server's Retry-After (default 300 s).
		RetryAfterMax time.Duration `json:"retry_after_max,omitempty" validate:"gte=0"`
		// MaxResponseBytes bounds the body of one model response, a
		// streamed one whole (default 16 MiB: an answer of the largest
		// output a model writes is far smaller). A larger one fails the
		// call with an error naming the limit, before it is held in memory.
		MaxResponseBytes int64 `json:"max_response_bytes,omitempty" validate:"gte=0"`
	} `json:"http"`
}

// Defaults of the answer limits of [RuntimeConfig].
const (
	defaultMaxParallelToolCalls  = 8
	defaultMaxToolCallsPerAnswer = 64
	defaultMaxToolResultBytes    = 256 << 10
)

// RunUsageLimits bound one run; counters reset every run. Nil means
// unlimited; a set value (e.g. new(50)) must be > 0.
type RunUsageLimits struct {
	// RequestLimit caps model requests per run (default 50).
	RequestLimit *int `json:"run_request_limit,omitempty" validate:"omitempty,gt=0"`
	// ToolCallsLimit caps executed tool calls per run.
	ToolCallsLimit *int `json:"tool_calls_limit,omitempty" validate:"omitempty,gt=0"`
	// InputTokensLimit caps prompt tokens summed over the run.
	InputTokensLimit *int `json:"input_tokens_limit,omitempty" validate:"omitempty,gt=0"`
	// OutputTokensLimit caps completion tokens summed over the run.
	OutputTokensLimit *int `json:"output_tokens_limit,omitempty" validate:"omitempty,gt=0"`
	// TotalTokensLimit caps prompt + completion tokens over the run.
	TotalTokensLimit *int `json:"total_tokens_limit,omitempty" validate:"omitempty,gt=0"`
}

// AgentUsageLimits bound the runner's whole lifetime. All nil (the
// default) never blocks.
type AgentUsageLimits struct {
	// RequestLimit caps the number of runs.
	RequestLimit *int `json:"agent_request_limit,omitempty" validate:"omitempty,gt=0"`
	// InputTokensLimit caps lifetime prompt tokens.
	InputTokensLimit *int `json:"input_tokens_limit,omitempty" validate:"omitempty,gt=0"`
	// OutputTokensLimit caps lifetime completion tokens.
	OutputTokensLimit *int `json:"output_tokens_limit,omitempty" validate:"omitempty,gt=0"`
	// TotalTokensLimit caps lifetime prompt + completion tokens.
	TotalTokensLimit *int `json:"total_tokens_limit,omitempty" validate:"omitempty,gt=0"`
	// SpendLimit caps the agent's lifetime model spend in USD, priced
	// with the runner's price table: before each model call its
	// worst case is reserved: its prompt plus Model.MaxTokens, or without
	// it the model's whole default output (gpt-5: 128,000 tokens, $1.02),
	// so set Model.MaxTokens with a ceiling of less than that or no call
	// is ever made (the refusal says so). A call that could pass the
	// ceiling is not made. A restore recomputes the spend from the usage
	// events.
	SpendLimit *float64 `json:"spend_limit_usd,omitempty" validate:"omitempty,gt=0"`
}

// Compaction strategies.
const (
	strategySummarize     = "summarize"
	strategySlidingWindow = "sliding_window"
	strategyNone          = "none"
)

// CompactionConfig configures context compaction. It has no effect
// unless ModelConfig.ContextLength is set.
type CompactionConfig struct {
	// Strategy is summarize (default), sliding_window or none.
	Strategy string `json:"strategy,omitempty" validate:"omitempty,oneof=summarize sliding_window none"`
	// AutoTrigger compacts before a request once the last prompt exceeded
	// ContextLength × TriggerRatio (true in [DefaultConfig]).
	AutoTrigger bool `json:"auto_trigger"`
	// TriggerRatio in (0, 1] (default 0.85).
	TriggerRatio float64 `json:"trigger_ratio,omitempty" validate:"gte=0,lte=1"`
	// KeepRecentMessages is what sliding_window keeps (default 4).
	KeepRecentMessages int `json:"keep_recent_messages,omitempty" validate:"gte=0"`
	// SummaryTargetTokens is the summary length asked for (default 2000).
	SummaryTargetTokens int `json:"summary_target_tokens,omitempty" validate:"gte=0"`
	// SummarizerPromptVersion selects the summarizer instructions
	// (default v1).
	SummarizerPromptVersion string `json:"summarizer_prompt_version,omitempty"`
	// SummaryModel is the model for the summarizer call (default: the
	// agent's model).
	SummaryModel string `json:"summary_model,omitempty"`
	// MaxMessages, when > 0, is a sliding window on what each request
	// sends: only the last MaxMessages history entries go to the
	// model (the system block is not counted; the history itself is kept
	// whole). The window is extended backwards rather than split an
	// assistant tool-call message from its tool replies. It is exclusive
	// with auto-compaction: set AutoTrigger false (or Strategy none, or
	// leave ModelConfig.ContextLength unset) to use it.
	MaxMessages int `json:"max_messages,omitempty" validate:"gte=0"`
}

// defaultCompaction is summarize, auto-trigger on, ratio 0.85, keep 4,
// target 2000 tokens, prompt v1.
func defaultCompaction() CompactionConfig {
	return CompactionConfig{Strategy: strategySummarize, AutoTrigger: true, TriggerRatio: 0.85,
		KeepRecentMessages: 4, SummaryTargetTokens: 2000, SummarizerPromptVersion: "v1"}
}

func (c CompactionConfig) withDefaults() CompactionConfig {
	d := defaultCompaction()
	if c.Strategy == "" {
		c.Strategy = d.Strategy
	}
	if c.TriggerRatio == 0 {
		c.TriggerRatio = d.TriggerRatio
	}
	if c.KeepRecentMessages == 0 {
		c.KeepRecentMessages = d.KeepRecentMessages
	}
	if c.SummaryTargetTokens == 0 {
		c.SummaryTargetTokens = d.SummaryTargetTokens
	}
	if c.SummarizerPromptVersion == "" {
		c.SummarizerPromptVersion = d.SummarizerPromptVersion
	}
	return c
}

// Config is everything a [Runner] needs besides tools and callbacks.
type Config struct {
	Model       ModelConfig      `json:"model_cfg"`
	Runtime     RuntimeConfig    `json:"runtime_cfg"`
	RunLimits   RunUsageLimits   `json:"run_usage_limits"`
	AgentLimits AgentUsageLimits `json:"agent_usage_limits"`
	Compaction  CompactionConfig `json:"compaction_cfg"`
	// Backstory is the first system-prompt section.
	Backstory string `json:"backstory,omitempty"`
}

// DefaultConfig returns the documented defaults of every part: model
// gpt-5.2 on openai with the key from OPENAI_API_KEY; 3 retries, end
// strategy exhaustive, parallel tool calls unset and the HTTP defaults; a
// run limit of 50 requests and no lifetime limit; compaction summarize with
// auto-trigger on, ratio 0.85, keep 4, a 2000-token target and prompt v1.
func DefaultConfig() Config {
	rt := RuntimeConfig{Retries: 3, EndStrategy: endStrategyExhaustive}
	rt.HTTP = httpConfig{}.withDefaults()
	return Config{
		Model:       ModelConfig{Provider: providerOpenAI, Model: defaultModel, APIKeyEnv: "OPENAI_API_KEY"},
		Runtime:     rt,
		RunLimits:   RunUsageLimits{RequestLimit: new(50)},
		Compaction:  defaultCompaction(),
		AgentLimits: AgentUsageLimits{},
	}
}

var validate = validator.New(validator.WithRequiredStructEnabled())

// Validate checks every field and the cross-field rules, naming what is
// wrong: temperature on a reasoning model, a sliding window together with
// auto-compaction, and a compaction threshold that a run-tier token
// limit would pre-empt.
func (c Config) Validate() error {
	if err := validate.Struct(c); err != nil {
		return fmt.Errorf("llm: invalid config: %w", describeValidation(err))
	}
	if isReasoningModel(c.Model.Model) && c.Model.Temperature != nil && *c.Model.Temperature != 1 {
		return fmt.Errorf("llm: invalid config: model %q is a reasoning model: temperature must be unset or 1, got %g",
			c.Model.Model, *c.Model.Temperature)
	}
	if c.Model.ReasoningEffort != "" && !isReasoningModel(c.Model.Model) {
		return fmt.Errorf("llm: invalid config: reasoning_effort %q needs a reasoning model, %q is not one",
			c.Model.ReasoningEffort, c.Model.Model)
	}
	comp := c.Compaction.withDefaults()
	autoCompaction := comp.AutoTrigger && comp.Strategy != strategyNone && c.Model.ContextLength > 0
	if autoCompaction && comp.MaxMessages > 0 {
		return fmt.Errorf("llm: invalid config: compaction_cfg.max_messages (%d) and compaction_cfg.auto_trigger (on, with strategy %s and context_length %d) are exclusive: set auto_trigger false or strategy none, or drop max_messages",
			comp.MaxMessages, comp.Strategy, c.Model.ContextLength)
	}
	if autoCompaction {
		threshold := int(math.Floor(float64(c.Model.ContextLength) * comp.TriggerRatio))
		for name, lim := range map[string]*int{"input_tokens_limit": c.RunLimits.InputTokensLimit, "total_tokens_limit": c.RunLimits.TotalTokensLimit} {
			if lim != nil && threshold >= *lim {
				return fmt.Errorf("llm: invalid config: compaction threshold %d (context_length %d × trigger_ratio %g) must be below run %s %d, or compaction would never fire",
					threshold, c.Model.ContextLength, comp.TriggerRatio, name, *lim)
			}
		}
	}
	return nil
}

// describeValidation turns validator errors into one line per field.
func describeValidation(err error) error {
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		return err
	}
	parts := make([]string, 0, len(verrs))
	for _, fe := range verrs {
		rule := fe.Tag()
		if fe.Param() != "" {
			rule += "=" + fe.Param()
		}
		parts = append(parts, fmt.Sprintf("%s: value %v fails %s", strings.TrimPrefix(fe.Namespace(), "Config."), valueOf(fe.Value()), rule))
	}
	return errors.New(strings.Join(parts, "; "))
}

func valueOf(v any) any {
	switch p := v.(type) {
	case *int:
		if p != nil {
			return *p
		}
	case *float32:
		if p != nil {
			return *p
		}
	}
	return v
}
