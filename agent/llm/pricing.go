package llm

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

//go:embed pricing.json
var defaultPricingJSON []byte

// Price is a model's price in USD per million tokens.
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read"`
	CacheWrite float64 `json:"cache_write"`
	// MaxOutput is the model's default maximum completion in tokens:
	// what a spend ceiling reserves for a call without max_tokens; 0
	// assumes 16,384.
	MaxOutput int `json:"max_output,omitempty"`
}

// PriceTable maps model-name keys to prices. A model's price is the entry
// whose key is the longest substring of the model name, so dated names like
// gpt-4.1-mini-2025-04-14 find gpt-4.1-mini. A table is immutable
// once built and safe for concurrent use.
type PriceTable struct {
	// Version names the table's edition.
	Version string
	prices  map[string]Price
	keys    []string // longest first
}

// parsePriceTable reads a table in the embedded format:
// {"version": "...", "models": {"gpt-4.1": {"input": 2, "output": 8,
// "cache_read": 0.5, "cache_write": 2}, ...}}.
func parsePriceTable(r io.Reader) (*PriceTable, error) {
	var doc struct {
		Version  string           `json:"version"`
		Currency string           `json:"currency"`
		Unit     string           `json:"unit"`
		Models   map[string]Price `json:"models"`
	}
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("llm: price table: %w", err)
	}
	t := newPriceTable(doc.Version, doc.Models)
	for _, k := range t.keys {
		p := t.prices[k]
		if k == "" || p.Input < 0 || p.Output < 0 || p.CacheRead < 0 || p.CacheWrite < 0 || p.MaxOutput < 0 {
			return nil, fmt.Errorf("llm: price table: model %q: empty key or negative price", k)
		}
	}
	return t, nil
}

// newPriceTable builds a table from a map (copied).
func newPriceTable(version string, prices map[string]Price) *PriceTable {
	t := &PriceTable{Version: version, prices: maps.Clone(prices)}
	if t.prices == nil {
		t.prices = map[string]Price{}
	}
	t.keys = slices.SortedFunc(maps.Keys(t.prices), func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return t
}

var defaultPrices = func() *PriceTable {
	t, err := parsePriceTable(strings.NewReader(string(defaultPricingJSON)))
	if err != nil {
		return newPriceTable("invalid", nil) // unreachable: the embedded table is tested
	}
	return t
}()

// DefaultPriceTable returns the embedded, versioned table.
func DefaultPriceTable() *PriceTable { return defaultPrices }

// With returns a copy of t with the given entries added or replaced: the
// way a user overrides or extends the defaults.
func (t *PriceTable) With(prices map[string]Price) *PriceTable {
	merged := maps.Clone(t.prices)
	maps.Copy(merged, prices)
	return newPriceTable(t.Version+"+custom", merged)
}

// lookup returns the price of model and whether any key matched.
func (t *PriceTable) lookup(model string) (Price, bool) {
	for _, k := range t.keys {
		if strings.Contains(model, k) {
			return t.prices[k], true
		}
	}
	return Price{}, false
}

// Cost prices one usage record: uncached input at the
// input price, cache reads at the cache price, never negative.
func (t *PriceTable) Cost(model string, input, output, cacheRead, cacheWrite int) float64 {
	p, ok := t.lookup(model)
	if !ok {
		return 0
	}
	uncached := max(input-cacheRead, 0)
	return (float64(uncached)*p.Input + float64(cacheRead)*p.CacheRead +
		float64(output)*p.Output + float64(cacheWrite)*p.CacheWrite) / 1e6
}

// ModelUsage is one model's share of a summary.
type ModelUsage struct {
	ModelName        string  `json:"model_name"`
	ProviderName     string  `json:"provider_name"`
	InputTokens      int     `json:"input_tokens"`
	OutputTokens     int     `json:"output_tokens"`
	CacheReadTokens  int     `json:"cache_read_tokens"`
	CacheWriteTokens int     `json:"cache_write_tokens"`
	Requests         int     `json:"requests"`
	Cost             float64 `json:"cost"`
}

// RunUsage is one run's share of a summary.
type RunUsage struct {
	RunID        string       `json:"run_id"`
	ByModel      []ModelUsage `json:"by_model"`
	InputTokens  int          `json:"input_tokens"`
	OutputTokens int          `json:"output_tokens"`
	Cost         float64      `json:"cost"`
}

// UsageSummary aggregates usage events.
type UsageSummary struct {
	// ByModel has one entry per model name, in first-seen order.
	ByModel          []ModelUsage `json:"by_model"`
	InputTokens      int          `json:"input_tokens"`
	OutputTokens     int          `json:"output_tokens"`
	CacheReadTokens  int          `json:"cache_read_tokens"`
	CacheWriteTokens int          `json:"cache_write_tokens"`
	Requests         int          `json:"requests"`
	Cost             float64      `json:"cost"`
	// Runs is filled when aggregating by run: one entry per run id in
	// first-seen order.
	Runs []RunUsage `json:"runs"`
}

// Aggregate sums events per model (priced with t, nil meaning the default
// table) and, when byRun is set, per run. Costs are recomputed from
// the tokens, so a table override applies to old events too. The events
// of failed calls (ErrorType set) used nothing and are left out.
func Aggregate(events []UsageEvent, byRun bool, t *PriceTable) UsageSummary {
	events = slices.DeleteFunc(slices.Clone(events), func(e UsageEvent) bool { return e.ErrorType != "" })
	if t == nil {
		t = DefaultPriceTable()
	}
	sum := UsageSummary{ByModel: byModel(events, t), Runs: []RunUsage{}}
	for _, m := range sum.ByModel {
		sum.InputTokens += m.InputTokens
		sum.OutputTokens += m.OutputTokens
		sum.CacheReadTokens += m.CacheReadTokens
		sum.CacheWriteTokens += m.CacheWriteTokens
		sum.Requests += m.Requests
		sum.Cost += m.Cost
	}
	if !byRun {
		return sum
	}
	var order []string
	perRun := map[string][]UsageEvent{}
	for _, e := range events {
		if _, seen := perRun[e.RunID]; !seen {
			order = append(order, e.RunID)
		}
		perRun[e.RunID] = append(perRun[e.RunID], e)
	}
	for _, id := range order {
		ru := RunUsage{RunID: id, ByModel: byModel(perRun[id], t)}
		for _, m := range ru.ByModel {
			ru.InputTokens += m.InputTokens
			ru.OutputTokens += m.OutputTokens
			ru.Cost += m.Cost
		}
		sum.Runs = append(sum.Runs, ru)
	}
	return sum
}

func byModel(events []UsageEvent, t *PriceTable) []ModelUsage {
	out := []ModelUsage{}
	index := map[string]int{}
	for _, e := range events {
		i, ok := index[e.ModelName]
		if !ok {
			i = len(out)
			index[e.ModelName] = i
			out = append(out, ModelUsage{ModelName: e.ModelName, ProviderName: e.ProviderName})
		}
		m := &out[i]
		m.InputTokens += e.InputTokens
		m.OutputTokens += e.OutputTokens
		m.CacheReadTokens += e.CacheReadTokens
		m.CacheWriteTokens += e.CacheWriteTokens
		m.Requests += e.Requests
	}
	for i := range out {
		m := &out[i]
		m.Cost = t.Cost(m.ModelName, m.InputTokens, m.OutputTokens, m.CacheReadTokens, m.CacheWriteTokens)
	}
	return out
}
