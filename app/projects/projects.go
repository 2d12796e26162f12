// Package projects owns projects and their memory (spec: "Project
// memory"). Projects are not chat state: their rows and memories are
// written here, directly in store transactions, and never through
// app/chatstate; a chat's project_id is chat state and chatstate writes it.
//
// Memory writes (SaveMemory, DeleteMemory) are serialised per project by
// store.ProjectTx.ProjectLockMemory, so the cap of MaxMemories holds under
// concurrent writers on any number of replicas.
package projects

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/store"
)

// Limits of projects and memories.
const (
	// MaxNameLen caps a project's name, in characters.
	MaxNameLen = 200
	// MaxInstructionsBytes caps a project's instructions.
	MaxInstructionsBytes = 32 << 10
	// MaxMemories is how many memories a project holds at most.
	MaxMemories = 200
	// PruneReminderAt: from this many memories on, every save's result
	// reminds the agent to prune.
	PruneReminderAt = 180
	// MaxMemoryBytes caps one memory's content.
	MaxMemoryBytes = 16 << 10
	// MaxMemoryNameLen caps a memory name (the pattern enforces it too).
	MaxMemoryNameLen = 64
)

// Defaults of the per-user caps (Limits' zero values).
const (
	// DefaultMaxProjectsPerUser caps the projects one user owns.
	DefaultMaxProjectsPerUser = 1000
	// DefaultMaxMemoriesPerUser caps the memories of all of one user's
	// projects together.
	DefaultMaxMemoriesPerUser = 10000
)

// Limits are the per-user caps. A zero field takes its Default; a
// negative one is unlimited.
type Limits struct {
	// MaxProjectsPerUser caps the projects a user owns (ErrLimitReached
	// on create).
	MaxProjectsPerUser int
	// MaxMemoriesPerUser caps the memories of every project a user owns
	// together (ErrLimitReached on saving a new name).
	MaxMemoriesPerUser int
}

// WithDefaults fills zero fields with the Defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxProjectsPerUser == 0 {
		l.MaxProjectsPerUser = DefaultMaxProjectsPerUser
	}
	if l.MaxMemoriesPerUser == 0 {
		l.MaxMemoriesPerUser = DefaultMaxMemoriesPerUser
	}
	return l
}

// memoryName is the pattern of memory names.
var memoryName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// Errors callers map to answers.
var (
	// ErrNotFound: no such project (or memory) the caller may see.
	ErrNotFound = errors.New("projects: not found")
	// ErrNotEmpty: the project still has chats.
	ErrNotEmpty = errors.New("projects: the project still has chats")
	// ErrMemoryFull: the project holds MaxMemories and the save was of a
	// new name.
	ErrMemoryFull = errors.New("projects: memory is full")
	// ErrLimitReached: the owner holds as many projects, or memories over
	// all their projects, as Limits allow.
	ErrLimitReached = errors.New("projects: a per-user limit is reached")
)

// InputError is bad input, naming the field.
type InputError struct {
	Field, Detail string
}

func (e *InputError) Error() string { return e.Field + ": " + e.Detail }

// Viewer is who asks: admins see every project, others their own.
type Viewer struct {
	UserID uuid.UUID
	Admin  bool
}

func (v Viewer) sees(p store.Project) bool { return v.Admin || p.OwnerID == v.UserID }

// Service reads and writes projects and memories.
type Service struct {
	store  store.Store
	clock  clock.Clock
	limits Limits
}

// New returns a service over s; c stamps created_at and updated_at; l's
// zero fields take the Defaults.
func New(s store.Store, c clock.Clock, l Limits) *Service {
	if c == nil {
		c = clock.Real{}
	}
	return &Service{store: s, clock: c, limits: l.WithDefaults()}
}

// Limits returns the caps in force (negative: unlimited).
func (s *Service) Limits() Limits { return s.limits }

// checkOwnerCap refuses one more of what count counts when the owner
// holds limit already (unlimited when limit is negative). It takes the owner's
// row lock first, so concurrent writers of one user count each other on
// any number of replicas.
func checkOwnerCap(ctx context.Context, tx store.Tx, owner uuid.UUID, limit int, what string,
	count func(context.Context, uuid.UUID) (int64, error)) error {
	if limit < 0 {
		return nil
	}
	if err := tx.UserLock(ctx, owner); err != nil {
		return err
	}
	n, err := count(ctx, owner)
	if err != nil {
		return err
	}
	if n >= int64(limit) {
		return fmt.Errorf("%w: you have %d %s; at most %d", ErrLimitReached, n, what, limit)
	}
	return nil
}

// Change is a PATCH of a project: set fields are written.
type Change struct {
	Name         *string
	Instructions *string
}

func checkName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		return "", &InputError{"name", "name must not be empty"}
	case n > MaxNameLen:
		return "", &InputError{"name", fmt.Sprintf("name is %d characters; at most %d", n, MaxNameLen)}
	case !utf8.ValidString(name) || strings.ContainsRune(name, 0):
		return "", &InputError{"name", "name must be valid UTF-8 without NUL"}
	}
	return name, nil
}

func checkInstructions(s string) error {
	if len(s) > MaxInstructionsBytes {
		return &InputError{"instructions", fmt.Sprintf("instructions are %d bytes; at most %d", len(s), MaxInstructionsBytes)}
	}
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return &InputError{"instructions", "instructions must be valid UTF-8 without NUL"}
	}
	return nil
}

// Create makes a project owned by owner.
func (s *Service) Create(ctx context.Context, owner uuid.UUID, name, instructions string) (store.Project, error) {
	name, err := checkName(name)
	if err != nil {
		return store.Project{}, err
	}
	if err := checkInstructions(instructions); err != nil {
		return store.Project{}, err
	}
	var p store.Project
	err = s.store.InTx(ctx, func(tx store.Tx) error {
		err := checkOwnerCap(ctx, tx, owner, s.limits.MaxProjectsPerUser, "projects", tx.ProjectCountByOwner)
		if err != nil {
			return err
		}
		p, err = tx.ProjectInsert(ctx, store.ProjectInsertParams{
			ID: uuid.New(), OwnerID: owner, Name: name, Instructions: instructions, Now: s.clock.Now(),
		})
		return err
	})
	if err != nil {
		return store.Project{}, fmt.Errorf("create project: %w", err)
	}
	return p, nil
}

// Get reads a project v may see.
func (s *Service) Get(ctx context.Context, v Viewer, id uuid.UUID) (store.Project, error) {
	var p store.Project
	err := s.store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		p, err = get(ctx, tx, v, id)
		return err
	})
	return p, err
}

func get(ctx context.Context, tx store.Reader, v Viewer, id uuid.UUID) (store.Project, error) {
	p, err := tx.ProjectGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && !v.sees(p) {
		return store.Project{}, fmt.Errorf("project %s: %w", id, ErrNotFound)
	}
	return p, err
}

// List lists the projects v may see, oldest first.
func (s *Service) List(ctx context.Context, v Viewer, limit int) ([]store.Project, error) {
	p := store.ProjectListParams{Limit: limit}
	if !v.Admin {
		p.OwnerID = uuid.NullUUID{UUID: v.UserID, Valid: true}
	}
	var out []store.Project
	err := s.store.ReadTx(ctx, func(tx store.Reader) error {
		var err error
		out, err = tx.ProjectList(ctx, p)
		return err
	})
	return out, err
}

// Update applies c to a project v may see.
func (s *Service) Update(ctx context.Context, v Viewer, id uuid.UUID, c Change) (store.Project, error) {
	var patch store.ProjectPatch
	if c.Name != nil {
		name, err := checkName(*c.Name)
		if err != nil {
			return store.Project{}, err
		}
		patch.Name = store.Some(name)
	}
	if c.Instructions != nil {
		if err := checkInstructions(*c.Instructions); err != nil {
			return store.Project{}, err
		}
		patch.Instructions = store.Some(*c.Instructions)
	}
	var p store.Project
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		if _, err := get(ctx, tx, v, id); err != nil {
			return err
		}
		if patch.Name.Set || patch.Instructions.Set {
			patch.UpdatedAt = store.Some(s.clock.Now())
		}
		var err error
		p, err = tx.ProjectUpdate(ctx, id, patch)
		return err
	})
	return p, err
}

// Delete removes a project v may see, with its memories; ErrNotEmpty
// while it has chats (archived ones too).
func (s *Service) Delete(ctx context.Context, v Viewer, id uuid.UUID) error {
	return s.store.InTx(ctx, func(tx store.Tx) error {
		if _, err := get(ctx, tx, v, id); err != nil {
			return err
		}
		n, err := tx.ProjectCountChats(ctx, id)
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("project %s has %d chats: %w", id, n, ErrNotEmpty)
		}
		// A chat created in it since the count is refused by the
		// database (the chats' foreign key): the delete fails instead.
		if _, err := tx.ProjectDelete(ctx, id); err != nil {
			if errors.Is(err, store.ErrForeignKey) {
				return fmt.Errorf("project %s: %w", id, ErrNotEmpty)
			}
			return err
		}
		return nil
	})
}
