package chatstate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// Message versions (issue 32). A chat's messages form a tree and its
// active branch is the path from the root to its newest live message
// (store/versions.go); every other message is hidden (deleted), not gone.
// EditMessage and RegenerateMessage hide the branch from a message on and
// append a new version of it; SwitchBranch shows another branch; Fork
// copies a branch into a new chat. The model, the queue and the worker only
// ever see the active branch.

// versionNotFound: a message that is in no branch of the chat (missing,
// or pruned by an edit before versions existed).
func versionNotFound(id int64) error {
	return &notFoundError{what: fmt.Sprintf("message %d", id)}
}

// branch is a chat's tree, read once.
type branch struct {
	nodes    map[int64]store.MessageNode
	children map[int64][]int64 // parent id (0 for roots) -> ids, oldest first
}

func (t *Tx) readTree(chatID uuid.UUID) (branch, error) {
	ns, err := t.tx.MessageTree(t.ctx, chatID)
	if err != nil {
		return branch{}, err
	}
	return newBranch(ns), nil
}

func newBranch(ns []store.MessageNode) branch {
	b := branch{nodes: make(map[int64]store.MessageNode, len(ns)), children: map[int64][]int64{}}
	for _, n := range ns {
		b.nodes[n.ID] = n
		var p int64
		if n.ParentID != nil {
			p = *n.ParentID
		}
		b.children[p] = append(b.children[p], n.ID)
	}
	return b
}

// through is the branch through id: the path from the root to id, then
// on to the newest message below it (the newest message of a subtree is
// always one of its leaves), oldest first.
func (b branch) through(id int64) []int64 {
	var up []int64
	for cur, ok := b.nodes[id]; ok; {
		up = append(up, cur.ID)
		if cur.ParentID == nil {
			break
		}
		cur, ok = b.nodes[*cur.ParentID]
	}
	slices.Reverse(up)
	leaf := b.newestBelow(id)
	var down []int64
	for cur := leaf; cur != id; {
		down = append(down, cur)
		cur = *b.nodes[cur].ParentID
	}
	slices.Reverse(down)
	return append(up, down...)
}

func (b branch) newestBelow(id int64) int64 {
	newest := id
	stack := []int64{id}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		newest = max(newest, n)
		stack = append(stack, b.children[n]...)
	}
	return newest
}

// BranchThrough reads, in any transaction, the messages of the branch
// through messageID (root to its newest leaf, oldest first), active or
// not. A message in no branch is ErrNotFound.
func BranchThrough(ctx context.Context, tx store.Reader, chatID uuid.UUID, messageID int64) ([]store.Message, error) {
	ns, err := tx.MessageTree(ctx, chatID)
	if err != nil {
		return nil, err
	}
	b := newBranch(ns)
	if _, ok := b.nodes[messageID]; !ok {
		return nil, versionNotFound(messageID)
	}
	path := b.through(messageID)
	all, err := tx.MessageList(ctx, chatID, store.MessageListParams{IncludeDeleted: true, AfterID: path[0] - 1})
	if err != nil {
		return nil, err
	}
	return keepIDs(all, path), nil
}

func keepIDs(ms []store.Message, ids []int64) []store.Message {
	want := make(map[int64]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	return slices.DeleteFunc(ms, func(m store.Message) bool { return !want[m.ID] })
}

// SwitchBranch makes the branch through messageID the active one (down to
// its newest leaf): idle chats only (W, E0, E1 keep their state). Messages
// leaving the active branch are hidden, those joining it shown; the result
// lists the hidden ones in DeletedIDs. Switching to the active branch
// changes no message (the snapshot still advances, like every transition).
func (t *Tx) SwitchBranch(chatID uuid.UUID, messageID int64) (Result, error) {
	s, err := t.begin(chatID, SwitchBranch)
	if err != nil {
		return Result{}, err
	}
	b, err := t.readTree(chatID)
	if err != nil {
		return Result{}, err
	}
	if _, ok := b.nodes[messageID]; !ok {
		return Result{}, versionNotFound(messageID)
	}
	on := map[int64]bool{}
	for _, id := range b.through(messageID) {
		on[id] = true
	}
	var hidden []int64
	for _, ids := range b.children {
		for _, id := range ids {
			n := b.nodes[id]
			if n.Deleted == !on[id] {
				continue
			}
			if _, err := t.tx.MessageUpdate(t.ctx, chatID, id, store.MessagePatch{Deleted: store.Some(!on[id])}); err != nil {
				return Result{}, fmt.Errorf("switch message %d of chat %s: %w", id, chatID, err)
			}
			if !on[id] {
				hidden = append(hidden, id)
			}
		}
	}
	slices.Sort(hidden)
	res, err := s.end()
	if err != nil {
		return Result{}, err
	}
	res.DeletedIDs = hidden
	return res, nil
}

// RegenerateInput optionally names the model of a regenerated reply.
type RegenerateInput struct {
	ModelConfigID   uuid.NullUUID
	ReasoningEffort string
}

// RegenerateMessage adds a new version of assistant message k: the branch
// from k on leaves the active branch (hidden, DeletedIDs), and the chat
// runs from k's parent, so the worker's reply is k's sibling. It is
// EditMessage with no replacement turn (the same guard and the same
// effects on the queue, active work and durable requests). A model in in
// becomes the turn's: it is written on the turn's user message, which the
// worker reads the model from, and on the chat as its last model.
func (t *Tx) RegenerateMessage(chatID uuid.UUID, messageID int64, in RegenerateInput) (Result, error) {
	s, err := t.begin(chatID, EditMessage)
	if err != nil {
		return Result{}, err
	}
	target, err := t.tx.MessageGet(t.ctx, chatID, messageID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && target.Deleted) {
		return Result{}, versionNotFound(messageID)
	}
	if err != nil {
		return Result{}, err
	}
	if target.Role != store.RoleAssistant || target.Compressed || target.Visibility == store.VisibilityModel {
		return Result{}, invalid("message", "only assistant replies can be regenerated (message %d is %s)", messageID, target.Role)
	}
	deleted, err := t.hideFrom(chatID, messageID)
	if err != nil {
		return Result{}, err
	}
	if err := t.regenerateModel(chatID, in); err != nil {
		return Result{}, err
	}
	p := running()
	p.RequiresActionDeadlineAt = store.Some[*time.Time](nil)
	if err := t.update(chatID, p); err != nil {
		return Result{}, err
	}
	res, err := s.end()
	if err != nil {
		return Result{}, err
	}
	res.DeletedIDs = deleted
	return res, nil
}

// hideFrom is what a new version of message k does before it is added:
// the queue is cleared, durable requests past k are settled, and the
// active branch from k on is hidden; the next insert is k's sibling.
func (t *Tx) hideFrom(chatID uuid.UUID, messageID int64) ([]int64, error) {
	if err := t.settleRequests(chatID, messageID); err != nil {
		return nil, err
	}
	if _, err := t.tx.QueueDeleteAll(t.ctx, chatID); err != nil {
		return nil, err
	}
	return t.tx.MessageSoftDeleteFrom(t.ctx, chatID, messageID)
}

// regenerateModel writes a regenerate's model on the turn's user message
// (the newest people see on the active branch) and on the chat.
func (t *Tx) regenerateModel(chatID uuid.UUID, in RegenerateInput) error {
	if !in.ModelConfigID.Valid && in.ReasoningEffort == "" {
		return nil
	}
	ms, err := tail(t.ctx, t.tx, chatID)
	if err != nil {
		return err
	}
	mp, cp := store.MessagePatch{}, store.ChatPatch{}
	if in.ModelConfigID.Valid {
		mp.ModelConfigID, cp.LastModelConfigID = store.Some(in.ModelConfigID), store.Some(in.ModelConfigID)
	}
	if in.ReasoningEffort != "" {
		mp.ReasoningEffort, cp.LastReasoningEffort = store.Some(in.ReasoningEffort), store.Some(in.ReasoningEffort)
	}
	if len(ms) > 0 && ms[0].Role == store.RoleUser {
		if _, err := t.tx.MessageUpdate(t.ctx, chatID, ms[0].ID, mp); err != nil {
			return fmt.Errorf("write the model of message %d: %w", ms[0].ID, err)
		}
	}
	return t.update(chatID, cp)
}

// ForkParams fork a chat: a new chat whose history is a copy of the branch
// of Source up to and including MessageID.
type ForkParams struct {
	ID        uuid.UUID // zero: a new one
	Source    uuid.UUID
	MessageID int64
	Title     string // empty: the source's title
}

// Fork creates a chat (Create, landing in W: a fork starts no turn, even
// when the copy ends on a user message) with the source's owner, model,
// tools and project and a copy of the branch from the root to MessageID.
// Tool calls the copy leaves without a result get a cancellation, so every
// call in its history has one. The source does not change.
func (t *Tx) Fork(p ForkParams) (Result, error) {
	src, err := t.tx.ChatGet(t.ctx, p.Source)
	if err != nil {
		return Result{}, fmt.Errorf("chat %s: %w", p.Source, err)
	}
	b, err := t.readTree(p.Source)
	if err != nil {
		return Result{}, err
	}
	if _, ok := b.nodes[p.MessageID]; !ok {
		return Result{}, versionNotFound(p.MessageID)
	}
	path := b.through(p.MessageID)
	path = path[:slices.Index(path, p.MessageID)+1]
	all, err := t.tx.MessageList(t.ctx, p.Source, store.MessageListParams{IncludeDeleted: true, AfterID: path[0] - 1, BeforeID: p.MessageID + 1})
	if err != nil {
		return Result{}, err
	}
	source := store.TitleSourceUser
	if p.Title == "" {
		p.Title, source = src.Title, src.TitleSource
	}
	prompt, err := t.tx.ChatSystemPromptGet(t.ctx, p.Source)
	if err != nil {
		return Result{}, err
	}
	return t.Create(CreateParams{
		ID: p.ID, OwnerID: src.OwnerID, Title: p.Title, TitleSource: source, Labels: src.Labels, SystemPrompt: prompt,
		DynamicTools: src.DynamicTools, MCPServerIDs: src.MCPServerIDs, ToolApproval: src.ToolApproval,
		ProjectID: src.ProjectID,
		Input:     UserInput{ModelConfigID: src.LastModelConfigID, ReasoningEffort: src.LastReasoningEffort},
		Copy:      keepIDs(all, path),
	})
}

// insertCopy appends copies of ms (a fork's branch) to chatID and answers
// the tool calls the copy leaves open.
func (t *Tx) insertCopy(chatID uuid.UUID, ms []store.Message) error {
	for _, m := range ms {
		_, err := t.insertMessage(store.MessageInsertParams{
			ChatID: chatID, Role: m.Role, Content: m.Content, Visibility: m.Visibility, Compressed: m.Compressed,
			CreatedBy: m.CreatedBy, ModelConfigID: m.ModelConfigID, ReasoningEffort: m.ReasoningEffort,
			Usage: m.Usage, Now: m.CreatedAt,
		})
		if err != nil {
			return fmt.Errorf("copy message %d: %w", m.ID, err)
		}
	}
	return t.answerOutstanding(chatID, reasonForked)
}
