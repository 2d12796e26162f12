package api_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/api"
	"github.com/chatd/chatd/app/config"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// pngBytes is a PNG's signature and header (enough for sniffing).
var pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 32)...)

func (h *fixture) upload(t *testing.T, token, path, contentType string, body []byte, extra ...string) rawResponse {
	t.Helper()
	headers := append([]string{"Authorization", "Bearer " + token, "Content-Type", contentType}, extra...)
	return h.raw(t, "POST", path, body, headers...)
}

func uploaded(t *testing.T, r rawResponse) sdk.UploadFileResponse {
	t.Helper()
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	var f sdk.UploadFileResponse
	require.NoError(t, json.Unmarshal(r.body, &f))
	require.NotEqual(t, uuid.Nil, f.ID)
	return f
}

// TestFilesUploadAndServe: raw and multipart uploads on both paths answer
// 201 {id}; the owner reads the file back with a safe type (HTML never
// inline), others get 404; the size cap is 413 and the quota 409, both
// with their codes; and the upload routes alone take bodies over
// MaxBodyBytes.
func TestFilesUploadAndServe(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore, func(c *config.Config) {
			c.MaxBodyBytes = 4 << 10
			c.Files.MaxFileBytes = 64 << 10
			c.Files.QuotaBytes = 100 << 10
		})
		// Raw body on /files, named by ?name=.
		img := uploaded(t, h.upload(t, h.aliceToken, "/api/v2/files?name=cat.png", "image/png", pngBytes))
		require.Equal(t, "image/png", img.MediaType)
		require.Equal(t, "cat.png", img.Name)
		require.Equal(t, int64(len(pngBytes)), img.Size)

		// Multipart on Coder's path; larger than MaxBodyBytes but under the file cap.
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		fw, err := mw.CreateFormFile("file", "notes.html")
		require.NoError(t, err)
		page := "<html><script>alert(1)</script>" + strings.Repeat("x", 8<<10) + "</html>"
		_, _ = fw.Write([]byte(page))
		require.NoError(t, mw.Close())
		html := uploaded(t, h.upload(t, h.aliceToken, "/api/v2/chats/files", mw.FormDataContentType(), buf.Bytes()))
		require.Equal(t, "text/plain", html.MediaType, "an undeclared (octet-stream) text file is plain text")

		declared := uploaded(t, h.upload(t, h.aliceToken, "/api/experimental/files?name=p.html", "text/html", []byte(page)))
		require.Equal(t, "text/html", declared.MediaType)

		get := func(token string, id uuid.UUID) rawResponse {
			return h.raw(t, "GET", "/api/v2/files/"+id.String(), nil, "Authorization", "Bearer "+token)
		}
		r := get(h.aliceToken, img.ID)
		require.Equal(t, http.StatusOK, r.status)
		require.Equal(t, pngBytes, r.body)
		require.Equal(t, "image/png", r.header.Get("Content-Type"))
		require.True(t, strings.HasPrefix(r.header.Get("Content-Disposition"), "inline"))
		require.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"))

		r = get(h.aliceToken, declared.ID)
		require.Equal(t, http.StatusOK, r.status)
		require.Equal(t, "text/plain; charset=utf-8", r.header.Get("Content-Type"), "HTML is never served as HTML")
		require.True(t, strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment"))
		require.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"))

		// Another user's file is not found, like a missing one.
		_, _, bobToken := h.newUser(t, "bob")
		requireJSONError(t, get(bobToken, img.ID), http.StatusNotFound, sdk.CodeNotFound)
		requireJSONError(t, get(h.aliceToken, uuid.New()), http.StatusNotFound, sdk.CodeNotFound)
		requireJSONError(t, get(h.aliceToken, uuid.Nil), http.StatusNotFound, sdk.CodeNotFound)

		// A declared image whose bytes are not one is refused.
		requireJSONError(t, h.upload(t, h.aliceToken, "/api/v2/files", "image/png", []byte("hello")),
			http.StatusBadRequest, sdk.CodeValidation)
		// Multipart without a file field.
		buf.Reset()
		mw = multipart.NewWriter(&buf)
		require.NoError(t, mw.WriteField("other", "x"))
		require.NoError(t, mw.Close())
		requireJSONError(t, h.upload(t, h.aliceToken, "/api/v2/files", mw.FormDataContentType(), buf.Bytes()),
			http.StatusBadRequest, sdk.CodeValidation)

		// Over the file cap: 413.
		big := bytes.Repeat([]byte("a"), 64<<10+1)
		requireJSONError(t, h.upload(t, h.aliceToken, "/api/v2/files", "text/plain", big),
			http.StatusRequestEntityTooLarge, sdk.CodeTooLarge)
		// Other routes keep MaxBodyBytes.
		requireJSONError(t, h.raw(t, "POST", "/api/v2/chats", textBody(strings.Repeat("a", 5<<10)),
			"Authorization", "Bearer "+h.aliceToken), http.StatusRequestEntityTooLarge, sdk.CodeTooLarge)

		// The quota (100 KiB): alice has ~17 KiB; 60 KiB fits, another 60 does not.
		chunk := bytes.Repeat([]byte("b"), 60<<10)
		uploaded(t, h.upload(t, h.aliceToken, "/api/v2/files", "text/plain", chunk))
		requireJSONError(t, h.upload(t, h.aliceToken, "/api/v2/files", "text/plain", chunk),
			http.StatusConflict, sdk.CodeFileQuotaExceeded)
		// Bob has his own quota.
		uploaded(t, h.upload(t, bobToken, "/api/v2/files", "text/plain", chunk))

		// The limits the UI shows.
		r = h.raw(t, "GET", "/api/v2/files/limits", nil, "Authorization", "Bearer "+h.aliceToken)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		var lim sdk.FileLimits
		require.NoError(t, json.Unmarshal(r.body, &lim))
		require.Equal(t, int64(64<<10), lim.MaxFileBytes)
		require.Equal(t, int64(100<<10), lim.QuotaBytes)
		require.Equal(t, img.Size+html.Size+declared.Size+int64(len(chunk)), lim.UsedBytes)
		require.Equal(t, 50, lim.MaxFilesPerChat)
		require.Equal(t, int64(86400), lim.RetentionSeconds)

		// Without a token: 401.
		requireJSONError(t, h.raw(t, "POST", "/api/v2/files", []byte("x")), http.StatusUnauthorized, sdk.CodeUnauthorized)
	})
}

// TestFileParts: file parts are accepted on create, send (also queued) and
// edit, stored with the file's type and name; another user's or a missing
// file, an unsupported type and an image to a model without vision are
// refused with 400s that say why.
func TestFileParts(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore, func(c *config.Config) {
			c.Models, c.DefaultModel = []string{"openai/gpt-3.5-turbo"}, "demo"
			c.OpenAIBaseURL = "http://127.0.0.1:1" // never called: the turns here are refused or use demo
		})
		img := uploaded(t, h.upload(t, h.aliceToken, "/api/v2/files?name=cat.png", "image/png", pngBytes))
		txt := uploaded(t, h.upload(t, h.aliceToken, "/api/v2/files?name=a.md", "text/markdown", []byte("# hi")))
		pdf := uploaded(t, h.upload(t, h.aliceToken, "/api/v2/files?name=a.pdf", "application/pdf", []byte("%PDF-1.4 x")))
		zip := uploaded(t, h.upload(t, h.aliceToken, "/api/v2/files?name=a.zip", "application/zip", []byte("PK\x03\x04\x00\x00")))
		_, _, bobToken := h.newUser(t, "bob")
		bobs := uploaded(t, h.upload(t, bobToken, "/api/v2/files", "text/plain", []byte("bob's")))

		part := func(id uuid.UUID) string { return `{"type":"file","file_id":"` + id.String() + `"}` }
		body := func(parts ...string) string { return `{"content":[` + strings.Join(parts, ",") + `]}` }
		alice := func(method, path, b string) rawResponse {
			return h.raw(t, method, path, b, "Authorization", "Bearer "+h.aliceToken)
		}

		r := alice("POST", "/api/v2/chats", body(`{"type":"text","text":"look"}`, part(img.ID), part(txt.ID)))
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		var chat sdk.Chat
		require.NoError(t, json.Unmarshal(r.body, &chat))
		v := h.view(t, chat.ID)
		parts := v.Messages.Messages[0].Content
		require.Len(t, parts, 3)
		require.Equal(t, sdk.PartFile, parts[1].Type)
		require.Equal(t, img.ID, *parts[1].FileID)
		require.Equal(t, "image/png", parts[1].MediaType)
		require.Equal(t, "cat.png", parts[1].Name)
		require.Equal(t, "text/markdown", parts[2].MediaType)

		// The image is now held by that chat: another chat cannot use it.
		r = alice("POST", "/api/v2/chats", body(part(img.ID)))
		e := requireJSONError(t, r, http.StatusBadRequest, sdk.CodeValidation)
		require.Contains(t, e.Message, "not available")

		for name, tc := range map[string]struct {
			body, want string
		}{
			"another user's file": {body(part(bobs.ID)), "does not exist"},
			"a missing file":      {body(part(uuid.New())), "does not exist"},
			"no file_id":          {body(`{"type":"file"}`), "file_id"},
			"an unsupported type": {body(part(zip.ID)), "application/zip"},
			"a PDF to the demo model, which reads none": {body(part(pdf.ID)), `model demo/demo does not accept PDF files; choose an OpenAI or Anthropic vision model or remove "a.pdf"`},
		} {
			e := requireJSONError(t, alice("POST", "/api/v2/chats/"+chat.ID.String()+"/messages", tc.body),
				http.StatusBadRequest, sdk.CodeValidation)
			require.Contains(t, e.Message, tc.want, name)
		}

		// An image to a model the table knows without vision.
		var models sdk.ChatModelsResponse
		r = alice("GET", "/api/v2/chats/models", "")
		require.NoError(t, json.Unmarshal(r.body, &models))
		var gpt35 uuid.UUID
		for _, p := range models.Providers {
			for _, m := range p.Models {
				if m.Model == "gpt-3.5-turbo" {
					gpt35 = m.ID
				}
			}
		}
		require.NotEqual(t, uuid.Nil, gpt35)
		img2 := uploaded(t, h.upload(t, h.aliceToken, "/api/v2/files?name=dog.png", "image/png", pngBytes))
		e = requireJSONError(t, alice("POST", "/api/v2/chats/"+chat.ID.String()+"/messages",
			`{"model_config_id":"`+gpt35.String()+`","content":[`+part(img2.ID)+`]}`),
			http.StatusBadRequest, sdk.CodeValidation)
		require.Contains(t, e.Message, "does not take images")

		// Send (queued behind the running turn or not) and edit take files.
		r = alice("POST", "/api/v2/chats/"+chat.ID.String()+"/messages", body(part(img2.ID)))
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		first := v.Messages.Messages[0].ID
		txt2 := uploaded(t, h.upload(t, h.aliceToken, "/api/v2/files?name=b.txt", "text/plain", []byte("b")))
		r = alice("PATCH", "/api/v2/chats/"+chat.ID.String()+"/messages/"+jsonNumber(first), body(`{"type":"text","text":"again"}`, part(txt2.ID)))
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	})
}

func jsonNumber(n int64) string { raw, _ := json.Marshal(n); return string(raw) }

// TestUploadCrossSite: an upload with the session cookie needs the
// X-Chatd-Upload header (a form of another page cannot add it) besides the
// origin checks; with it, and with a token, uploads work.
func TestUploadCrossSite(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		cookie := h.login(t, h.aliceToken)
		own := h.origin()
		for name, headers := range map[string][]string{
			"a form post":           {"Cookie", cookie, "Content-Type", "text/plain"},
			"multipart form":        {"Cookie", cookie, "Content-Type", "multipart/form-data; boundary=x"},
			"header, other origin":  {"Cookie", cookie, "Content-Type", "text/plain", api.UploadHeader, "1", "Origin", "http://127.0.0.1:1"},
			"header, cross-site":    {"Cookie", cookie, "Content-Type", "text/plain", api.UploadHeader, "1", "Sec-Fetch-Site", "cross-site"},
			"own origin, no header": {"Cookie", cookie, "Content-Type", "text/plain", "Origin", own},
		} {
			r := h.raw(t, "POST", "/api/v2/files", []byte("hi"), headers...)
			require.Equal(t, http.StatusForbidden, r.status, "%s: %s", name, r.body)
		}
		uploaded(t, h.raw(t, "POST", "/api/v2/chats/files", []byte("hi"), "Cookie", cookie, "Content-Type", "text/plain",
			api.UploadHeader, "1", "Origin", own, "Sec-Fetch-Site", "same-origin"))
		uploaded(t, h.upload(t, h.aliceToken, "/api/v2/files", "text/plain", []byte("hi")))
	})
}
