package worker

import (
	"context"
	"fmt"
	"strings"

	"github.com/chatd/chatd/app/llm"
	"github.com/chatd/chatd/app/projects"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
)

// Memory is what the memory tools need of app/projects: the memory of one
// project, its writes serialised per project there.
type Memory = projects.MemoryStore

// memoryGuidance is the memory block of a project chat's system prompt. It
// never changes with the memories, so the prompt prefix stays cacheable;
// the live index is in read_memory's description.
const memoryGuidance = `This chat is in a project whose chats share a durable memory. ` +
	`Use it for what later chats in the project should know: decisions, preferences, facts about the work. ` +
	`The read_memory tool's description lists what the memory holds; read a memory before relying on it. ` +
	`Save with save_memory (a short lowercase name and the content; saving an existing name replaces it), ` +
	`remove stale or wrong memories with delete_memory, and keep memories few and current: merge related ones.`

// loadProject reads the chat's project and, for a root chat, its memory
// index in the load snapshot.
func (v *view) loadProject(ctx context.Context, tx store.Reader) error {
	if !v.chat.ProjectID.Valid {
		return nil
	}
	p, err := tx.ProjectGet(ctx, v.chat.ProjectID.UUID)
	if err != nil {
		return fmt.Errorf("read project of chat %s: %w", v.chat.ID, err)
	}
	v.project = &p
	if v.hasMemory() {
		if v.memories, err = tx.MemoryList(ctx, p.ID); err != nil {
			return fmt.Errorf("read memory index of chat %s: %w", v.chat.ID, err)
		}
	}
	return nil
}

// hasMemory: root chats in a project have memory; other chats none.
func (v view) hasMemory() bool { return v.project != nil && !v.chat.ParentChatID.Valid }

// projectPrompt is the system message a project adds before the chat's
// own: its instructions and, for a root chat, the memory guidance.
func (v view) projectPrompt() (llm.Message, bool) {
	if v.project == nil {
		return llm.Message{}, false
	}
	var b strings.Builder
	if ins := strings.TrimSpace(v.project.Instructions); ins != "" {
		fmt.Fprintf(&b, "Project %q instructions:\n%s", v.project.Name, ins)
	}
	if v.hasMemory() {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(memoryGuidance)
	}
	if b.Len() == 0 {
		return llm.Message{}, false
	}
	return llm.Message{Role: store.RoleSystem, Parts: []sdk.ChatMessagePart{{Type: sdk.PartText, Text: b.String()}}}, true
}

// memoryTools are the memory tools (app/projects) of a root chat in a
// project, bound to the chat and its project, with the memory index of the
// step's snapshot.
func (r *runner) memoryTools(v view) []tools.Tool {
	mem := r.w.deps.Memory
	if mem == nil || !v.hasMemory() {
		return nil
	}
	return projects.MemoryTools(mem, v.project.ID, v.chat.ID, v.memories)
}
