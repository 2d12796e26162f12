// Package demo is chatd's built-in offline model. It needs no network and
// no key: it answers every prompt deterministically (the same prompt gives
// the same answer), streams the answer word by word with a short delay per
// token, and writes markdown — a quote of your message, a short list and a
// code block — so the UI has something to render.
//
// Triggers, read from the last user message:
//
//	/tool NAME {json}   call the request's tool NAME with these JSON
//	                    arguments ({} when omitted); several /tool
//	                    directives make parallel calls.
//	a tool's name       mentioning one of the request's tools by name (a
//	                    whole word, any case) calls it, with arguments made
//	                    from its schema's required properties (strings get
//	                    the message text).
//	/error KIND [N]     fail with an *llm.Error of KIND: rate_limit,
//	                    overloaded, timeout, generic (retryable), auth,
//	                    config, content_filter (not retryable). With N, only
//	                    the first N attempts of that prompt fail, so retries
//	                    can be seen recovering.
//
// When the last message holds tool results, it answers with what the tools
// returned. With a reasoning effort set it streams a short reasoning part
// first. Usage counts words as tokens.
package demo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/sdk"
)

// Name is the provider's name.
const Name = "demo"

// DefaultTokenDelay is the pause before each streamed token.
const DefaultTokenDelay = 15 * time.Millisecond

// NoDelay as Config.TokenDelay streams without pauses (tests).
const NoDelay time.Duration = -1

// Config configures the demo provider.
type Config struct {
	// TokenDelay is the pause before each token: 0 means
	// DefaultTokenDelay, NoDelay (or any negative value) none.
	TokenDelay time.Duration
	// Clock paces the tokens; clock.Real when nil.
	Clock clock.Clock
}

// Provider is the demo model.
type Provider struct {
	delay time.Duration
	clock clock.Clock

	mu       sync.Mutex
	failures map[string]int // prompt hash -> /error attempts so far
}

var _ llm.Provider = (*Provider)(nil)

// New returns a demo provider.
func New(cfg Config) *Provider {
	d := cfg.TokenDelay
	switch {
	case d == 0:
		d = DefaultTokenDelay
	case d < 0:
		d = 0
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	return &Provider{delay: d, clock: clk, failures: map[string]int{}}
}

// Name implements llm.Provider.
func (p *Provider) Name() string { return Name }

// Stream implements llm.Provider.
func (p *Provider) Stream(ctx context.Context, req llm.Request, onPart func(sdk.ChatMessagePart)) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	hash := promptHash(req)
	plan := p.plan(req, hash)
	if plan.err != nil {
		return llm.Response{}, plan.err
	}

	var asm llm.Assembler
	resp := llm.Response{FinishReason: "stop", Model: req.Model, Usage: llm.Usage{InputTokens: promptWords(req)}}
	emit := func(part sdk.ChatMessagePart) error {
		if p.delay > 0 {
			t := p.clock.NewTimer(p.delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C():
			}
		} else if err := ctx.Err(); err != nil {
			return err
		}
		asm.Add(part)
		if onPart != nil {
			onPart(part)
		}
		return nil
	}
	fail := func(err error) (llm.Response, error) {
		resp.Parts = asm.Parts()
		return resp, err
	}
	for _, tok := range tokens(plan.reasoning) {
		if err := emit(sdk.ChatMessagePart{Type: sdk.PartReasoning, Text: tok}); err != nil {
			return fail(err)
		}
	}
	for _, tok := range tokens(plan.text) {
		if err := emit(sdk.ChatMessagePart{Type: sdk.PartText, Text: tok}); err != nil {
			return fail(err)
		}
	}
	for i, c := range plan.calls {
		id := fmt.Sprintf("call_demo_%s_%d", hash[:12], i)
		if err := emit(sdk.ChatMessagePart{Type: sdk.PartToolCall, ToolCallID: id, ToolName: c.name}); err != nil {
			return fail(err)
		}
		for _, piece := range argPieces(string(c.args)) {
			if err := emit(sdk.ChatMessagePart{Type: sdk.PartToolCall, ToolCallID: id, ArgsDelta: piece}); err != nil {
				return fail(err)
			}
		}
		resp.FinishReason = "tool_calls"
	}
	resp.Parts = asm.Parts()
	resp.Usage.OutputTokens = words(plan.reasoning) + words(plan.text)
	for _, c := range plan.calls {
		resp.Usage.OutputTokens += words(string(c.args)) + 1
	}
	return resp, nil
}

type call struct {
	name string
	args json.RawMessage
}

// plan is what one answer will be.
type plan struct {
	reasoning string
	text      string
	calls     []call
	err       error
}

func (p *Provider) plan(req llm.Request, hash string) plan {
	last := llm.Message{}
	if n := len(req.Messages); n > 0 {
		last = req.Messages[n-1]
	}
	if results := partsOf(last, sdk.PartToolResult); len(results) > 0 {
		return plan{text: toolResultsAnswer(results)}
	}
	prompt := lastUserText(req.Messages)
	if len(req.Messages) > 0 && req.Messages[0].Role == llm.RoleSystem && textOf(req.Messages[0]) == llm.TitleInstruction {
		return plan{text: demoTitle(prompt)}
	}
	if prompt == llm.SummaryInstruction {
		return plan{text: demoSummary(req.Messages[:len(req.Messages)-1])}
	}
	var out plan
	if req.ReasoningEffort != "" && req.ReasoningEffort != "none" {
		out.reasoning = fmt.Sprintf("The user wrote %d words. I will quote them, list a few facts and add a code block.", words(prompt))
	}
	if last.Role != llm.RoleUser {
		out.text = answer(prompt, req, len(req.Messages))
		return out
	}
	if kind, limit, ok := errorTrigger(prompt); ok {
		if p.shouldFail(hash, limit) {
			return plan{err: simulatedError(kind)}
		}
		out.text = fmt.Sprintf("This prompt failed %d times on purpose (`/error %s %d`); now it works.", limit, kind, limit)
		return out
	}
	if calls, problem := toolDirectives(prompt, req.Tools); problem != "" || len(calls) > 0 {
		out.text, out.calls = problem, calls
		if len(calls) > 0 {
			out.text = "Calling " + toolList(calls) + "."
		}
		return out
	}
	if t, ok := mentionedTool(prompt, req.Tools); ok {
		out.text = fmt.Sprintf("You mentioned `%s`, so I will call it.", t.Name)
		out.calls = []call{{name: t.Name, args: argsFromSchema(t.InputSchema, prompt)}}
		return out
	}
	out.text = answer(prompt, req, len(req.Messages))
	return out
}

func (p *Provider) shouldFail(hash string, limit int) bool {
	if limit <= 0 {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failures[hash]++
	if p.failures[hash] <= limit {
		return true
	}
	// Recovered: the next time this prompt is sent it fails again, so the
	// retries can be watched more than once per server run.
	delete(p.failures, hash)
	return false
}

// errorTrigger finds "/error KIND [N]"; N <= 0 means always.
func errorTrigger(text string) (kind sdk.ChatErrorKind, limit int, ok bool) {
	i := strings.Index(text, "/error")
	if i < 0 {
		return "", 0, false
	}
	fields := strings.Fields(text[i+len("/error"):])
	kind = sdk.ChatErrorGeneric
	if len(fields) > 0 {
		kind = sdk.ChatErrorKind(fields[0])
	}
	if len(fields) > 1 {
		limit, _ = strconv.Atoi(fields[1])
	}
	return kind, limit, true
}

// simulatedError is the *llm.Error a real provider would return for kind.
func simulatedError(kind sdk.ChatErrorKind) *llm.Error {
	msg := fmt.Sprintf("simulated %s error (/error trigger)", kind)
	status := map[sdk.ChatErrorKind]int{
		sdk.ChatErrorRateLimit:  http.StatusTooManyRequests,
		sdk.ChatErrorOverloaded: 529,
		sdk.ChatErrorTimeout:    http.StatusGatewayTimeout,
		sdk.ChatErrorAuth:       http.StatusUnauthorized,
		sdk.ChatErrorConfig:     http.StatusBadRequest,
		sdk.ChatErrorGeneric:    http.StatusInternalServerError,
	}
	if kind == sdk.ChatErrorContentFilter {
		return &llm.Error{Kind: kind, Provider: Name, Message: msg}
	}
	s, ok := status[kind]
	if !ok {
		msg = fmt.Sprintf("simulated error of unknown kind %q (/error trigger)", kind)
		s = http.StatusInternalServerError
	}
	return llm.FromStatus(Name, s, msg, nil)
}

// toolDirectives parses every "/tool NAME {json}". problem explains a
// directive that cannot be followed.
func toolDirectives(text string, tools []llm.Tool) (calls []call, problem string) {
	rest := text
	for {
		i := strings.Index(rest, "/tool ")
		if i < 0 {
			return calls, ""
		}
		rest = strings.TrimLeft(rest[i+len("/tool "):], " \t")
		name := rest
		if j := strings.IndexFunc(rest, unicode.IsSpace); j >= 0 {
			name = rest[:j]
		}
		rest = rest[len(name):]
		if findTool(tools, name) == nil {
			return nil, fmt.Sprintf("I have no tool named `%s`. %s", name, availableTools(tools))
		}
		args := json.RawMessage(`{}`)
		trimmed := strings.TrimLeft(rest, " \t\r\n")
		if strings.HasPrefix(trimmed, "{") {
			dec := json.NewDecoder(strings.NewReader(trimmed))
			var v map[string]any
			if err := dec.Decode(&v); err != nil {
				return nil, fmt.Sprintf("The arguments after `/tool %s` are not a JSON object: %v", name, err)
			}
			end := int(dec.InputOffset())
			args = json.RawMessage(strings.TrimSpace(trimmed[:end]))
			rest = trimmed[end:]
		}
		calls = append(calls, call{name: name, args: args})
	}
}

func findTool(tools []llm.Tool, name string) *llm.Tool {
	for i := range tools {
		if tools[i].Name == name {
			return &tools[i]
		}
	}
	return nil
}

func availableTools(tools []llm.Tool) string {
	if len(tools) == 0 {
		return "This chat has no tools."
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = "`" + t.Name + "`"
	}
	return "Available tools: " + strings.Join(names, ", ") + "."
}

func toolList(calls []call) string {
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = "`" + c.name + "`"
	}
	return strings.Join(names, " and ")
}

// mentionedTool returns the first of tools named in text as a whole word.
func mentionedTool(text string, tools []llm.Tool) (llm.Tool, bool) {
	lower := strings.ToLower(text)
	for _, t := range tools {
		name := strings.ToLower(t.Name)
		if name == "" {
			continue
		}
		for from := 0; ; {
			i := strings.Index(lower[from:], name)
			if i < 0 {
				break
			}
			i += from
			end := i + len(name)
			if !wordRuneBefore(lower, i) && !wordRuneAfter(lower, end) {
				return t, true
			}
			from = end
		}
	}
	return llm.Tool{}, false
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-'
}

func wordRuneBefore(s string, i int) bool {
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return i > 0 && isWordRune(r)
}

func wordRuneAfter(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return i < len(s) && isWordRune(r)
}

// argsFromSchema fills a schema's required properties: strings with the
// prompt, numbers with 1, booleans with true, enums with their first value.
func argsFromSchema(raw json.RawMessage, prompt string) json.RawMessage {
	var schema struct {
		Properties map[string]struct {
			Type any   `json:"type"`
			Enum []any `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(raw, &schema)
	args := map[string]any{}
	for _, name := range schema.Required {
		prop := schema.Properties[name]
		typ, _ := prop.Type.(string)
		switch {
		case len(prop.Enum) > 0:
			args[name] = prop.Enum[0]
		case typ == "integer" || typ == "number":
			args[name] = 1
		case typ == "boolean":
			args[name] = true
		case typ == "array":
			args[name] = []any{}
		case typ == "object":
			args[name] = map[string]any{}
		default:
			args[name] = truncate(strings.TrimSpace(prompt), 200)
		}
	}
	b, _ := json.Marshal(args)
	return b
}

func toolResultsAnswer(results []sdk.ChatMessagePart) string {
	var b strings.Builder
	for _, r := range results {
		name := r.ToolName
		if name == "" {
			name = r.ToolCallID
		}
		if r.IsError {
			fmt.Fprintf(&b, "The tool `%s` failed:\n\n", name)
		} else {
			fmt.Fprintf(&b, "The tool `%s` returned:\n\n", name)
		}
		result, media := llm.SplitToolResult(r.Result) // base64 data is no answer
		fmt.Fprintf(&b, "```json\n%s\n```\n\n", prettyJSON(result))
		for _, m := range media {
			fmt.Fprintf(&b, "It also returned an %s block (%s, %d bytes of base64).\n\n", m.Type, m.MediaType, len(m.Data))
		}
	}
	if len(results) == 1 {
		b.WriteString("That is the result; a real model would now use it to answer you.")
	} else {
		fmt.Fprintf(&b, "Those are the %d results; a real model would now use them to answer you.", len(results))
	}
	return b.String()
}

func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return string(raw)
	}
	return string(b)
}

// answer is the ordinary markdown reply.
func answer(prompt string, req llm.Request, turn int) string {
	prompt = strings.TrimSpace(prompt)
	if prompt == "" {
		return "Hello! I'm chatd's **demo model**. Send me a message and I will stream a reply.\n\n" + hint(req.Tools)
	}
	var b strings.Builder
	b.WriteString("Hello! I'm chatd's **demo model**: I run offline and can't really think, but I show how chatd streams a reply.\n\n")
	b.WriteString("You wrote:\n\n")
	for _, line := range strings.Split(truncate(prompt, 300), "\n") {
		b.WriteString("> " + line + "\n")
	}
	b.WriteString("\nA few facts about your message:\n\n")
	fmt.Fprintf(&b, "- It has **%s** and **%d characters**.\n", plural(words(prompt), "word"), utf8.RuneCountInString(prompt))
	fmt.Fprintf(&b, "- Its longest word is `%s`.\n", longestWord(prompt))
	fmt.Fprintf(&b, "- It is message **%d** of this conversation.\n\n", turn)
	lang, code := snippet(prompt)
	fmt.Fprintf(&b, "Here is a small %s program that prints it:\n\n```%s\n%s\n```\n\n", lang, lang, code)
	b.WriteString(hint(req.Tools))
	return b.String()
}

func hint(tools []llm.Tool) string {
	h := "Try `/error rate_limit 2` to see a retried failure"
	if len(tools) > 0 {
		return h + ", or `/tool " + tools[0].Name + " {}` to call a tool. " + availableTools(tools)
	}
	return h + "."
}

// snippet picks a language by the prompt, so answers vary but never change.
func snippet(prompt string) (lang, code string) {
	line := truncate(strings.SplitN(prompt, "\n", 2)[0], 60)
	q := strconv.Quote(line)
	sum := sha256.Sum256([]byte(prompt))
	switch sum[0] % 3 {
	case 0:
		return "go", "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(" + q + ")\n}"
	case 1:
		return "python", "def main():\n    print(" + q + ")\n\n\nif __name__ == \"__main__\":\n    main()"
	}
	return "javascript", "function main() {\n  console.log(" + q + ");\n}\n\nmain();"
}

func longestWord(s string) string {
	best := ""
	for _, w := range strings.Fields(s) {
		w = strings.TrimFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if utf8.RuneCountInString(w) > utf8.RuneCountInString(best) {
			best = w
		}
	}
	return strings.ReplaceAll(truncate(best, 40), "`", "")
}

func truncate(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "…"
}

func partsOf(m llm.Message, typ string) []sdk.ChatMessagePart {
	var out []sdk.ChatMessagePart
	for _, p := range m.Parts {
		if p.Type == typ {
			out = append(out, p)
		}
	}
	return out
}

func lastUserText(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != llm.RoleUser {
			continue
		}
		var texts []string
		for _, p := range partsOf(msgs[i], sdk.PartText) {
			texts = append(texts, p.Text)
		}
		return strings.Join(texts, "\n\n")
	}
	return ""
}

// promptHash identifies a request: answers and tool call ids derive from it.
func promptHash(req llm.Request) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode(req.Messages)
	for _, t := range req.Tools {
		_ = enc.Encode(t.Name)
	}
	_ = enc.Encode(req.ReasoningEffort)
	return hex.EncodeToString(h.Sum(nil))
}

// promptWords counts the words of every prompt message.
func promptWords(req llm.Request) int64 {
	var n int64
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			n += words(p.Text) + words(string(p.Args)) + words(string(p.Result))
		}
	}
	return n
}

func words(s string) int64 { return int64(len(strings.Fields(s))) }

// tokens cuts s into words, each with the whitespace before it, so the
// tokens join back to s exactly.
func tokens(s string) []string {
	var out []string
	start, inWord := 0, false
	for i, r := range s {
		space := unicode.IsSpace(r)
		if space && inWord {
			out = append(out, s[start:i])
			start = i
		}
		inWord = !space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// argPieces streams tool arguments in a few pieces, like real models.
func argPieces(args string) []string {
	const size = 12
	var out []string
	for len(args) > size {
		cut := size
		for cut < len(args) && !utf8.RuneStart(args[cut]) {
			cut++
		}
		out = append(out, args[:cut])
		args = args[cut:]
	}
	if args != "" {
		out = append(out, args)
	}
	return out
}

// textOf joins a message's text parts.
func textOf(m llm.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == sdk.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// demoTitle answers a title request: the first words of the prompt.
func demoTitle(prompt string) string {
	ws := strings.Fields(prompt)
	if len(ws) > 6 {
		ws = ws[:6]
	}
	if len(ws) == 0 {
		return "Untitled"
	}
	title := strings.Join(ws, " ")
	r, size := utf8.DecodeRuneInString(title)
	return string(unicode.ToUpper(r)) + title[size:]
}

// demoSummary answers a compaction request: one line per message.
func demoSummary(msgs []llm.Message) string {
	var b strings.Builder
	b.WriteString("Summary of the earlier conversation:\n")
	for _, m := range msgs {
		text := strings.Join(strings.Fields(textOf(m)), " ")
		if text == "" || m.Role == llm.RoleSystem {
			continue
		}
		if len(text) > 80 {
			text = text[:80] + "…"
		}
		fmt.Fprintf(&b, "- %s: %s\n", m.Role, text)
	}
	return b.String()
}

// plural writes "1 word", "2 words".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}
