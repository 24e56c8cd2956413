// Package model holds the model providers behind runtime.Model: a simulated
// model (benchmarks, tests, and serve's default, which answers with
// DemoReply's short deterministic replies), a scripted model that replays a JSON script,
// Amazon Bedrock (ConverseStream) and OpenAI-compatible chat completions
// (OpenAI, vLLM, Ollama, LM Studio, gateways), and the typed catalog that
// says which model a deployment runs (Config, Catalog, FromConfig).
//
// A provider maps a thread's history (runtime.Item) and the agent's
// instructions (CompletionRequest.System: Bedrock system blocks, an OpenAI
// system or developer message) to its wire format,
// streams one completion into a runtime.TurnWriter and reports token usage.
// It must not retry on its own, keep state between completions, or decide
// which of several streamed tool calls runs: the engine owns retries (with
// jittered backoff inside the slice deadline) and its turn buffer keeps the
// first tool call. SDK-level retries are switched off (zero retries) so that
// they never multiply with the engine's. Providers never write history.
//
// Error kinds returned by Complete:
//   - *runtime.PermanentError (test with runtime.IsPermanent): the request can
//     never succeed as sent (bad request, access denied, unknown model). The
//     message names the model and the reason. The engine ends the slice with
//     a failure item in history and an error reply.
//   - any other error is transient (throttling, 5xx, a stream that broke
//     mid-turn, a transport failure): the engine discards what was streamed
//     and retries the completion, and, with a runtime.ProviderWait, waits
//     for the provider through a timer once its attempts are spent. One
//     that answered with a Retry-After header implements
//     runtime.RetryAfterError (OpenAI-compatible and Bedrock alike).
//
// Errors from Config.Validate, DecodeCatalog and FromConfig are *ConfigError
// values naming the field at fault.
package model
