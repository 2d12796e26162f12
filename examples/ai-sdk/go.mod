// This directory is a Node project, not Go code: its own (empty) module
// keeps `go build ./...` and `go vet ./...` of chatd out of node_modules.
module example.invalid/chatd-ai-sdk-example
