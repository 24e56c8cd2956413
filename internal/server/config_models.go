package server

import (
	"errors"
	"fmt"

	"github.com/agentslice/agentslice/internal/model"
)

// modelConfig picks the model: the scripted model for Script, the named
// catalog entry, or the simulated model.
func (c *Config) modelConfig() (model.Config, error) {
	switch {
	case c.Script != "" && c.Models != nil:
		return model.Config{}, &ConfigError{Field: "script", Reason: "set together with models; use one of them"}
	case c.Script != "" && c.Model != "":
		return model.Config{}, &ConfigError{Field: "model", Reason: "names a catalog model but script is set and there is no catalog"}
	case c.Script != "":
		mc := model.Config{Name: "scripted", Provider: model.ProviderScripted, ModelID: "scripted",
			ContextWindow: 200000, MaxOutputTokens: 8192, Scripted: &model.ScriptedConfig{Path: c.Script}}
		if _, err := model.LoadScript(c.Script); err != nil {
			return model.Config{}, &ConfigError{Field: "script", Reason: err.Error()}
		}
		return mc, nil
	case c.Models != nil:
		if err := c.Models.Validate(); err != nil {
			return model.Config{}, prefixModelError(err)
		}
		mc, err := c.Models.Lookup(c.Model)
		if err != nil {
			var me *model.ConfigError
			if errors.As(err, &me) {
				return model.Config{}, &ConfigError{Field: "model", Reason: fmt.Sprintf("%q %s", me.Model, me.Reason)}
			}
			return model.Config{}, &ConfigError{Field: "model", Reason: err.Error()}
		}
		return mc, nil
	case c.Model != "":
		return model.Config{}, &ConfigError{Field: "model", Reason: fmt.Sprintf("names %q but there is no models catalog", c.Model)}
	}
	return model.Config{Name: "sim", Provider: model.ProviderSim, ModelID: "sim", ContextWindow: 200000, MaxOutputTokens: 8192}, nil
}

func prefixModelError(err error) error {
	var me *model.ConfigError
	if !errors.As(err, &me) {
		return &ConfigError{Field: "models", Reason: err.Error()}
	}
	field := "models"
	if me.Field != "" {
		field += "." + me.Field
	}
	reason := me.Reason
	if me.Model != "" {
		reason = fmt.Sprintf("model %q: %s", me.Model, me.Reason)
	}
	return &ConfigError{Field: field, Reason: reason}
}
