package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/files"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// DefaultFileRetentionInterval is the time between passes of the file
// retention loop. Files are kept CHATD_FILE_RETENTION (a day by default)
// after upload, so a pass every ten minutes removes them promptly enough.
const DefaultFileRetentionInterval = 10 * time.Minute

// FileRemover removes the uploaded files no chat references once their
// retention time is over (app/files.Service). Uploads are not chat state,
// so this write does not go through chatstate.
type FileRemover interface {
	RemoveUnreferenced(ctx context.Context) (int64, error)
}

// fileRetentionLoop removes unreferenced files every
// FileRetentionInterval, the first pass at once. It runs only with
// Deps.Files set.
func (w *Worker) fileRetentionLoop(ctx context.Context) {
	for {
		n, err := w.deps.Files.RemoveUnreferenced(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			w.log.Warn("file retention", "err", err)
		case n > 0:
			w.log.Info("removed unreferenced files", "count", n)
		}
		if sleep(ctx, w.clock, w.cfg.FileRetentionInterval) != nil {
			return
		}
	}
}

// loadFiles reads the files the messages' file parts reference, in the
// step's read transaction. An evicted (deleted) file is absent.
func loadFiles(ctx context.Context, tx store.Reader, lists ...[]store.Message) (map[uuid.UUID]store.File, error) {
	out := map[uuid.UUID]store.File{}
	for _, ms := range lists {
		for _, m := range ms {
			var parts []sdk.ChatMessagePart
			if json.Unmarshal(m.Content, &parts) != nil {
				continue
			}
			for _, p := range parts {
				if p.Type != sdk.PartFile || p.FileID == nil {
					continue
				}
				if _, ok := out[*p.FileID]; ok {
					continue
				}
				f, err := tx.FileGet(ctx, *p.FileID)
				switch {
				case err == nil:
					out[f.ID] = f
				case !errors.Is(err, store.ErrNotFound):
					return nil, fmt.Errorf("read file %s: %w", *p.FileID, err)
				}
			}
		}
	}
	return out, nil
}

// fileParts is a message's parts as the model gets them (spec: file
// links): an image as a file part with its bytes as a data: URL when the
// model takes images (else a short note), a PDF likewise when the model
// reads PDFs, a text file as a text part with a header, an evicted user
// upload as a note that it expired; evicted assistant and tool files are
// dropped. The images a tool returned stay in its result only for a model
// that takes images (toolMedia).
func (v view) fileParts(role string, parts []sdk.ChatMessagePart) []sdk.ChatMessagePart {
	parts = v.toolMedia(parts)
	if !slicesContainsFile(parts) {
		return parts
	}
	out := make([]sdk.ChatMessagePart, 0, len(parts))
	for _, p := range parts {
		if p.Type != sdk.PartFile {
			out = append(out, p)
			continue
		}
		name := p.Name
		if name == "" {
			name = "file"
		}
		var f store.File
		ok := p.FileID != nil
		if ok {
			f, ok = v.files[*p.FileID]
		}
		switch {
		case !ok && role == store.RoleUser:
			out = append(out, sdk.ChatMessagePart{Type: sdk.PartText, Text: fmt.Sprintf("[attachment %s: its content has expired]", name)})
		case !ok:
			// an evicted assistant or tool file is dropped
		case files.IsImage(f.MediaType) && v.images:
			out = append(out, sdk.ChatMessagePart{Type: sdk.PartFile, FileID: p.FileID, Name: f.Name, MediaType: f.MediaType,
				URL: files.DataURL(f.MediaType, f.Content)})
		case files.IsImage(f.MediaType):
			out = append(out, sdk.ChatMessagePart{Type: sdk.PartText, Text: fmt.Sprintf("[image %s: not shown, this model does not take images]", name)})
		case files.IsDocument(f.MediaType) && v.pdfs:
			out = append(out, sdk.ChatMessagePart{Type: sdk.PartFile, FileID: p.FileID, Name: f.Name, MediaType: f.MediaType,
				URL: files.DataURL(f.MediaType, f.Content)})
		case files.IsDocument(f.MediaType):
			out = append(out, sdk.ChatMessagePart{Type: sdk.PartText, Text: fmt.Sprintf("[PDF %s: not shown, this model does not read PDFs]", name)})
		case files.IsText(f.MediaType):
			out = append(out, sdk.ChatMessagePart{Type: sdk.PartText, Text: files.AsText(f.Name, f.MediaType, f.Content)})
		default:
			out = append(out, sdk.ChatMessagePart{Type: sdk.PartText, Text: fmt.Sprintf("[attachment %s (%s): not readable by the model]", name, f.MediaType)})
		}
	}
	return out
}

// toolMedia removes the image data from the tool results of parts when the
// model takes no images (each image block stays as its type, MIME type and
// size); audio is left for the provider, which sends it only to a model
// that takes audio.
func (v view) toolMedia(parts []sdk.ChatMessagePart) []sdk.ChatMessagePart {
	if v.images {
		return parts
	}
	var out []sdk.ChatMessagePart
	for i, p := range parts {
		if p.Type != sdk.PartToolResult {
			continue
		}
		r := llm.FilterToolMedia(p.Result, func(m llm.ToolMedia) bool { return m.Type != "image" })
		if bytes.Equal(r, p.Result) {
			continue
		}
		if out == nil {
			out = slices.Clone(parts)
		}
		out[i].Result = r
	}
	if out == nil {
		return parts
	}
	return out
}

func slicesContainsFile(parts []sdk.ChatMessagePart) bool {
	for _, p := range parts {
		if p.Type == sdk.PartFile {
			return true
		}
	}
	return false
}
