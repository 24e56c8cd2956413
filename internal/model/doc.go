// Package model holds the model providers behind runtime.Model: a simulated
// model (benchmarks, tests), a scripted model that replays a JSON script,
// and the real providers.
//
// Providers stream into the runtime's turn buffer and never write history
// themselves. They return plain errors for what is worth retrying
// (throttling, 5xx, a broken stream) and runtime.Permanent errors for what
// is not (bad request, access denied).
package model
