// Package files holds chatd's attachment rules: which media types a file is
// stored and served as, the upload size cap and per-user quota, how a file
// reaches a model (an image, a PDF, text, or refused), and the removal of
// files no chat references. Uploads and removals are not chat state: this package
// writes them itself; the link of a file to a chat is written by
// app/chatstate inside the transition that uses it.
package files

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/llm/modelinfo"
	"github.com/chatd/chatd/store"
)

// Defaults for Config's zero values.
const (
	DefaultMaxFileBytes int64 = 10 << 20 // 10 MiB per file
	DefaultQuotaBytes   int64 = 1 << 30  // 1 GiB per user
	DefaultRetention          = 24 * time.Hour
	DefaultMaxPerChat         = 50
	DefaultMaxPerUser         = 10000 // files one user holds, linked or not
	// MaxTextFileBytes caps how much of a text file a model is given.
	MaxTextFileBytes = 256 << 10
)

// Config holds the attachment limits. Zero values take the Defaults.
type Config struct {
	// MaxFileBytes caps one upload (413 beyond).
	MaxFileBytes int64
	// QuotaBytes caps the bytes of all of a user's files (409 beyond).
	QuotaBytes int64
	// Retention is how long a file no chat references is kept.
	Retention time.Duration
	// MaxPerChat is the most files one chat holds; the earliest uploaded
	// are evicted beyond it (spec: CODER_CHAT_MAX_ATTACHMENTS_PER_CHAT).
	MaxPerChat int
	// MaxPerUser caps how many files a user holds, linked to a chat or
	// not (ErrLimitReached beyond); negative: unlimited.
	MaxPerUser int
}

// WithDefaults fills zero fields with the Defaults.
func (c Config) WithDefaults() Config {
	if c.MaxFileBytes <= 0 {
		c.MaxFileBytes = DefaultMaxFileBytes
	}
	if c.QuotaBytes <= 0 {
		c.QuotaBytes = DefaultQuotaBytes
	}
	if c.Retention <= 0 {
		c.Retention = DefaultRetention
	}
	if c.MaxPerChat <= 0 {
		c.MaxPerChat = DefaultMaxPerChat
	}
	if c.MaxPerUser == 0 {
		c.MaxPerUser = DefaultMaxPerUser
	}
	return c
}

// Errors of uploads.
var (
	// ErrTooLarge: the file is larger than MaxFileBytes.
	ErrTooLarge = errors.New("file is too large")
	// ErrQuota: the upload would take its owner past QuotaBytes.
	ErrQuota = errors.New("file quota exceeded")
	// ErrLimitReached: the owner holds MaxPerUser files.
	ErrLimitReached = errors.New("file count limit reached")
	// ErrBadContent: the bytes contradict the declared media type.
	ErrBadContent = errors.New("file content does not match its type")
	// ErrNotFound: no such file, or not the caller's.
	ErrNotFound = store.ErrNotFound
)

// Service stores and serves files.
type Service struct {
	store store.Store
	clock clock.Clock
	cfg   Config
}

// New returns a Service over s; cfg's zero fields take the defaults.
func New(s store.Store, clk clock.Clock, cfg Config) *Service {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Service{store: s, clock: clk, cfg: cfg.WithDefaults()}
}

// Config returns the limits in force.
func (s *Service) Config() Config { return s.cfg }

// Upload stores content as a new file of owner's, typed by MediaType.
func (s *Service) Upload(ctx context.Context, owner uuid.UUID, name, declared string, content []byte) (store.File, error) {
	if int64(len(content)) > s.cfg.MaxFileBytes {
		return store.File{}, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(content), s.cfg.MaxFileBytes)
	}
	mediaType, err := MediaType(declared, content)
	if err != nil {
		return store.File{}, err
	}
	var f store.File
	err = s.store.InTx(ctx, func(tx store.Tx) error {
		// The owner's lock serialises concurrent uploads' quota checks.
		if err := tx.UserLock(ctx, owner); err != nil {
			return err
		}
		used, err := tx.FileBytesByOwner(ctx, owner)
		if err != nil {
			return err
		}
		if used+int64(len(content)) > s.cfg.QuotaBytes {
			return fmt.Errorf("%w: %d bytes stored, this file has %d, the quota is %d",
				ErrQuota, used, len(content), s.cfg.QuotaBytes)
		}
		if err := s.checkCount(ctx, tx, owner); err != nil {
			return err
		}
		f, err = tx.FileInsert(ctx, store.FileInsertParams{
			ID: uuid.New(), OwnerID: owner, Name: cleanName(name), MediaType: mediaType, Content: content, Now: s.clock.Now(),
		})
		return err
	})
	if err != nil {
		return store.File{}, fmt.Errorf("upload file: %w", err)
	}
	return f, nil
}

// checkCount refuses one more file when owner holds MaxPerUser; Upload
// holds the owner's lock.
func (s *Service) checkCount(ctx context.Context, tx store.Tx, owner uuid.UUID) error {
	if s.cfg.MaxPerUser < 0 {
		return nil
	}
	n, err := tx.FileCountByOwner(ctx, owner)
	if err != nil {
		return err
	}
	if n >= int64(s.cfg.MaxPerUser) {
		return fmt.Errorf("%w: you have %d files; at most %d (files no chat uses are removed after the retention; "+
			"deleting a chat deletes its files)", ErrLimitReached, n, s.cfg.MaxPerUser)
	}
	return nil
}

// Get reads a file for its owner: another user's file is ErrNotFound, the
// same as a missing one.
func (s *Service) Get(ctx context.Context, owner, id uuid.UUID) (store.File, error) {
	var f store.File
	err := s.store.ReadTx(ctx, func(r store.Reader) error {
		var err error
		f, err = r.FileGet(ctx, id)
		return err
	})
	if err == nil && f.OwnerID != owner {
		err = ErrNotFound
	}
	if err != nil {
		return store.File{}, fmt.Errorf("get file %s: %w", id, err)
	}
	return f, nil
}

// RemoveUnreferenced deletes the files no chat holds that were uploaded
// more than Retention ago, and reports how many went.
func (s *Service) RemoveUnreferenced(ctx context.Context) (int64, error) {
	var n int64
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		var err error
		n, err = tx.FileDeleteUnlinked(ctx, s.clock.Now().Add(-s.cfg.Retention))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("remove unreferenced files: %w", err)
	}
	return n, nil
}

// cleanName keeps a file name displayable: no path, no control
// characters, at most 255 bytes.
func cleanName(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, name)
	name = strings.ToValidUTF8(name, "")
	for len(name) > 255 {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return name
}

// imageTypes are the images models take (OpenAI and Anthropic both accept
// these four), recognised by their bytes.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// textTypes are the non-text/* types given to a model as text.
var textTypes = map[string]bool{
	"application/json": true, "application/xml": true, "application/yaml": true, "application/x-yaml": true,
	"application/toml": true, "application/javascript": true, "application/x-sh": true,
	"application/sql": true, "application/csv": true, "application/x-ndjson": true,
}

// IsImage reports whether mediaType is an image a vision model takes.
func IsImage(mediaType string) bool { return imageTypes[mediaType] }

// MediaTypePDF is the one document type: a PDF, given as is to the models
// that read PDFs (TakesPDF) and refused for the others.
const MediaTypePDF = "application/pdf"

// ImageTypes are the image types a model may be given, for GET
// /files/limits.
func ImageTypes() []string { return []string{"image/png", "image/jpeg", "image/gif", "image/webp"} }

// DocumentTypes are the document types a model that reads them is given as
// they are, for GET /files/limits.
func DocumentTypes() []string { return []string{MediaTypePDF} }

// IsDocument reports whether mediaType is a document some models read
// natively.
func IsDocument(mediaType string) bool { return mediaType == MediaTypePDF }

// IsText reports whether mediaType is given to a model as text.
func IsText(mediaType string) bool {
	return strings.HasPrefix(mediaType, "text/") || textTypes[mediaType] || strings.HasSuffix(mediaType, "+json") ||
		strings.HasSuffix(mediaType, "+xml")
}

// MediaType decides what a file is stored as, from the declared type
// (Content-Type; empty or application/octet-stream: unknown) checked
// against the bytes: the bytes of an image decide its type, a declared
// image must be one, and a declared text type must be valid UTF-8.
func MediaType(declared string, content []byte) (string, error) {
	typ := ""
	if declared != "" {
		t, _, err := mime.ParseMediaType(declared)
		if err != nil {
			return "", fmt.Errorf("%w: %q is not a media type", ErrBadContent, declared)
		}
		typ = strings.ToLower(t)
	}
	sniffed, _, _ := mime.ParseMediaType(http.DetectContentType(content))
	switch {
	case imageTypes[sniffed]:
		return sniffed, nil // the bytes say which image it is
	case strings.HasPrefix(typ, "image/") && imageTypes[typ]:
		return "", fmt.Errorf("%w: declared %s, but the bytes are not one", ErrBadContent, typ)
	case typ == MediaTypePDF && sniffed != MediaTypePDF:
		return "", fmt.Errorf("%w: declared %s, but the bytes are not a PDF", ErrBadContent, typ)
	case typ == "" || typ == "application/octet-stream":
		if utf8.Valid(content) && !bytes.ContainsRune(content, 0) {
			return "text/plain", nil
		}
		if sniffed == "" || strings.HasPrefix(sniffed, "text/") {
			return "application/octet-stream", nil
		}
		return sniffed, nil
	case IsText(typ):
		if !utf8.Valid(content) {
			return "", fmt.Errorf("%w: declared %s, but the bytes are not UTF-8 text", ErrBadContent, typ)
		}
		return typ, nil
	}
	return typ, nil
}

// Serving is how GET /files/{id} answers a file safely: images and plain
// text inline with their own type, any other text as text/plain and
// everything else as application/octet-stream, both as a download. Never
// HTML or SVG inline (X-Content-Type-Options: nosniff is set by the API).
func Serving(f store.File) (contentType, disposition string) {
	name := f.Name
	if name == "" {
		name = "file"
	}
	attach := mime.FormatMediaType("attachment", map[string]string{"filename": name})
	inline := mime.FormatMediaType("inline", map[string]string{"filename": name})
	if attach == "" { // a name mime cannot encode
		attach, inline = "attachment", "inline"
	}
	switch {
	case imageTypes[f.MediaType]:
		return f.MediaType, inline
	case f.MediaType == "text/plain":
		return "text/plain; charset=utf-8", inline
	case f.MediaType == MediaTypePDF:
		return MediaTypePDF, attach
	case IsText(f.MediaType):
		return "text/plain; charset=utf-8", attach
	}
	return "application/octet-stream", attach
}

// DataURL is the file as a data: URL (what providers are given for images).
func DataURL(mediaType string, content []byte) string {
	return "data:" + mediaType + ";base64," + base64.StdEncoding.EncodeToString(content)
}

// AsText is a text file as a model reads it: a header naming the file, then
// its text, cut at MaxTextFileBytes.
func AsText(name, mediaType string, content []byte) string {
	if name == "" {
		name = "file"
	}
	body := content
	cut := ""
	if len(body) > MaxTextFileBytes {
		body = body[:MaxTextFileBytes]
		for len(body) > 0 && !utf8.Valid(body) {
			body = body[:len(body)-1]
		}
		cut = fmt.Sprintf("\n[... cut: the file has %d bytes, %d shown]", len(content), len(body))
	}
	return fmt.Sprintf("[file: %s (%s, %d bytes)]\n%s%s", name, mediaType, len(content), body, cut)
}

// Unsupported is the refusal of a file type no model input takes.
func Unsupported(mediaType string) string {
	return fmt.Sprintf("files of type %s cannot be given to a model; attach images (PNG, JPEG, GIF, WebP), PDFs or text files", mediaType)
}

// TakesPDF reports whether a model reads PDFs natively: a vision model
// (modelinfo.Vision) of OpenAI (file inputs) or Anthropic (document
// blocks). OpenAI-compatible servers (Ollama, vLLM, ...) and the demo
// model do not: a PDF for them is refused when it is sent, and chatd
// extracts no text from PDFs.
func TakesPDF(provider, model string) bool {
	return (provider == "openai" || provider == "anthropic") && modelinfo.Vision(provider, model)
}

// TakesImages reports whether a model takes images: the built-in table
// says so (modelinfo.Vision), or it is the offline demo model, which
// accepts them (and says what it was given) so attachments work offline.
func TakesImages(provider, model string) bool {
	return provider == "demo" || modelinfo.Vision(provider, model)
}
