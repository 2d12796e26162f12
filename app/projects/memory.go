package projects

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/chatd/chatd/store"
)

// CheckMemoryName validates a memory name.
func CheckMemoryName(name string) error {
	if !memoryName.MatchString(name) {
		return &InputError{"name", fmt.Sprintf("memory name %q must match ^[a-z0-9][a-z0-9._-]{0,63}$", name)}
	}
	return nil
}

func checkContent(content string) error {
	if strings.TrimSpace(content) == "" {
		return &InputError{"content", "content must not be empty"}
	}
	if len(content) > MaxMemoryBytes {
		return &InputError{"content", fmt.Sprintf("content is %d bytes; at most %d", len(content), MaxMemoryBytes)}
	}
	if !utf8.ValidString(content) || strings.ContainsRune(content, 0) {
		return &InputError{"content", "content must be valid UTF-8 without NUL"}
	}
	return nil
}

// Memories lists a project's memories by name. The caller has checked
// the project is visible (Get) or is a chat in it.
func (s *Service) Memories(ctx context.Context, projectID uuid.UUID) ([]store.Memory, error) {
	var out []store.Memory
	err := s.store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		out, err = tx.MemoryList(ctx, projectID)
		return err
	})
	return out, err
}

// Memory reads one memory; ErrNotFound when there is none.
func (s *Service) Memory(ctx context.Context, projectID uuid.UUID, name string) (store.Memory, error) {
	if err := CheckMemoryName(name); err != nil {
		return store.Memory{}, err
	}
	var m store.Memory
	err := s.store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		m, err = tx.MemoryGet(ctx, projectID, name)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return store.Memory{}, fmt.Errorf("memory %q: %w", name, ErrNotFound)
	}
	return m, err
}

// SaveResult is what a save did.
type SaveResult struct {
	Memory store.Memory
	// Created: the name was new.
	Created bool
	// Count is the project's memories after the save.
	Count int64
}

// SaveMemory creates or replaces a memory under the project's memory lock.
// chat is the chat that writes it (unset: a person). At MaxMemories a new
// name is refused with ErrMemoryFull, and at the owner's
// MaxMemoriesPerUser with ErrLimitReached; replacing an existing one is
// not refused.
func (s *Service) SaveMemory(ctx context.Context, projectID uuid.UUID, name, content string, chat uuid.NullUUID) (SaveResult, error) {
	if err := CheckMemoryName(name); err != nil {
		return SaveResult{}, err
	}
	if err := checkContent(content); err != nil {
		return SaveResult{}, err
	}
	var res SaveResult
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		res = SaveResult{}
		// The owner's lock (for the per-user cap) before the project's,
		// the order every writer takes them in.
		project, err := tx.ProjectGet(ctx, projectID)
		if err == nil && s.limits.MaxMemoriesPerUser >= 0 {
			err = tx.UserLock(ctx, project.OwnerID)
		}
		if err == nil {
			_, err = tx.ProjectLockMemory(ctx, projectID)
		}
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("project %s: %w", projectID, ErrNotFound)
		}
		if err != nil {
			return err
		}
		n, err := tx.MemoryCount(ctx, projectID)
		if err != nil {
			return err
		}
		_, err = tx.MemoryGet(ctx, projectID, name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			res.Created = true
			if n >= MaxMemories {
				return fmt.Errorf("project %s holds %d memories: %w", projectID, n, ErrMemoryFull)
			}
			if err := s.checkMemoriesOfOwner(ctx, tx, project.OwnerID); err != nil {
				return err
			}
			n++
		case err != nil:
			return err
		}
		res.Count = n
		res.Memory, err = tx.MemoryUpsert(ctx, store.Memory{
			ProjectID: projectID, Name: name, Content: content, ChatID: chat, UpdatedAt: s.clock.Now(),
		})
		return err
	})
	if err != nil {
		return SaveResult{}, err
	}
	return res, nil
}

// DeleteMemory removes a memory under the project's memory lock and
// reports whether it existed, with the count left.
func (s *Service) DeleteMemory(ctx context.Context, projectID uuid.UUID, name string) (existed bool, count int64, err error) {
	if err := CheckMemoryName(name); err != nil {
		return false, 0, err
	}
	err = s.store.InTx(ctx, func(tx store.Tx) error {
		if _, err := tx.ProjectLockMemory(ctx, projectID); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("project %s: %w", projectID, ErrNotFound)
			}
			return err
		}
		n, err := tx.MemoryDelete(ctx, projectID, name)
		if err != nil {
			return err
		}
		existed = n > 0
		count, err = tx.MemoryCount(ctx, projectID)
		return err
	})
	return existed, count, err
}

// checkMemoriesOfOwner refuses a new memory when the owner's projects
// hold MaxMemoriesPerUser together; SaveMemory holds the owner's lock.
func (s *Service) checkMemoriesOfOwner(ctx context.Context, tx store.Tx, owner uuid.UUID) error {
	limit := s.limits.MaxMemoriesPerUser
	if limit < 0 {
		return nil
	}
	n, err := tx.MemoryCountByOwner(ctx, owner)
	if err != nil {
		return err
	}
	if n >= int64(limit) {
		return fmt.Errorf("%w: your projects hold %d memories together; at most %d", ErrLimitReached, n, limit)
	}
	return nil
}
