package projects_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/projects"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
)

// memFake is a MemoryStore of one project in memory.
type memFake struct {
	project uuid.UUID
	ms      map[string]store.Memory
	savedBy uuid.NullUUID
	count   int64 // SaveMemory's reported count (0: the real one)
}

func (f *memFake) check(p uuid.UUID) error {
	if p != f.project {
		return fmt.Errorf("project %s: %w", p, projects.ErrNotFound)
	}
	return nil
}

func (f *memFake) Memories(_ context.Context, p uuid.UUID) ([]store.Memory, error) {
	var out []store.Memory
	for _, m := range f.ms {
		out = append(out, m)
	}
	return out, f.check(p)
}

func (f *memFake) Memory(_ context.Context, p uuid.UUID, name string) (store.Memory, error) {
	m, ok := f.ms[name]
	if !ok {
		return m, projects.ErrNotFound
	}
	return m, f.check(p)
}

func (f *memFake) SaveMemory(_ context.Context, p uuid.UUID, name, content string, chat uuid.NullUUID) (projects.SaveResult, error) {
	if err := f.check(p); err != nil {
		return projects.SaveResult{}, err
	}
	_, existed := f.ms[name]
	if !existed && len(f.ms) >= projects.MaxMemories {
		return projects.SaveResult{}, projects.ErrMemoryFull
	}
	f.savedBy = chat
	m := store.Memory{ProjectID: p, Name: name, Content: content, ChatID: chat, UpdatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	f.ms[name] = m
	n := int64(len(f.ms))
	if f.count > 0 {
		n = f.count
	}
	return projects.SaveResult{Memory: m, Created: !existed, Count: n}, nil
}

func (f *memFake) DeleteMemory(_ context.Context, p uuid.UUID, name string) (bool, int64, error) {
	_, existed := f.ms[name]
	delete(f.ms, name)
	return existed, int64(len(f.ms)), f.check(p)
}

// TestMemoryTools runs the memory tools against a MemoryStore: their
// names and effect classes, the index in read_memory's description, and
// each tool's result and errors.
func TestMemoryTools(t *testing.T) {
	ctx := context.Background()
	project, chat := uuid.New(), uuid.New()
	long := strings.Repeat("é", 120)
	mem := &memFake{project: project, ms: map[string]store.Memory{}}
	index := []store.Memory{{Name: "style", Content: "  terse\nmore lines"}, {Name: "long", Content: long}}
	ts := projects.MemoryTools(mem, project, chat, index)
	byName := map[string]tools.Tool{}
	for _, tl := range ts {
		byName[tl.Name()] = tl
	}
	require.Len(t, byName, 3)
	require.Equal(t, store.EffectPure, byName[projects.ToolReadMemory].Effect())
	require.Equal(t, store.EffectIdempotent, byName[projects.ToolSaveMemory].Effect())
	require.Equal(t, store.EffectIdempotent, byName[projects.ToolDeleteMemory].Effect())
	desc := byName[projects.ToolReadMemory].Description()
	require.Contains(t, desc, fmt.Sprintf("holds 2 of at most %d memories:", projects.MaxMemories))
	require.Contains(t, desc, "\n- style: terse")
	require.Contains(t, desc, "\n- long: "+strings.Repeat("é", 100)+"…")
	require.Contains(t, projects.MemoryTools(mem, project, chat, nil)[0].Description(), "holds 0 of at most")

	run := func(name, args string) (map[string]any, error) {
		raw, err := byName[name].Run(ctx, json.RawMessage(args))
		if err != nil {
			return nil, err
		}
		var out map[string]any
		require.NoError(t, json.Unmarshal(raw, &out))
		return out, nil
	}
	out, err := run(projects.ToolSaveMemory, `{"name":"style","content":"terse"}`)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"saved": "style", "created": true, "count": 1.0, "limit": float64(projects.MaxMemories)}, out)
	require.Equal(t, uuid.NullUUID{UUID: chat, Valid: true}, mem.savedBy, "a save names the chat that wrote it")

	out, err = run(projects.ToolReadMemory, `{"name":"style"}`)
	require.NoError(t, err)
	require.Equal(t, "terse", out["content"])
	out, err = run(projects.ToolReadMemory, ``)
	require.NoError(t, err, "an empty input is {}")
	require.Equal(t, 1.0, out["count"])
	_, err = run(projects.ToolReadMemory, `{"name":"nope"}`)
	require.ErrorContains(t, err, `no memory is named "nope"`)
	_, err = run(projects.ToolReadMemory, `{"nam":"style"}`)
	require.ErrorContains(t, err, "invalid arguments", "a misspelt argument is refused")

	mem.count = projects.PruneReminderAt
	out, err = run(projects.ToolSaveMemory, `{"name":"style","content":"terser"}`)
	require.NoError(t, err)
	require.Equal(t, false, out["created"])
	require.Contains(t, out["reminder"], "Prune now")

	for i := len(mem.ms); i < projects.MaxMemories; i++ {
		mem.ms[fmt.Sprint("m", i)] = store.Memory{}
	}
	_, err = run(projects.ToolSaveMemory, `{"name":"another","content":"x"}`)
	require.ErrorContains(t, err, "the project's memory is full")

	out, err = run(projects.ToolDeleteMemory, `{"name":"style"}`)
	require.NoError(t, err)
	require.Equal(t, true, out["existed"])
	out, err = run(projects.ToolDeleteMemory, `{"name":"style"}`)
	require.NoError(t, err)
	require.Equal(t, false, out["existed"], "deleting a memory that is gone is still gone")
}
