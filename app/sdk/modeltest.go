package sdk

// ChatModelConfigTest answers POST /chats/model-configs/{id}/test: one
// tiny generation through the config's provider and model. It has the
// fields of ChatProviderTest (models is always empty here) plus how long
// the call took and the start of the reply.
type ChatModelConfigTest struct {
	ChatProviderTest
	// LatencyMS is the time from the request to the end of the reply (or
	// of the failure), in milliseconds.
	LatencyMS int64 `json:"latency_ms"`
	// Sample is the start of the model's reply text (empty on failure).
	Sample string `json:"sample"`
}
