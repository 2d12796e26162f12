package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/llm/modelinfo"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/tools"
	"github.com/chatd/chatd/store"
)

type waitArgs struct {
	ChatIDs        []string `json:"chat_ids"`
	TimeoutSeconds *int     `json:"timeout_seconds"`
}

// stopped: the child is not working (a chat waiting on a person counts as
// stopped: only the person can move it on).
func stopped(s store.ChatStatus) bool {
	return s != store.ChatStatusRunning && s != store.ChatStatusInterrupting
}

// wait blocks until every named child stops running or the timeout ends,
// woken by the children's update notifications and, as notifications are
// hints, re-reading every sync interval.
func (a *Service) wait(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var args waitArgs
	if err := tools.DecodeArgs(raw, &args); err != nil {
		return nil, err
	}
	call, _, err := a.caller(ctx)
	if err != nil {
		return nil, err
	}
	if len(args.ChatIDs) == 0 || len(args.ChatIDs) > MaxWaitChats {
		return nil, fmt.Errorf("chat_ids must name 1 to %d subagents", MaxWaitChats)
	}
	timeout := DefaultAgentWait
	if args.TimeoutSeconds != nil {
		if *args.TimeoutSeconds < 1 {
			return nil, errors.New("timeout_seconds must be at least 1")
		}
		timeout = min(time.Duration(*args.TimeoutSeconds)*time.Second, MaxAgentWait)
	}
	var ids []uuid.UUID
	for _, s := range args.ChatIDs {
		c, err := a.child(ctx, call.ChatID, s)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ids, c.ID) {
			ids = append(ids, c.ID)
		}
	}
	wake := make(chan struct{}, 1)
	for _, id := range ids {
		cancel, err := a.deps.Pubsub.Subscribe(ctx, pubsub.ChannelUpdate(id.String()), func([]byte) {
			select {
			case wake <- struct{}{}:
			default:
			}
		})
		if err != nil {
			return nil, fmt.Errorf("subscribe to subagent %s: %w", id, err)
		}
		defer cancel()
	}
	deadline := a.deps.Clock.NewTimer(timeout)
	defer deadline.Stop()
	tick := a.deps.Clock.NewTicker(a.cfg.SyncInterval)
	defer tick.Stop()
	for {
		// Subscribed before the read: a change after it wakes the loop.
		statuses, err := a.statuses(ctx, ids)
		if err != nil {
			return nil, err
		}
		done := !slices.ContainsFunc(statuses, func(s AgentStatus) bool { return !stopped(store.ChatStatus(s.Status)) })
		if done {
			return json.Marshal(map[string]any{"timed_out": false, "agents": statuses})
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C():
			return json.Marshal(map[string]any{"timed_out": true, "agents": statuses})
		case <-wake:
		case <-tick.C():
		}
	}
}

// statuses reads each chat's status, last assistant text and error.
func (a *Service) statuses(ctx context.Context, ids []uuid.UUID) ([]AgentStatus, error) {
	out := make([]AgentStatus, 0, len(ids))
	err := a.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		out = out[:0]
		for _, id := range ids {
			c, err := tx.ChatGet(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				out = append(out, AgentStatus{ChatID: id, Status: "deleted"})
				continue
			}
			if err != nil {
				return err
			}
			s, err := agentStatus(ctx, tx, c)
			if err != nil {
				return err
			}
			out = append(out, s)
		}
		return nil
	})
	return out, err
}

// agentStatus describes c; its last assistant text is the text of the
// newest assistant message that has any.
func agentStatus(ctx context.Context, tx store.Reader, c store.Chat) (AgentStatus, error) {
	s := AgentStatus{ChatID: c.ID, Title: c.Title, Status: string(c.Status)}
	if c.ParentChatID.Valid {
		s.ParentChatID = &c.ParentChatID.UUID
	}
	if len(c.LastError) > 0 {
		var e sdk.ChatError
		if err := json.Unmarshal(c.LastError, &e); err == nil {
			s.Error = &e
		}
	}
	const page = 50
	before := int64(0)
	for {
		ms, err := tx.MessageList(ctx, c.ID, store.MessageListParams{BeforeID: before, Limit: page, Descending: true})
		if err != nil {
			return s, fmt.Errorf("read messages of %s: %w", c.ID, err)
		}
		for _, m := range ms {
			if m.Role != store.RoleAssistant || m.Visibility == store.VisibilityModel {
				continue
			}
			var parts []sdk.ChatMessagePart
			_ = json.Unmarshal(m.Content, &parts)
			var b strings.Builder
			for _, p := range parts {
				if p.Type == sdk.PartText {
					b.WriteString(p.Text)
				}
			}
			if b.Len() > 0 {
				s.LastAssistantText = b.String()
				return s, nil
			}
		}
		if len(ms) < page {
			return s, nil
		}
		before = ms[len(ms)-1].ID
	}
}

// list lists the calling chat's family (every chat under its root but
// itself) with status.
func (a *Service) list(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	if err := tools.DecodeArgs(raw, &struct{}{}); err != nil {
		return nil, err
	}
	_, c, err := a.caller(ctx)
	if err != nil {
		return nil, err
	}
	out := []AgentStatus{}
	err = a.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		family, err := tx.ChatDescendants(ctx, c.Root())
		if err != nil {
			return err
		}
		slices.SortFunc(family, func(x, y store.Chat) int { return x.CreatedAt.Compare(y.CreatedAt) })
		for _, m := range family {
			if m.ID == c.ID {
				continue
			}
			s, err := agentStatus(ctx, tx, m)
			if err != nil {
				return err
			}
			out = append(out, s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"agents": out})
}

// models lists the models spawn_agent accepts and the reasoning efforts.
func (a *Service) models(_ context.Context, raw json.RawMessage) (json.RawMessage, error) {
	if err := tools.DecodeArgs(raw, &struct{}{}); err != nil {
		return nil, err
	}
	type model struct {
		ID          uuid.UUID `json:"model_config_id"`
		DisplayName string    `json:"display_name"`
		Provider    string    `json:"provider"`
		Model       string    `json:"model"`
		Default     bool      `json:"default,omitempty"`
	}
	out := []model{}
	if a.deps.Models != nil {
		for _, m := range a.deps.Models() {
			if m.Enabled {
				out = append(out, model{ID: m.ID, DisplayName: m.DisplayName, Provider: m.Provider, Model: m.Model, Default: m.IsDefault || m.Default})
			}
		}
	}
	return json.Marshal(map[string]any{"models": out, "reasoning_efforts": modelinfo.RequestEfforts,
		"default": "the calling chat's model and reasoning effort"})
}
