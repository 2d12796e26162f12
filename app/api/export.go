package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/chatstate"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/wire"
	"github.com/chatd/chatd/store"
)

// exportRoutes: GET /chats/{chat}/export and POST /chats/import (issue 33).
func (s *Server) exportRoutes(chat func(method, path string, h func(http.ResponseWriter, *http.Request, *caller) error)) {
	chat("GET", "/chats/{chat}/export", s.exportChat)
	for _, prefix := range []string{"/api/v2", "/api/experimental"} {
		s.mux.Handle("POST "+prefix+"/chats/import", s.instrument("POST /api/*/chats/import",
			s.handle(s.authedBody(s.importLimit(), s.limitWrites(s.importChat)))))
	}
}

// importLimit is the body cap of POST /chats/import: the usual cap plus
// room for four files at the file size cap inline (base64 is 4/3 of the
// bytes).
func (s *Server) importLimit() int64 {
	n := s.cfg.MaxBodyBytes
	if s.deps.Files != nil {
		n += 4 * s.deps.Files.Config().MaxFileBytes * 4 / 3
	}
	return n
}

// exportChat answers a chat the caller may see as JSON (lossless) or
// Markdown (to read), as an attachment.
func (s *Server) exportChat(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, err := pathUUID(r, "chat")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	format := q.Get("format")
	if format == "" {
		format = "json"
	}
	if format != "json" && format != "markdown" {
		return validation("format", "format must be json or markdown")
	}
	inline := false
	switch q.Get("files") {
	case "", "reference":
	case "inline":
		inline = format == "json"
	default:
		return validation("files", "files must be inline or reference")
	}
	var out sdk.ChatExport
	err = s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		chat, err := s.readChat(r.Context(), c, tx, id)
		if err != nil {
			return err
		}
		out, err = buildExport(r.Context(), tx, chat, inline)
		return err
	})
	if err != nil {
		return err
	}
	out.ExportID = uuid.New()
	out.ExportedAt = s.deps.Clock.Now().UTC()
	name := exportFileName(out.Chat.Title, out.ExportedAt)
	h := w.Header()
	if format == "markdown" {
		h.Set("Content-Type", "text/markdown; charset=utf-8")
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name + ".md"}))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(exportMarkdown(out)))
		return nil
	}
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name + ".json"}))
	writeJSON(w, http.StatusOK, out)
	return nil
}

// buildExport reads a chat's metadata, the active branch and the files it
// references, in one snapshot.
func buildExport(ctx context.Context, tx store.Reader, chat store.Chat, inline bool) (sdk.ChatExport, error) {
	out := sdk.ChatExport{Format: sdk.ExportFormat, Version: sdk.ExportVersion, Messages: []sdk.ChatExportMessage{}, Files: []sdk.ChatExportFile{}}
	wc := wire.ToChat(chat)
	out.Chat = sdk.ChatExportChat{
		ID: chat.ID, Title: chat.Title, LastModelConfigID: wc.LastModelConfigID, ProjectID: wc.ProjectID,
		LastReasoningEffort: chat.LastReasoningEffort, Labels: chat.Labels, ToolApproval: wc.ToolApproval,
		MCPServerIDs: chat.MCPServerIDs, CreatedAt: chat.CreatedAt, UnsafeDynamicTools: []sdk.DynamicTool{},
	}
	if out.Chat.Labels == nil {
		out.Chat.Labels = map[string]string{}
	}
	if len(chat.DynamicTools) > 0 {
		if err := json.Unmarshal(chat.DynamicTools, &out.Chat.UnsafeDynamicTools); err != nil {
			return out, fmt.Errorf("decode the dynamic tools of chat %s: %w", chat.ID, err)
		}
	}
	var err error
	if out.Chat.SystemPrompt, err = tx.ChatSystemPromptGet(ctx, chat.ID); err != nil {
		return out, err
	}
	ms, err := tx.MessageList(ctx, chat.ID, store.MessageListParams{})
	if err != nil {
		return out, err
	}
	seen := map[uuid.UUID]bool{}
	for _, m := range ms {
		if m.Deleted {
			continue
		}
		wm := wire.ToMessage(m)
		em := sdk.ChatExportMessage{
			ID: m.ID, Role: m.Role, Visibility: m.Visibility, Compressed: m.Compressed, Content: wm.Content,
			ModelConfigID: wm.ModelConfigID, ReasoningEffort: m.ReasoningEffort, Usage: wm.Usage, CreatedAt: m.CreatedAt,
		}
		if em.Visibility == "" {
			em.Visibility = store.VisibilityBoth
		}
		out.Messages = append(out.Messages, em)
		for _, p := range wm.Content {
			if p.Type != sdk.PartFile || p.FileID == nil || seen[*p.FileID] {
				continue
			}
			seen[*p.FileID] = true
			f, err := tx.FileGet(ctx, *p.FileID)
			if errors.Is(err, store.ErrNotFound) {
				continue // evicted: the part keeps its name and type
			}
			if err != nil {
				return out, err
			}
			ef := sdk.ChatExportFile{ID: f.ID, Name: f.Name, MediaType: f.MediaType, Size: f.Size}
			if inline {
				ef.Content = f.Content
			}
			out.Files = append(out.Files, ef)
		}
	}
	return out, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// exportFileName is "chat-<title>-<date>", the title cut to ASCII words.
func exportFileName(title string, at time.Time) string {
	t := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(title), "-"), "-.")
	if len(t) > 60 {
		t = strings.TrimRight(t[:60], "-.")
	}
	if t == "" {
		t = "chat"
	}
	return "chat-" + t + "-" + at.Format("2006-01-02")
}

// exportMarkdown renders an export for people: the title, the system
// prompt, then each message people see with its tool calls and results.
func exportMarkdown(e sdk.ChatExport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", oneLine(e.Chat.Title))
	fmt.Fprintf(&b, "_Exported from chatd on %s (chat %s)._\n\n", e.ExportedAt.Format(time.RFC3339), e.Chat.ID)
	if e.Chat.SystemPrompt != "" {
		b.WriteString("**System prompt**\n\n")
		b.WriteString(quote(e.Chat.SystemPrompt))
		b.WriteString("\n\n")
	}
	names := map[uuid.UUID]string{}
	for _, f := range e.Files {
		names[f.ID] = f.Name
	}
	for _, m := range e.Messages {
		if m.Visibility == store.VisibilityModel || m.Role == store.RoleSystem {
			continue
		}
		fmt.Fprintf(&b, "## %s · %s\n\n", roleTitle(m.Role), m.CreatedAt.UTC().Format("2006-01-02 15:04"))
		for _, p := range m.Content {
			switch p.Type {
			case sdk.PartText:
				b.WriteString(strings.TrimSpace(p.Text))
				b.WriteString("\n\n")
			case sdk.PartReasoning:
				b.WriteString("<details><summary>Reasoning</summary>\n\n")
				b.WriteString(strings.TrimSpace(p.Text))
				b.WriteString("\n\n</details>\n\n")
			case sdk.PartToolCall:
				fmt.Fprintf(&b, "**Tool call** `%s` (%s)\n\n%s\n", oneLine(p.ToolName), oneLine(p.ToolCallID), fence("json", prettyJSON(p.Args)))
			case sdk.PartToolResult:
				label := "**Tool result**"
				if p.IsError {
					label = "**Tool error**"
				}
				fmt.Fprintf(&b, "%s `%s` (%s)\n\n%s\n", label, oneLine(p.ToolName), oneLine(p.ToolCallID), fence("json", prettyJSON(withoutMedia(p.Result))))
			case sdk.PartFile:
				name := p.Name
				if p.FileID != nil && names[*p.FileID] != "" {
					name = names[*p.FileID]
				}
				fmt.Fprintf(&b, "_Attached file: %s (%s)_\n\n", oneLine(name), oneLine(p.MediaType))
			case sdk.PartSource:
				fmt.Fprintf(&b, "_Source: [%s](%s)_\n\n", oneLine(p.Title), oneLine(p.URL))
			}
		}
	}
	return b.String()
}

func roleTitle(role string) string {
	switch role {
	case store.RoleUser:
		return "User"
	case store.RoleAssistant:
		return "Assistant"
	case store.RoleTool:
		return "Tool"
	}
	return role
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func quote(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = "> " + l
	}
	return strings.Join(lines, "\n")
}

// withoutMedia replaces the base64 data of a tool result's image and audio
// blocks ({"content": [{"type": "image", "mimeType", "data"}]}, as MCP
// tools answer) with a note of its size, so the Markdown a person reads
// does not hold pages of base64. The JSON export keeps the data.
func withoutMedia(raw json.RawMessage) json.RawMessage {
	var whole map[string]any
	if json.Unmarshal(raw, &whole) != nil {
		return raw
	}
	content, _ := whole["content"].([]any)
	changed := false
	for _, b := range content {
		block, _ := b.(map[string]any)
		data, ok := block["data"].(string)
		if kind := block["type"]; !ok || (kind != "image" && kind != "audio") {
			continue
		}
		block["data"] = fmt.Sprintf("[%d characters of base64]", len(data))
		changed = true
	}
	if !changed {
		return raw
	}
	out, err := json.Marshal(whole)
	if err != nil {
		return raw
	}
	return out
}

func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return string(out)
}

// fence wraps text in a code fence longer than any backtick run in it.
func fence(lang, text string) string {
	n := 3
	for run, i := 0, 0; i < len(text); i++ {
		if text[i] == '`' {
			run++
			n = max(n, run+1)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", n)
	return f + lang + "\n" + text + "\n" + f + "\n"
}

// importChat makes a new chat of the caller from a JSON export; a second
// import of the same export (export_id) answers the chat the first made.
func (s *Server) importChat(w http.ResponseWriter, r *http.Request, c *caller) error {
	var e sdk.ChatExport
	if err := decodeJSON(r, &e); err != nil {
		return err
	}
	if e.Format != sdk.ExportFormat || e.Version != sdk.ExportVersion {
		return newError(http.StatusBadRequest, sdk.CodeImportUnsupported, "This is not a chat export this server reads.",
			fmt.Sprintf("format %q version %d; want %q version %d", e.Format, e.Version, sdk.ExportFormat, sdk.ExportVersion))
	}
	if e.ExportID == uuid.Nil {
		return validation("export_id", "export_id is missing")
	}
	exportID := e.ExportID.String()
	// An import already made answers at once (no file is stored again).
	if chat, ok, err := s.priorImport(r.Context(), c, exportID); err != nil || ok {
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, chat)
		return nil
	}
	p, err := s.importParams(r.Context(), c, e)
	if err != nil {
		return err
	}
	var res chatstate.Result
	var existing bool
	err = s.deps.Machine.Do(r.Context(), func(t *chatstate.Tx) error {
		if err := s.checkChatQuota(r, t, c.user.ID); err != nil {
			return err
		}
		var err error
		res, existing, err = t.Import(p)
		return err
	})
	if errors.Is(err, store.ErrConflict) {
		// A concurrent import of the same export won: answer its chat.
		if chat, ok, err := s.priorImport(r.Context(), c, exportID); err != nil || ok {
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusOK, chat)
			return nil
		}
	}
	if err != nil {
		return err
	}
	out := wire.ToChat(res.Chat)
	out.SystemPrompt = p.SystemPrompt
	status := http.StatusCreated
	if existing {
		status = http.StatusOK
		if out.SystemPrompt, err = s.systemPrompt(r.Context(), res.Chat.ID); err != nil {
			return err
		}
	}
	writeJSON(w, status, out)
	return nil
}

func (s *Server) systemPrompt(ctx context.Context, chatID uuid.UUID) (string, error) {
	var text string
	err := s.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		text, err = tx.ChatSystemPromptGet(ctx, chatID)
		return err
	})
	return text, err
}

// priorImport reads the chat the caller's earlier import of an export made.
func (s *Server) priorImport(ctx context.Context, c *caller, exportID string) (sdk.Chat, bool, error) {
	var out sdk.Chat
	found := false
	err := s.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		id, err := tx.ChatImportGet(ctx, c.user.ID, exportID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		chat, err := tx.ChatGet(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		found, out = true, wire.ToChat(chat)
		out.SystemPrompt, err = tx.ChatSystemPromptGet(ctx, id)
		return err
	})
	return out, found, err
}

var importRoles = map[string]bool{store.RoleUser: true, store.RoleAssistant: true, store.RoleTool: true, store.RoleSystem: true}

var importVisibilities = map[string]bool{store.VisibilityBoth: true, store.VisibilityUser: true, store.VisibilityModel: true}

// importParams checks an export and turns it into chatstate's terms:
// inline files are stored as the caller's (unlinked until the import
// links them), a referenced file stays referenced when the caller owns
// it, and any other file part becomes a text note saying it was dropped.
func (s *Server) importParams(ctx context.Context, c *caller, e sdk.ChatExport) (chatstate.ImportParams, error) {
	p := chatstate.ImportParams{
		OwnerID: c.user.ID, ExportID: e.ExportID.String(), Title: strings.TrimSpace(e.Chat.Title),
		SystemPrompt: e.Chat.SystemPrompt, Labels: e.Chat.Labels, ToolApproval: e.Chat.ToolApproval,
		ReasoningEffort: e.Chat.LastReasoningEffort,
	}
	if p.Title == "" {
		p.Title = "Imported chat"
	}
	if len(p.Title) > maxTitleLen {
		p.Title = chatstate.FallbackTitle(p.Title, maxTitleLen)
	}
	if err := errors.Join(checkLabels(p.Labels), checkEffort("chat.last_reasoning_effort", p.ReasoningEffort)); err != nil {
		return p, firstError(err)
	}
	if err := s.checkCreateLimits(p.SystemPrompt, len(e.Chat.UnsafeDynamicTools)); err != nil {
		return p, err
	}
	if e.Chat.LastModelConfigID != nil && s.checkModel("model_config_id", optUUID(e.Chat.LastModelConfigID)) == nil {
		p.ModelConfigID = optUUID(e.Chat.LastModelConfigID)
	}
	if len(e.Chat.UnsafeDynamicTools) > 0 {
		tools, err := dynamicTools(e.Chat.UnsafeDynamicTools)
		if err != nil {
			return p, err
		}
		p.DynamicTools = tools
	}
	if e.Chat.ProjectID != nil {
		err := s.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
			pr, err := tx.ProjectGet(ctx, *e.Chat.ProjectID)
			if err == nil && pr.OwnerID == c.user.ID {
				p.ProjectID = uuid.NullUUID{UUID: pr.ID, Valid: true}
			}
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return err
		})
		if err != nil {
			return p, err
		}
	}
	if len(e.Messages) == 0 {
		return p, validation("messages", "the export has no messages")
	}
	// The messages are checked before any inline file is stored.
	for i, m := range e.Messages {
		field := fmt.Sprintf("messages[%d]", i)
		if !importRoles[m.Role] {
			return p, validation(field+".role", fmt.Sprintf("unknown role %q", m.Role))
		}
		if m.Visibility != "" && !importVisibilities[m.Visibility] {
			return p, validation(field+".visibility", fmt.Sprintf("unknown visibility %q", m.Visibility))
		}
	}
	files, err := s.importFiles(ctx, c, e, &p)
	if err != nil {
		return p, err
	}
	for i, m := range e.Messages {
		field := fmt.Sprintf("messages[%d]", i)
		if m.Visibility == "" {
			m.Visibility = store.VisibilityBoth
		}
		parts := make([]sdk.ChatMessagePart, 0, len(m.Content))
		for _, part := range m.Content {
			if part.Type == sdk.PartFile {
				part = importFilePart(part, files)
			}
			parts = append(parts, part)
		}
		content, err := json.Marshal(parts)
		if err != nil {
			return p, validation(field+".content", err.Error())
		}
		row := store.Message{
			Role: m.Role, Content: content, Visibility: m.Visibility, Compressed: m.Compressed,
			ModelConfigID: optUUID(m.ModelConfigID), ReasoningEffort: m.ReasoningEffort, CreatedAt: m.CreatedAt,
		}
		if m.Role == store.RoleUser {
			row.CreatedBy = uuid.NullUUID{UUID: c.user.ID, Valid: true}
		}
		if m.Usage != nil {
			u := store.Usage(*m.Usage)
			row.Usage = &u
		}
		if row.CreatedAt.IsZero() {
			row.CreatedAt = s.deps.Clock.Now()
		}
		p.Messages = append(p.Messages, row)
	}
	return p, nil
}

// importFiles stores the export's inline files as the caller's, and maps
// every file id the export names to the id the new chat uses (uuid.Nil:
// dropped).
func (s *Server) importFiles(ctx context.Context, c *caller, e sdk.ChatExport, p *chatstate.ImportParams) (map[uuid.UUID]uuid.UUID, error) {
	ids := map[uuid.UUID]uuid.UUID{}
	for i, f := range e.Files {
		if _, dup := ids[f.ID]; dup {
			continue
		}
		switch {
		case f.Content != nil:
			if s.deps.Files == nil {
				return nil, validation(fmt.Sprintf("files[%d]", i), "this server takes no files")
			}
			stored, err := s.deps.Files.Upload(ctx, c.user.ID, f.Name, f.MediaType, f.Content)
			if err != nil {
				return nil, fileError(err)
			}
			ids[f.ID] = stored.ID
			p.Files = append(p.Files, stored.ID)
		case s.deps.Files != nil:
			if _, err := s.deps.Files.Get(ctx, c.user.ID, f.ID); err == nil {
				ids[f.ID] = f.ID // the caller's own file: referenced as it is
			} else {
				ids[f.ID] = uuid.Nil
			}
		default:
			ids[f.ID] = uuid.Nil
		}
	}
	if len(p.Files) > s.fileCap() {
		return nil, validation("files", fmt.Sprintf("%d inline files; a chat holds at most %d", len(p.Files), s.fileCap()))
	}
	return ids, nil
}

// importFilePart maps a file part to the imported chat's file, or to a
// note when the file was not imported.
func importFilePart(part sdk.ChatMessagePart, ids map[uuid.UUID]uuid.UUID) sdk.ChatMessagePart {
	if part.FileID != nil {
		if id, ok := ids[*part.FileID]; ok && id != uuid.Nil {
			part.FileID = &id
			return part
		}
	} else if part.URL != "" {
		return part
	}
	name := part.Name
	if name == "" {
		name = "a file"
	}
	return sdk.ChatMessagePart{Type: sdk.PartText, Text: fmt.Sprintf("[%s (%s) was not imported: the export did not include it and it is not a file of yours]", name, part.MediaType)}
}
