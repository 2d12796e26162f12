// Package redact masks the secrets chatd holds in clear (provider API keys,
// MCP servers' env and header values, the hook secret) out of error texts
// before they are stored, logged or sent. One Secrets value knows the
// current secrets; the provider and MCP layers pass every error through its
// Error on the way out, and the log handler passes every record through
// Text, so no route needs a mask of its own.
package redact

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/chatd/chatd/app/llm"
)

// MinLength is the shortest value that is masked. Shorter values ("1",
// "true", "debug" in an MCP server's env) are not secrets worth the name,
// and masking them would mangle every error text that contains them.
const MinLength = 6

// Labels stand in for a masked value.
const (
	LabelAPIKey = "[api key]" // a provider's API key
	LabelSecret = "[secret]"  // an MCP env or header value, the hook secret
)

// Secrets is the set of secrets to mask, grouped by owner (a provider, an
// MCP server, the hooks) so an owner's values can be replaced when its
// configuration changes. Safe for concurrent use; a nil *Secrets masks
// nothing.
type Secrets struct {
	mu     sync.RWMutex
	owners map[string]owned
	r      *strings.Replacer // nil when there is nothing to mask
}

type owned struct {
	label  string
	values []string
}

// New returns an empty set.
func New() *Secrets { return &Secrets{owners: map[string]owned{}} }

// Set makes values (with their label, LabelAPIKey or LabelSecret) the
// secrets of owner, replacing what owner had. Empty and short values are
// ignored; Set(owner, label) with no values forgets owner.
func (s *Secrets) Set(owner, label string, values ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setLocked(owner, label, values)
}

// Add adds values to owner's secrets, keeping those it has.
func (s *Secrets) Add(owner, label string, values ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setLocked(owner, label, append(slices.Clone(s.owners[owner].values), values...))
}

// setLocked is Set; s.mu is held.
func (s *Secrets) setLocked(owner, label string, values []string) {
	var keep []string
	for _, v := range values {
		if len(v) >= MinLength && !slices.Contains(keep, v) {
			keep = append(keep, v)
		}
	}
	old, had := s.owners[owner]
	switch {
	case len(keep) == 0 && !had:
		return
	case len(keep) == 0:
		delete(s.owners, owner)
	case had && old.label == label && slices.Equal(old.values, keep):
		return
	default:
		s.owners[owner] = owned{label: label, values: keep}
	}
	s.rebuild()
}

// rebuild makes the replacer of the current values. s.mu is held.
func (s *Secrets) rebuild() {
	type pair struct{ old, label string }
	var pairs []pair
	seen := map[string]bool{}
	for _, o := range s.owners {
		for _, v := range o.values {
			for _, form := range forms(v) {
				if !seen[form] {
					seen[form] = true
					pairs = append(pairs, pair{form, o.label})
				}
			}
		}
	}
	if len(pairs) == 0 {
		s.r = nil
		return
	}
	// strings.Replacer tries the old strings in argument order at each
	// position: longest first, so a secret that contains another is
	// masked whole.
	slices.SortFunc(pairs, func(a, b pair) int {
		if len(a.old) != len(b.old) {
			return len(b.old) - len(a.old)
		}
		return strings.Compare(a.old, b.old)
	})
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.old, p.label)
	}
	s.r = strings.NewReplacer(args...)
}

// forms are the spellings of v an error text may quote: as it is, escaped
// in a JSON string, escaped in a URL query, and, for an Authorization-style
// value ("Bearer <token>"), the credential alone.
func forms(v string) []string {
	out := []string{v}
	if b, err := json.Marshal(v); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	out = append(out, url.QueryEscape(v))
	if scheme, cred, ok := strings.Cut(v, " "); ok && !strings.ContainsAny(scheme, "\t=") {
		if cred = strings.TrimSpace(cred); len(cred) >= MinLength {
			out = append(out, cred)
		}
	}
	return out
}

// Text is text with every known secret masked.
func (s *Secrets) Text(text string) string {
	if s == nil {
		return text
	}
	s.mu.RLock()
	r := s.r
	s.mu.RUnlock()
	if r == nil {
		return text
	}
	return r.Replace(text)
}

// JSON is a JSON document with every known secret masked inside it. A
// document that masking would break becomes the masked text as one JSON
// string.
func (s *Secrets) JSON(doc json.RawMessage) json.RawMessage {
	text := string(doc)
	clean := s.Text(text)
	if clean == text {
		return doc
	}
	if json.Valid([]byte(clean)) {
		return json.RawMessage(clean)
	}
	b, _ := json.Marshal(clean)
	return b
}

// Error is err with every known secret masked out of its text. An error
// that quotes none is returned as it is. Otherwise the result's Error() is
// masked, errors.Is still sees err's chain (context.Canceled, sentinel
// errors), and a *llm.Error in the chain is replaced by a masked copy, so
// errors.As finds the same kind, status and retryability with a masked
// message. Nothing in the result unwraps to the unmasked text.
func (s *Secrets) Error(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	clean := s.Text(text)
	var pe *llm.Error
	isLLM := errors.As(err, &pe)
	if clean == text && (!isLLM || s.Text(pe.Message) == pe.Message) {
		return err
	}
	if !isLLM {
		return &masked{msg: clean, orig: err}
	}
	c := *pe
	c.Message = s.Text(pe.Message)
	if pe.Err != nil {
		c.Err = &masked{msg: s.Text(pe.Err.Error()), orig: pe.Err}
	}
	if err == error(pe) {
		return &c
	}
	return &masked{msg: clean, orig: err, next: &c}
}

// masked is an error whose text had secrets masked.
type masked struct {
	msg  string
	orig error // for errors.Is only: its text is not masked
	next error // a masked *llm.Error of orig's chain, for errors.As
}

func (m *masked) Error() string        { return m.msg }
func (m *masked) Is(target error) bool { return errors.Is(m.orig, target) }
func (m *masked) Unwrap() error        { return m.next }
