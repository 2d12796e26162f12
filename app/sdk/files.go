package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"
)

// UploadFile stores body as a file (POST /files) typed by contentType
// (empty: the server decides from the bytes) and named name.
func (c *Client) UploadFile(ctx context.Context, name, contentType string, body io.Reader) (UploadFileResponse, error) {
	var out UploadFileResponse
	resp, err := c.raw(ctx, http.MethodPost, "/files?name="+url.QueryEscape(name), contentType, body)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("decode POST /files: %w", err)
	}
	return out, nil
}

// File reads a file's bytes and Content-Type (GET /files/{id}).
func (c *Client) File(ctx context.Context, id uuid.UUID) ([]byte, string, error) {
	resp, err := c.raw(ctx, http.MethodGet, "/files/"+id.String(), "", nil)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", fmt.Errorf("read file %s: %w", id, err)
	}
	return raw, resp.Header.Get("Content-Type"), nil
}

// FileLimits reads the upload limits (GET /files/limits).
func (c *Client) FileLimits(ctx context.Context) (FileLimits, error) {
	var out FileLimits
	err := c.Do(ctx, http.MethodGet, "/files/limits", nil, &out)
	return out, err
}

// raw sends a request with a raw body and returns a 2xx answer; others
// become *Error.
func (c *Client) raw(ctx context.Context, method, path, contentType string, body io.Reader) (*http.Response, error) {
	prefix := c.Prefix
	if prefix == "" {
		prefix = "/api/v2"
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+prefix+path, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		e := &Error{StatusCode: resp.StatusCode}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if json.Unmarshal(raw, &e.Response) != nil || e.Message == "" {
			e.Message = strings.TrimSpace(string(raw))
		}
		return nil, e
	}
	return resp, nil
}
