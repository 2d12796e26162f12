package sdk

import (
	"context"
	"net/http"
	"net/url"

	"github.com/google/uuid"
)

// Error codes of the MCP resource and prompt routes.
const (
	// CodeMCPServerUnavailable: the MCP server is disabled, failed or
	// otherwise not connected now (409); GET /chats/mcp-servers shows why.
	CodeMCPServerUnavailable = "MCP_SERVER_UNAVAILABLE"
	// CodeMCPUnsupported: the connected server does not offer the feature
	// asked for (it announced no resources, or no prompts capability; 409).
	CodeMCPUnsupported = "MCP_UNSUPPORTED"
	// CodeMCPServerError: the server answered the request with an error
	// that is not about the caller's input (502).
	CodeMCPServerError = "MCP_SERVER_ERROR"
)

// PartMCPResource is an input part naming an MCP server's resource:
// {type: "mcp_resource", server_id, uri}. The server resolves it when the
// message is admitted: it reads the resource and stores each of its
// contents as a file, so the stored message holds file parts (the model
// gets them as attachments) and replays never read the server again.
const PartMCPResource = "mcp_resource"

// MCPResource is one resource an MCP server lists.
type MCPResource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mime_type,omitempty"`
	// Size is the raw size in bytes, when the server says (0: unknown).
	Size int64 `json:"size,omitempty"`
}

// MCPResourceTemplate is a resource template (an RFC 6570 URI template)
// an MCP server lists; a URI made from it can be read.
type MCPResourceTemplate struct {
	URITemplate string `json:"uri_template"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mime_type,omitempty"`
}

// MCPResourceList is the answer of GET
// /chats/mcp-servers/{id}/resources[?cursor=]: one page of the server's
// resources/list, as the server pages it (NextCursor, when not empty,
// asks for the next page). The first page (no cursor) also carries the
// server's resource templates, every page of them collapsed, at most
// MaxMCPListItems (TemplatesTruncated says more were left out); later
// pages carry none.
type MCPResourceList struct {
	Resources          []MCPResource         `json:"resources"`
	Templates          []MCPResourceTemplate `json:"resource_templates"`
	TemplatesTruncated bool                  `json:"resource_templates_truncated,omitempty"`
	NextCursor         string                `json:"next_cursor,omitempty"`
}

// MaxMCPListItems caps the resource templates one list answer gathers
// from a server's pages.
const MaxMCPListItems = 1000

// MCPResourceContents is one of a read resource's contents: Text, or Blob
// (base64 on the wire).
type MCPResourceContents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mime_type,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     []byte `json:"blob,omitempty"`
}

// MCPResourceRead is the answer of GET
// /chats/mcp-servers/{id}/resources/read?uri=URI.
type MCPResourceRead struct {
	Contents []MCPResourceContents `json:"contents"`
}

// MCPPromptArgument is one argument of a prompt (a string).
type MCPPromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required"`
}

// MCPPrompt is one prompt (a message template) an MCP server lists.
type MCPPrompt struct {
	Name        string              `json:"name"`
	Title       string              `json:"title,omitempty"`
	Description string              `json:"description,omitempty"`
	Arguments   []MCPPromptArgument `json:"arguments"`
}

// MCPPromptList is the answer of GET
// /chats/mcp-servers/{id}/prompts[?cursor=]: one page of the server's
// prompts/list, as the server pages it (NextCursor, when not empty, asks
// for the next page).
type MCPPromptList struct {
	Prompts    []MCPPrompt `json:"prompts"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

// MCPPromptGetRequest is the body of POST
// /chats/mcp-servers/{id}/prompts/{name}/get.
type MCPPromptGetRequest struct {
	Arguments map[string]string `json:"arguments,omitempty"`
}

// MCPContentPart is one content block of a rendered prompt message: text
// (Text), image or audio (MIMEType, Data in base64), resource (an
// embedded resource: URI, MIMEType, Text or Data) or resource_link (URI,
// Name, Title, Description, MIMEType).
type MCPContentPart struct {
	Type        string `json:"type"`
	Text        string `json:"text,omitempty"`
	MIMEType    string `json:"mime_type,omitempty"`
	Data        []byte `json:"data,omitempty"`
	URI         string `json:"uri,omitempty"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
}

// MCPPromptMessage is one message of a rendered prompt.
type MCPPromptMessage struct {
	// Role is user or assistant.
	Role    string           `json:"role"`
	Content []MCPContentPart `json:"content"`
}

// MCPPromptResult is a rendered prompt.
type MCPPromptResult struct {
	Description string             `json:"description,omitempty"`
	Messages    []MCPPromptMessage `json:"messages"`
}

// MCPResources lists one page of an MCP server's resources (cursor ""
// for the first, then the last page's NextCursor); the first page also
// carries its resource templates.
func (c *Client) MCPResources(ctx context.Context, server uuid.UUID, cursor string) (MCPResourceList, error) {
	var out MCPResourceList
	return out, c.Do(ctx, http.MethodGet, "/chats/mcp-servers/"+server.String()+"/resources"+cursorQuery(cursor), nil, &out)
}

func cursorQuery(cursor string) string {
	if cursor == "" {
		return ""
	}
	return "?cursor=" + url.QueryEscape(cursor)
}

// ReadMCPResource reads one resource of an MCP server.
func (c *Client) ReadMCPResource(ctx context.Context, server uuid.UUID, uri string) (MCPResourceRead, error) {
	var out MCPResourceRead
	path := "/chats/mcp-servers/" + server.String() + "/resources/read?uri=" + url.QueryEscape(uri)
	return out, c.Do(ctx, http.MethodGet, path, nil, &out)
}

// MCPPrompts lists one page of an MCP server's prompts (cursor "" for
// the first, then the last page's NextCursor).
func (c *Client) MCPPrompts(ctx context.Context, server uuid.UUID, cursor string) (MCPPromptList, error) {
	var out MCPPromptList
	return out, c.Do(ctx, http.MethodGet, "/chats/mcp-servers/"+server.String()+"/prompts"+cursorQuery(cursor), nil, &out)
}

// GetMCPPrompt renders an MCP server's prompt with args.
func (c *Client) GetMCPPrompt(ctx context.Context, server uuid.UUID, name string, args map[string]string) (MCPPromptResult, error) {
	var out MCPPromptResult
	path := "/chats/mcp-servers/" + server.String() + "/prompts/" + url.PathEscape(name) + "/get"
	return out, c.Do(ctx, http.MethodPost, path, MCPPromptGetRequest{Arguments: args}, &out)
}

// MCPResourcePart is an input part attaching an MCP server's resource to a
// message (PartMCPResource).
func MCPResourcePart(server uuid.UUID, uri string) ChatMessagePart {
	return ChatMessagePart{Type: PartMCPResource, ServerID: &server, URI: uri}
}
