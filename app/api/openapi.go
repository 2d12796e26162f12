package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
)

// OpenAPIPath is where the API's OpenAPI 3.1 document is served, without
// auth.
const OpenAPIPath = "/api/v2/openapi.json"

// operation describes one route of the document: its request and response
// bodies are values of the SDK types, turned into schemas by reflection so
// the document follows the types (openapi_test.go checks it follows the
// routes).
type operation struct {
	method, path string
	summary      string
	// request is the JSON body's type (nil: no body).
	request any
	// status is the success status; response its body (nil: none).
	status   int
	response any
	// noAuth marks the routes that take no session.
	noAuth bool
	// websocket marks a WebSocket upgrade (the frames are in API.md):
	// response is then the type of the server's frames, clientFrame the
	// client's (x-client-frame).
	websocket   bool
	clientFrame any
}

// operations lists every /api/v2 route. A route added to the mux without
// a line here fails TestOpenAPIMatchesRoutes.
var operations = []operation{
	{method: "POST", path: "/chats", summary: "Create a chat", request: sdk.CreateChatRequest{}, status: 201, response: sdk.CreateChatResponse{}},
	{method: "GET", path: "/chats", summary: "List chats", status: 200, response: []sdk.Chat{}},
	{method: "GET", path: "/chats/models", summary: "List models", status: 200, response: sdk.ChatModelsResponse{}},
	{method: "GET", path: "/chats/model-configs", summary: "List model configs", status: 200, response: []sdk.ChatModelConfig{}},
	{method: "POST", path: "/chats/model-configs", summary: "Create a model config (admin)", request: sdk.CreateChatModelConfigRequest{}, status: 201, response: sdk.ChatModelConfig{}},
	{method: "PATCH", path: "/chats/model-configs/{modelConfig}", summary: "Update a model config (admin)", request: sdk.UpdateChatModelConfigRequest{}, status: 200, response: sdk.ChatModelConfig{}},
	{method: "DELETE", path: "/chats/model-configs/{modelConfig}", summary: "Delete a model config (admin)", status: 204},
	{method: "GET", path: "/chats/providers", summary: "List providers (admin)", status: 200, response: []sdk.ChatProviderConfig{}},
	{method: "POST", path: "/chats/providers", summary: "Create a provider (admin)", request: sdk.CreateChatProviderConfigRequest{}, status: 201, response: sdk.ChatProviderConfig{}},
	{method: "PATCH", path: "/chats/providers/{provider}", summary: "Update a provider (admin)", request: sdk.UpdateChatProviderConfigRequest{}, status: 200, response: sdk.ChatProviderConfig{}},
	{method: "DELETE", path: "/chats/providers/{provider}", summary: "Delete a provider (admin)", status: 204},
	{method: "POST", path: "/chats/providers/{provider}/test", summary: "Test a provider's connection and list its models (admin)", status: 200, response: sdk.ChatProviderTest{}},
	{method: "POST", path: "/chats/model-configs/{modelConfig}/test", summary: "Test a model config with one tiny generation (admin)", status: 200, response: sdk.ChatModelConfigTest{}},
	{method: "GET", path: "/chats/mcp-servers", summary: "List MCP servers", status: 200, response: []sdk.MCPServer{}},
	{method: "POST", path: "/chats/mcp-servers", summary: "Create an MCP server (admin)", request: sdk.MCPServerRequest{}, status: 201, response: sdk.MCPServer{}},
	{method: "PATCH", path: "/chats/mcp-servers/{id}", summary: "Update an MCP server (admin)", request: sdk.MCPServerRequest{}, status: 200, response: sdk.MCPServer{}},
	{method: "DELETE", path: "/chats/mcp-servers/{id}", summary: "Delete an MCP server (admin)", status: 204},
	{method: "POST", path: "/chats/mcp-servers/{id}/test", summary: "Test an MCP server (admin)", status: 200, response: sdk.MCPServerTest{}},
	{method: "POST", path: "/chats/mcp-servers/{id}/reconnect", summary: "Reconnect an MCP server, authorizing it again (admin)", status: 204},
	{method: "POST", path: "/chats/mcp-servers/{id}/connect", summary: "Connect a per-user MCP server as the caller", status: 200, response: sdk.MCPAuthStatus{}},
	{method: "POST", path: "/chats/mcp-servers/{id}/disconnect", summary: "Disconnect the caller from a per-user MCP server", status: 204},
	{method: "GET", path: "/chats/mcp-servers/{id}/resources", summary: "List an MCP server's resources and resource templates", status: 200, response: sdk.MCPResourceList{}},
	{method: "GET", path: "/chats/mcp-servers/{id}/resources/read", summary: "Read an MCP server's resource (?uri=)", status: 200, response: sdk.MCPResourceRead{}},
	{method: "GET", path: "/chats/mcp-servers/{id}/prompts", summary: "List an MCP server's prompts", status: 200, response: sdk.MCPPromptList{}},
	{method: "POST", path: "/chats/mcp-servers/{id}/prompts/{name}/get", summary: "Render an MCP server's prompt", request: sdk.MCPPromptGetRequest{}, status: 200, response: sdk.MCPPromptResult{}},
	{method: "GET", path: "/chats/watch", summary: "Watch the chat list (WebSocket of ChatWatchEvent)", status: 101, response: sdk.ChatWatchEvent{}, websocket: true},
	{method: "GET", path: "/chats/{chat}", summary: "Get a chat", status: 200, response: sdk.Chat{}},
	{method: "PATCH", path: "/chats/{chat}", summary: "Update a chat", request: sdk.UpdateChatRequest{}, status: 204},
	{method: "DELETE", path: "/chats/{chat}", summary: "Delete a chat", status: 204},
	{method: "GET", path: "/chats/{chat}/export", summary: "Export a chat (format=json|markdown, files=inline)", status: 200, response: sdk.ChatExport{}},
	{method: "POST", path: "/chats/import", summary: "Import a chat export as a new chat (200: imported before)", request: sdk.ChatExport{}, status: 201, response: sdk.Chat{}},
	{method: "GET", path: "/chats/{chat}/messages", summary: "List a chat's messages", status: 200, response: sdk.ChatMessagesResponse{}},
	{method: "POST", path: "/chats/{chat}/messages", summary: "Send a message", request: sdk.CreateChatMessageRequest{}, status: 200, response: sdk.CreateChatMessageResponse{}},
	{method: "PATCH", path: "/chats/{chat}/messages/{message}", summary: "Edit a message", request: sdk.EditChatMessageRequest{}, status: 200, response: sdk.EditChatMessageResponse{}},
	{method: "POST", path: "/chats/{chat}/messages/{message}/regenerate", summary: "Regenerate a reply (a new version)", request: sdk.RegenerateMessageRequest{}, status: 200, response: sdk.BranchResponse{}},
	{method: "POST", path: "/chats/{chat}/branch", summary: "Switch the active branch", request: sdk.SwitchBranchRequest{}, status: 200, response: sdk.BranchResponse{}},
	{method: "POST", path: "/chats/{chat}/fork", summary: "Fork a chat from a message", request: sdk.ForkChatRequest{}, status: 201, response: sdk.Chat{}},
	{method: "DELETE", path: "/chats/{chat}/queue/{queuedMessage}", summary: "Delete a queued message", status: 204},
	{method: "POST", path: "/chats/{chat}/queue/{queuedMessage}/promote", summary: "Promote a queued message", status: 204},
	{method: "POST", path: "/chats/{chat}/interrupt", summary: "Interrupt a chat", status: 200, response: sdk.Chat{}},
	{method: "POST", path: "/chats/{chat}/tool-results", summary: "Submit client tool results", request: sdk.SubmitToolResultsRequest{}, status: 204},
	{method: "POST", path: "/chats/{chat}/tool-approvals", summary: "Answer tool approvals", request: sdk.SubmitToolApprovalsRequest{}, status: 204},
	{method: "GET", path: "/chats/{chat}/elicitations", summary: "List an MCP server's pending questions", status: 200, response: []sdk.Elicitation{}},
	{method: "POST", path: "/chats/{chat}/elicitation-responses", summary: "Answer an MCP server's question", request: sdk.ElicitationResponse{}, status: 204},
	{method: "POST", path: "/chats/{chat}/compact", summary: "Compact a chat", status: 200, response: sdk.Chat{}},
	{method: "POST", path: "/chats/{chat}/clear", summary: "Clear a chat", status: 200, response: sdk.Chat{}},
	{method: "POST", path: "/chats/{chat}/reconcile-invalid", summary: "Reconcile an invalid chat", status: 200, response: sdk.Chat{}},
	{method: "POST", path: "/chats/{chat}/tool-calls/{tool_call_id}/reconcile", summary: "Reconcile a tool call", request: sdk.ReconcileRequest{}, status: 200, response: sdk.ReconcileResponse{}},
	{method: "GET", path: "/chats/{chat}/stream", summary: "Stream a chat (WebSocket of ChatStreamEvent)", status: 101, response: sdk.ChatStreamEvent{}, websocket: true},
	{method: "GET", path: "/chats/{chat}/stream/parts", summary: "Stream a chat's live parts (WebSocket of PartFrame)", status: 101, response: sdk.PartFrame{}, websocket: true, clientFrame: sdk.EpisodeSelect{}},
	{method: "GET", path: "/requests/{request_id}", summary: "Look up a durable request", status: 200, response: sdk.CreateChatMessageResponse{}},
	{method: "POST", path: "/requests/{request_id}/reconcile", summary: "Reconcile a durable request", request: sdk.ReconcileRequest{}, status: 200, response: sdk.ReconcileResponse{}},
	{method: "GET", path: "/users/me", summary: "The caller", status: 200, response: sdk.User{}},
	{method: "GET", path: "/users", summary: "List users (admin)", status: 200, response: sdk.UsersResponse{}},
	{method: "POST", path: "/users", summary: "Create a user (admin)", request: sdk.CreateUserRequest{}, status: 201, response: sdk.User{}},
	{method: "PATCH", path: "/users/{user}", summary: "Update a user", request: sdk.UpdateUserRequest{}, status: 200, response: sdk.User{}},
	{method: "GET", path: "/users/{user}/tokens", summary: "List a user's tokens", status: 200, response: []sdk.APIKey{}},
	{method: "GET", path: "/users/{user}/usage", summary: "A user's token usage and cost (from, to, group_by=day|model|chat) and budget state", status: 200, response: sdk.UsageResponse{}},
	{method: "GET", path: "/usage", summary: "Everyone's token usage and cost (admin; group_by=user|day|model|chat)", status: 200, response: sdk.UsageResponse{}},
	{method: "POST", path: "/users/{user}/tokens", summary: "Create a token", request: sdk.CreateTokenRequest{}, status: 201, response: sdk.GenerateAPIKeyResponse{}},
	{method: "DELETE", path: "/users/{user}/tokens/{token}", summary: "Revoke a token", status: 204},
	{method: "POST", path: "/users/{user}/login-link", summary: "Create a one-time login link for a user (admin)", status: 201, response: sdk.LoginLink{}},
	{method: "POST", path: "/files", summary: "Upload a file (raw body with its Content-Type, or multipart field file)", status: 201, response: sdk.UploadFileResponse{}},
	{method: "POST", path: "/chats/files", summary: "Upload a file (Coder's path)", status: 201, response: sdk.UploadFileResponse{}},
	{method: "GET", path: "/files/limits", summary: "The upload limits and the caller's used bytes", status: 200, response: sdk.FileLimits{}},
	{method: "GET", path: "/files/{file}", summary: "Download one of the caller's files (raw bytes)", status: 200},
	{method: "GET", path: "/admin/backup", summary: "A consistent snapshot of the SQLite database (admin; application/vnd.sqlite3)", status: 200},
	{method: "POST", path: "/chats/{chat}/schedules", summary: "Create a schedule", request: sdk.CreateScheduleRequest{}, status: 201, response: sdk.Schedule{}},
	{method: "GET", path: "/chats/{chat}/schedules", summary: "List a chat's schedules", status: 200, response: []sdk.Schedule{}},
	{method: "PATCH", path: "/chats/{chat}/schedules/{id}", summary: "Update a schedule", request: sdk.UpdateScheduleRequest{}, status: 200, response: sdk.Schedule{}},
	{method: "DELETE", path: "/chats/{chat}/schedules/{id}", summary: "Delete a schedule", status: 204},
	{method: "GET", path: "/chats/{chat}/schedules/{id}/runs", summary: "List a schedule's runs", status: 200, response: []sdk.ScheduleRun{}},
	{method: "GET", path: "/schedules", summary: "List schedules (the caller's; admins all)", status: 200, response: []sdk.Schedule{}},
	{method: "POST", path: "/webhooks", summary: "Register a webhook", request: sdk.CreateWebhookRequest{}, status: 201, response: sdk.Webhook{}},
	{method: "GET", path: "/webhooks", summary: "List webhooks (the caller's; admins all)", status: 200, response: []sdk.Webhook{}},
	{method: "DELETE", path: "/webhooks/{id}", summary: "Delete a webhook", status: 204},
	{method: "GET", path: "/webhooks/{id}/deliveries", summary: "List a webhook's deliveries", status: 200, response: []sdk.WebhookDelivery{}},
	{method: "POST", path: "/projects", summary: "Create a project", request: sdk.CreateProjectRequest{}, status: 201, response: sdk.Project{}},
	{method: "GET", path: "/projects", summary: "List projects", status: 200, response: []sdk.Project{}},
	{method: "GET", path: "/projects/{project}", summary: "Get a project", status: 200, response: sdk.Project{}},
	{method: "PATCH", path: "/projects/{project}", summary: "Update a project", request: sdk.UpdateProjectRequest{}, status: 200, response: sdk.Project{}},
	{method: "DELETE", path: "/projects/{project}", summary: "Delete a project", status: 204},
	{method: "GET", path: "/projects/{project}/memories", summary: "List a project's memories", status: 200, response: []sdk.ProjectMemory{}},
	{method: "GET", path: "/projects/{project}/memories/{name}", summary: "Get a memory", status: 200, response: sdk.ProjectMemory{}},
	{method: "PUT", path: "/projects/{project}/memories/{name}", summary: "Write a memory", request: sdk.PutMemoryRequest{}, status: 200, response: sdk.ProjectMemory{}},
	{method: "DELETE", path: "/projects/{project}/memories/{name}", summary: "Delete a memory", status: 204},
	{method: "POST", path: "/auth/login", summary: "Log in", request: sdk.LoginRequest{}, status: 200, response: sdk.User{}, noAuth: true},
	{method: "POST", path: "/auth/logout", summary: "Log out", status: 204, noAuth: true},
	{method: "GET", path: "/openapi.json", summary: "This document", status: 200, noAuth: true},
	// The AI SDK UI message stream (app/aisdk; API.md): the bodies are the
	// `ai` package's, not the SDK's.
	{method: "POST", path: "/ai-sdk/chat", summary: "AI SDK: send ({id, messages, trigger, messageId}); answers the UI message stream (text/event-stream)", request: map[string]any{}, status: 200},
	{method: "GET", path: "/ai-sdk/chat/{id}/stream", summary: "AI SDK: resume the running turn (text/event-stream; 204 when idle)", status: 200},
	{method: "GET", path: "/ai-sdk/chat/{id}/messages", summary: "AI SDK: the chat's history as UIMessage[]", status: 200, response: []map[string]any{}},
	{method: "POST", path: "/ai-sdk/chat/{id}/interrupt", summary: "AI SDK: interrupt the chat the id names", status: 200, response: sdk.Chat{}},
}

// OpenAPI returns the API's OpenAPI 3.1 document.
func OpenAPI() map[string]any {
	g := &schemaGen{components: map[string]any{}}
	paths := map[string]map[string]any{}
	param := regexp.MustCompile(`\{([^}]+)\}`)
	for _, op := range operations {
		item := paths[op.path]
		if item == nil {
			item = map[string]any{}
			paths[op.path] = item
		}
		o := map[string]any{
			"summary":     op.summary,
			"operationId": operationID(op),
		}
		var params []any
		for _, m := range param.FindAllStringSubmatch(op.path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		if params != nil {
			o["parameters"] = params
		}
		if op.noAuth {
			o["security"] = []any{}
		}
		if op.request != nil {
			o["requestBody"] = map[string]any{"required": true, "content": map[string]any{
				"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(op.request))},
			}}
		}
		if op.clientFrame != nil {
			o["x-client-frame"] = g.schema(reflect.TypeOf(op.clientFrame))
		}
		resp := map[string]any{"description": http.StatusText(op.status)}
		switch {
		case op.websocket:
			resp["description"] = "WebSocket upgrade; each text frame is one JSON value of the schema (docs/API.md)"
			resp["content"] = map[string]any{"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(op.response))}}
		case op.response != nil:
			resp["content"] = map[string]any{"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(op.response))}}
		}
		o["responses"] = map[string]any{
			fmt.Sprint(op.status): resp,
			"default": map[string]any{"description": "An error (docs/API.md, Errors)", "content": map[string]any{
				"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(sdk.Response{}))},
			}},
		}
		item[strings.ToLower(op.method)] = o
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info":    map[string]any{"title": "chatd API", "version": "2"},
		"servers": []any{map[string]any{"url": "/api/v2"}},
		"paths":   paths,
		"components": map[string]any{
			"schemas": g.components,
			"securitySchemes": map[string]any{
				"sessionToken":  map[string]any{"type": "apiKey", "in": "header", "name": "Coder-Session-Token"},
				"sessionCookie": map[string]any{"type": "apiKey", "in": "cookie", "name": SessionCookie},
			},
		},
		"security": []any{map[string]any{"sessionToken": []any{}}, map[string]any{"sessionCookie": []any{}}},
	}
}

// operationID is op's method and path as one word ("postChatsChatInterrupt").
func operationID(op operation) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(op.method))
	for _, word := range strings.FieldsFunc(op.path, func(r rune) bool { return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') }) {
		b.WriteString(strings.ToUpper(word[:1]) + word[1:])
	}
	return b.String()
}

var (
	uuidType    = reflect.TypeFor[uuid.UUID]()
	timeType    = reflect.TypeFor[time.Time]()
	rawJSONType = reflect.TypeFor[json.RawMessage]()
	marshaler   = reflect.TypeFor[json.Marshaler]()
)

// customSchemas are the SDK types with their own JSON encoding.
var customSchemas = map[reflect.Type]map[string]any{
	reflect.TypeFor[sdk.MCPServerSelection](): {"type": "array", "items": map[string]any{"type": "string", "format": "uuid"}},
	reflect.TypeFor[sdk.ProjectSelection]():   {"type": []any{"string", "null"}, "format": "uuid"},
}

// schemaGen turns Go types into JSON Schemas (the 2020-12 dialect of
// OpenAPI 3.1), named struct types becoming components.
type schemaGen struct {
	components map[string]any
}

// schema returns t's schema: a $ref for a named struct, inline otherwise.
func (g *schemaGen) schema(t reflect.Type) map[string]any {
	if s, ok := customSchemas[t]; ok {
		return s
	}
	switch t {
	case uuidType:
		return map[string]any{"type": "string", "format": "uuid"}
	case timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case rawJSONType:
		return map[string]any{} // any JSON value
	}
	switch t.Kind() {
	case reflect.Pointer:
		inner := g.schema(t.Elem())
		return map[string]any{"anyOf": []any{inner, map[string]any{"type": "null"}}}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t)
		}
		name := t.Name()
		if _, ok := g.components[name]; !ok {
			g.components[name] = nil // a placeholder against recursion
			g.components[name] = g.object(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	case reflect.Interface:
		return map[string]any{}
	}
	if t.Implements(marshaler) {
		return map[string]any{}
	}
	panic(fmt.Sprintf("openapi: no schema for %s", t))
}

// object is a struct's schema: its JSON fields as properties, the ones
// without omitempty/omitzero required.
func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	for _, f := range jsonFields(t) {
		props[f.name] = g.schema(f.typ)
		if !f.optional {
			required = append(required, f.name)
		}
	}
	out := map[string]any{"type": "object", "properties": props}
	if required != nil {
		slices.Sort(required)
		out["required"] = required
	}
	return out
}

// jsonField is one field as encoding/json sees it.
type jsonField struct {
	name     string
	typ      reflect.Type
	optional bool
}

// jsonFields lists t's JSON fields the way encoding/json names them,
// promoting the fields of embedded structs.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, jsonFields(ft)...)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		optional := false
		for _, o := range strings.Split(opts, ",") {
			if o == "omitempty" || o == "omitzero" {
				optional = true
			}
		}
		out = append(out, jsonField{name: name, typ: f.Type, optional: optional})
	}
	return out
}

var openAPIDoc = sync.OnceValue(func() []byte {
	b, err := json.MarshalIndent(OpenAPI(), "", "  ")
	if err != nil {
		panic(fmt.Sprintf("openapi: %v", err))
	}
	return b
})

// openAPIRoute serves the document without auth.
func (s *Server) openAPIRoute() {
	s.mux.Handle("GET "+OpenAPIPath, s.instrument("GET "+OpenAPIPath, s.handle(func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Content-Type", "application/json")
		_, err := w.Write(openAPIDoc())
		return err
	})))
}

// routeMux is the ServeMux that remembers the patterns registered on it
// (Server.Routes).
type routeMux struct {
	*http.ServeMux
	mu       sync.Mutex
	patterns []string
}

// Handle registers h and records pattern.
func (m *routeMux) Handle(pattern string, h http.Handler) {
	m.ServeMux.Handle(pattern, h)
	m.mu.Lock()
	m.patterns = append(m.patterns, pattern)
	m.mu.Unlock()
}

// Routes returns every pattern registered on the server's mux, sorted,
// including the ones the app added (streams, UI).
func (s *Server) Routes() []string {
	s.mux.mu.Lock()
	defer s.mux.mu.Unlock()
	out := slices.Clone(s.mux.patterns)
	slices.Sort(out)
	return out
}
