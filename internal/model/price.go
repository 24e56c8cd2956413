package model

import "github.com/agentslice/agentslice/internal/runtime"

// Price is a model's price list in US dollars per million tokens. The
// figures are the user's to keep current (see Config.Price).
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read,omitempty"`
	CacheWrite float64 `json:"cache_write,omitempty"`
}

// ModelPrice returns c's prices as the engine's budgets use them, and
// false when c has none. OpenAI-compatible servers count cache reads in
// their prompt tokens; Bedrock does not.
func (c *Config) ModelPrice() (runtime.ModelPrice, bool) {
	mp := runtime.ModelPrice{MaxOutputTokens: c.MaxOutputTokens, InputIncludesCached: c.Provider == ProviderOpenAI}
	if c.Price == nil {
		return mp, false
	}
	p := c.Price
	mp.Input, mp.Output, mp.CacheRead, mp.CacheWrite = p.Input, p.Output, p.CacheRead, p.CacheWrite
	return mp, true
}

// Price implements runtime.Pricer: the prices of the model named name ("" is
// the default). A model without prices, or a name not in the catalog,
// reports false with its max output tokens when known, so reservations
// still plan for a whole completion.
func (c *Catalog) Price(name string) (runtime.ModelPrice, bool) {
	m, err := c.Lookup(name)
	if err != nil {
		return runtime.ModelPrice{}, false
	}
	return m.ModelPrice()
}

var _ runtime.Pricer = (*Catalog)(nil)
