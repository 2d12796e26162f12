package projects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
)

// The memory tools (spec: "Project memory"): a root chat in a project
// reads and writes the project's memory with them. They are tools.Tool
// implementations the worker only runs.

// MemoryStore is what the memory tools need: the memory of one project,
// its writes serialised per project (Service has it).
type MemoryStore interface {
	Memories(ctx context.Context, projectID uuid.UUID) ([]store.Memory, error)
	Memory(ctx context.Context, projectID uuid.UUID, name string) (store.Memory, error)
	SaveMemory(ctx context.Context, projectID uuid.UUID, name, content string, chat uuid.NullUUID) (SaveResult, error)
	DeleteMemory(ctx context.Context, projectID uuid.UUID, name string) (existed bool, count int64, err error)
}

var _ MemoryStore = (*Service)(nil)

// Names of the memory tools.
const (
	ToolReadMemory   = "read_memory"
	ToolSaveMemory   = "save_memory"
	ToolDeleteMemory = "delete_memory"
)

// indexSummaryLen caps the summary of a memory in the index, in characters.
const indexSummaryLen = 100

// memoryIndex is read_memory's description: the live index, as of the
// step's snapshot.
func memoryIndex(ms []store.Memory) string {
	var b strings.Builder
	b.WriteString("Reads the project's memory: with a name, that memory's content; without one, the index. ")
	fmt.Fprintf(&b, "The memory holds %d of at most %d memories", len(ms), MaxMemories)
	if len(ms) == 0 {
		b.WriteString(".")
		return b.String()
	}
	b.WriteString(":")
	for _, m := range ms {
		fmt.Fprintf(&b, "\n- %s: %s", m.Name, summary(m.Content))
	}
	return b.String()
}

// summary is a memory's first line, shortened.
func summary(content string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(content), "\n")
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) > indexSummaryLen {
		line = string([]rune(line)[:indexSummaryLen]) + "…"
	}
	return line
}

// MemoryTools are the memory tools of a root chat in a project, bound to
// the chat and its project (they need no other context from the run).
// index is the project's memory as the step's snapshot read it: it becomes
// read_memory's description.
func MemoryTools(mem MemoryStore, project, chatID uuid.UUID, index []store.Memory) []tools.Tool {
	chat := uuid.NullUUID{UUID: chatID, Valid: true}
	return []tools.Tool{
		&tools.Func{
			ToolName: ToolReadMemory, EffectClass: store.EffectPure, Desc: memoryIndex(index),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"the memory to read; omit for the index"}}}`),
			Fn: func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
				var args struct {
					Name string `json:"name"`
				}
				if err := tools.DecodeArgs(raw, &args); err != nil {
					return nil, err
				}
				if args.Name == "" {
					ms, err := mem.Memories(ctx, project)
					if err != nil {
						return nil, err
					}
					type entry struct {
						Name      string `json:"name"`
						Summary   string `json:"summary"`
						UpdatedAt string `json:"updated_at"`
					}
					index := make([]entry, 0, len(ms))
					for _, m := range ms {
						index = append(index, entry{m.Name, summary(m.Content), m.UpdatedAt.Format("2006-01-02T15:04:05Z")})
					}
					return json.Marshal(map[string]any{"memories": index, "count": len(ms), "limit": MaxMemories})
				}
				m, err := mem.Memory(ctx, project, args.Name)
				if errors.Is(err, ErrNotFound) {
					return nil, fmt.Errorf("no memory is named %q; call read_memory without a name for the index", args.Name)
				}
				if err != nil {
					return nil, err
				}
				return json.Marshal(map[string]any{"name": m.Name, "content": m.Content, "updated_at": m.UpdatedAt})
			},
		},
		&tools.Func{
			// Saving the same content under the same name again leaves the
			// same memory: a save re-run after a crash is harmless.
			ToolName: ToolSaveMemory, EffectClass: store.EffectIdempotent,
			Desc: fmt.Sprintf("Saves a memory for every chat in this project: a name (lowercase letters, digits, '.', '_', '-'; "+
				"at most 64) and its content (at most %d bytes). Saving an existing name replaces its content. "+
				"The project holds at most %d memories.", MaxMemoryBytes, MaxMemories),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","pattern":"^[a-z0-9][a-z0-9._-]{0,63}$"},"content":{"type":"string"}},"required":["name","content"]}`),
			Fn: func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
				var args struct {
					Name    string `json:"name"`
					Content string `json:"content"`
				}
				if err := tools.DecodeArgs(raw, &args); err != nil {
					return nil, err
				}
				res, err := mem.SaveMemory(ctx, project, args.Name, args.Content, chat)
				if errors.Is(err, ErrMemoryFull) {
					return nil, fmt.Errorf("the project's memory is full (%d of %d memories), so %q was not saved: "+
						"delete memories that are stale (delete_memory) or fold this one into an existing memory "+
						"(save_memory with that memory's name), in this turn", MaxMemories, MaxMemories, args.Name)
				}
				if err != nil {
					return nil, err
				}
				out := map[string]any{"saved": res.Memory.Name, "created": res.Created, "count": res.Count, "limit": MaxMemories}
				if res.Count >= PruneReminderAt {
					out["reminder"] = fmt.Sprintf("The project holds %d of at most %d memories. Prune now: delete stale memories "+
						"and merge related ones, so later saves have room.", res.Count, MaxMemories)
				}
				return json.Marshal(out)
			},
		},
		&tools.Func{
			// Deleting a memory that is gone is still gone.
			ToolName: ToolDeleteMemory, EffectClass: store.EffectIdempotent,
			Desc:        "Deletes a memory of this project by name.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
			Fn: func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
				var args struct {
					Name string `json:"name"`
				}
				if err := tools.DecodeArgs(raw, &args); err != nil {
					return nil, err
				}
				existed, n, err := mem.DeleteMemory(ctx, project, args.Name)
				if err != nil {
					return nil, err
				}
				return json.Marshal(map[string]any{"deleted": args.Name, "existed": existed, "count": n, "limit": MaxMemories})
			},
		},
	}
}
