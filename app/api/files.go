package api

// Files (attachments): upload, download and the limits, and the check of
// the file parts of user input. Coder's upload path POST /chats/files is
// served too; its download path GET /chats/files/{id} is not: Go's
// ServeMux refuses to register it next to GET /chats/{chat}/messages (a
// path like /chats/files/messages matches both and neither is more
// specific), so files are read at GET /files/{id}.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/files"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// multipartOverhead is what a multipart body may add to the file it carries
// (boundaries, part headers, other small fields).
const multipartOverhead = 64 << 10

func (s *Server) fileRoutes() {
	if s.deps.Files == nil {
		return
	}
	for _, prefix := range []string{"/api/v2", "/api/experimental"} {
		upload := s.instrument("POST /api/*/files", s.handle(s.authedBody(s.uploadLimit(), s.limitWrites(s.uploadFile))))
		s.mux.Handle("POST "+prefix+"/files", upload)
		s.mux.Handle("POST "+prefix+"/chats/files", upload) // Coder's path
		s.mux.Handle("GET "+prefix+"/files/limits", s.instrument("GET /api/*/files/limits", s.handle(s.authed(s.fileLimits))))
		s.mux.Handle("GET "+prefix+"/files/{file}", s.instrument("GET /api/*/files/{file}", s.handle(s.authed(s.getFile))))
	}
}

// fileCap is the most files a chat holds (what chatstate links against).
func (s *Server) fileCap() int {
	if s.deps.Files == nil {
		return files.DefaultMaxPerChat
	}
	return s.deps.Files.Config().MaxPerChat
}

// UploadHeader must be on uploads authenticated by the session cookie (the
// UI's): an upload's body is the file, not JSON, so the cross-site check
// asks for a header a page of another origin cannot add without a CORS
// preflight, which chatd never grants.
const UploadHeader = "X-Chatd-Upload"

// uploadPaths are the upload routes, for the cross-site check.
var uploadPaths = map[string]bool{
	"/api/v2/files": true, "/api/experimental/files": true,
	"/api/v2/chats/files": true, "/api/experimental/chats/files": true,
}

func isUpload(r *http.Request) bool { return r.Method == http.MethodPost && uploadPaths[r.URL.Path] }

func requireUploadHeader(r *http.Request) error {
	if r.Header.Get(UploadHeader) == "" {
		return forbidden("an upload authenticated by the session cookie must carry the " + UploadHeader + " header")
	}
	return nil
}

// uploadLimit is the body cap of the upload routes: the file cap plus
// room for a multipart envelope. Every other route keeps MaxBodyBytes.
func (s *Server) uploadLimit() int64 {
	return s.deps.Files.Config().MaxFileBytes + multipartOverhead
}

// authedBody is authed with its own body cap.
func (s *Server) authedBody(limit int64, h func(http.ResponseWriter, *http.Request, *caller) error) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		u, err := s.Authenticate(r)
		if err != nil {
			return err
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		return h(w, r, &caller{user: u})
	}
}

// uploadFile stores the body (raw, typed by Content-Type, named by ?name= or
// Content-Disposition) or a multipart/form-data body's "file" field.
func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request, c *caller) error {
	name, declared, content, err := readUpload(r)
	if err != nil {
		return err
	}
	f, err := s.deps.Files.Upload(r.Context(), c.user.ID, name, declared, content)
	if err != nil {
		return fileError(err)
	}
	writeJSON(w, http.StatusCreated, sdk.UploadFileResponse{
		ID: f.ID, Name: f.Name, MediaType: f.MediaType, Size: f.Size, CreatedAt: f.CreatedAt,
	})
	return nil
}

func readUpload(r *http.Request) (name, declared string, content []byte, err error) {
	ct := r.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	if mt != "multipart/form-data" {
		content, err = io.ReadAll(r.Body)
		if err != nil {
			return "", "", nil, decodeError(err)
		}
		name = r.URL.Query().Get("name")
		if _, params, err := mime.ParseMediaType(r.Header.Get("Content-Disposition")); name == "" && err == nil {
			name = params["filename"]
		}
		return name, ct, content, nil
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return "", "", nil, validation("body", "malformed multipart body: "+err.Error())
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return "", "", nil, validation("file", `the multipart body has no "file" field`)
		}
		if err != nil {
			return "", "", nil, multipartError(err)
		}
		if part.FormName() != "file" {
			_, _ = io.Copy(io.Discard, part)
			continue
		}
		content, err = io.ReadAll(part)
		if err != nil {
			return "", "", nil, multipartError(err)
		}
		return part.FileName(), part.Header.Get("Content-Type"), content, nil
	}
}

func multipartError(err error) error {
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		return decodeError(err)
	}
	return validation("body", "malformed multipart body: "+err.Error())
}

// fileError maps the files package's refusals.
func fileError(err error) error {
	switch {
	case errors.Is(err, files.ErrTooLarge):
		return newError(http.StatusRequestEntityTooLarge, sdk.CodeTooLarge, "The file is too large.", err.Error())
	case errors.Is(err, files.ErrLimitReached):
		return errLimitReached(err.Error())
	case errors.Is(err, files.ErrQuota):
		return newError(http.StatusConflict, sdk.CodeFileQuotaExceeded,
			"Your files use up your storage quota; files no chat uses are removed after a while.", err.Error())
	case errors.Is(err, files.ErrBadContent):
		return validation("file", err.Error())
	case errors.Is(err, files.ErrNotFound):
		return errFileNotFound
	}
	return err
}

var errFileNotFound = newError(http.StatusNotFound, sdk.CodeNotFound, "File not found.", "")

// getFile serves a file to its owner, typed so a browser never runs it.
func (s *Server) getFile(w http.ResponseWriter, r *http.Request, c *caller) error {
	id, err := pathUUID(r, "file")
	if err != nil {
		return err
	}
	f, err := s.deps.Files.Get(r.Context(), c.user.ID, id)
	if err != nil {
		return fileError(err)
	}
	contentType, disposition := files.Serving(f)
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Disposition", disposition)
	h.Set("Content-Length", strconv.FormatInt(int64(len(f.Content)), 10))
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, max-age=3600") // a file's bytes never change
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(f.Content)
	}
	return nil
}

// fileLimits answers the limits the UI shows before an upload.
func (s *Server) fileLimits(w http.ResponseWriter, r *http.Request, c *caller) error {
	cfg := s.deps.Files.Config()
	var used int64
	if err := s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		var err error
		used, err = tx.FileBytesByOwner(r.Context(), c.user.ID)
		return err
	}); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sdk.FileLimits{
		MaxFileBytes: cfg.MaxFileBytes, QuotaBytes: cfg.QuotaBytes, UsedBytes: used,
		MaxFilesPerChat: cfg.MaxPerChat, RetentionSeconds: int64(cfg.Retention.Seconds()),
		ImageTypes: files.ImageTypes(), DocumentTypes: files.DocumentTypes(),
	})
	return nil
}

// takesImages reports whether a model config takes images.
func takesImages(m sdk.ChatModel) bool { return files.TakesImages(m.Provider, m.Model) }

// takesPDF reports whether a model config reads PDFs.
func takesPDF(m sdk.ChatModel) bool { return files.TakesPDF(m.Provider, m.Model) }

// modelFor is the model config a turn runs on: the one named, else the
// chat's last one, else the default.
func (s *Server) modelFor(ctx context.Context, named uuid.NullUUID, chatID uuid.NullUUID) sdk.ChatModel {
	id := named
	if !id.Valid && chatID.Valid {
		_ = s.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
			chat, err := tx.ChatGet(ctx, chatID.UUID)
			if err == nil {
				id = chat.LastModelConfigID
			}
			return nil
		})
	}
	models := s.deps.Models.List()
	var def sdk.ChatModel
	for _, m := range models {
		if id.Valid && m.ID == id.UUID {
			return m
		}
		if m.IsDefault || m.Default {
			def = m
		}
	}
	if def.ID == uuid.Nil && len(models) > 0 {
		def = models[0]
	}
	return def
}

// checkFiles completes and checks the file parts of user input: each must
// be one of the caller's files (another user's is reported like a missing
// one), an image or a PDF the turn's model takes, or text; its media type and name
// are copied into the part. chatID is the chat the input goes to (none
// for a create).
func (s *Server) checkFiles(ctx context.Context, c *caller, parts []sdk.ChatMessagePart, model uuid.NullUUID, chatID uuid.NullUUID) error {
	var (
		m      sdk.ChatModel
		looked bool
	)
	for i := range parts {
		p := &parts[i]
		if p.Type != sdk.PartFile {
			continue
		}
		field := fmt.Sprintf("content[%d].file_id", i)
		if s.deps.Files == nil {
			return validation(field, "file attachments are not enabled on this server")
		}
		f, err := s.deps.Files.Get(ctx, c.user.ID, *p.FileID)
		if errors.Is(err, files.ErrNotFound) {
			return validation(field, fmt.Sprintf("file %s does not exist (upload it with POST /api/v2/files)", *p.FileID))
		}
		if err != nil {
			return err
		}
		p.MediaType, p.Name = f.MediaType, f.Name
		switch {
		case files.IsImage(f.MediaType):
			if !looked {
				m, looked = s.modelFor(ctx, model, chatID), true
			}
			if !takesImages(m) {
				return validation(field, fmt.Sprintf("the model %s/%s does not take images; choose a vision model or remove the image %q",
					m.Provider, m.Model, f.Name))
			}
		case files.IsDocument(f.MediaType):
			if !looked {
				m, looked = s.modelFor(ctx, model, chatID), true
			}
			if !takesPDF(m) {
				return validation(field, fmt.Sprintf("model %s/%s does not accept PDF files; choose an OpenAI or Anthropic vision model or remove %q",
					m.Provider, m.Model, f.Name))
			}
		case files.IsText(f.MediaType):
		default:
			return validation(field, files.Unsupported(f.MediaType))
		}
	}
	return nil
}

// filePart is the stored shape of an input file part (decode.go).
func filePart(field string, p sdk.ChatMessagePart) (sdk.ChatMessagePart, error) {
	if p.FileID == nil || *p.FileID == uuid.Nil {
		return sdk.ChatMessagePart{}, validation(field+".file_id", "a file part needs file_id (from POST /api/v2/files)")
	}
	id := *p.FileID
	return sdk.ChatMessagePart{Type: sdk.PartFile, FileID: &id, Name: strings.TrimSpace(p.Name)}, nil
}
