package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/app/usage"
	"github.com/chatd/chatd/store"
)

func (s *Server) usageRoutes() {
	chat := func(method, path string, h func(http.ResponseWriter, *http.Request, *caller) error) {
		for _, prefix := range []string{"/api/v2", "/api/experimental"} {
			s.mux.Handle(method+" "+prefix+path, s.instrument(method+" /api/*"+path, s.handle(s.authed(s.limitWrites(h)))))
		}
	}
	chat("GET", "/users/{user}/usage", s.userUsage)
	chat("GET", "/usage", s.allUsage)
}

// budgetError answers a refused turn: 429 naming the limit and its reset.
func budgetError(e *usage.ExceededError) error {
	return newError(http.StatusTooManyRequests, sdk.CodeBudgetExceeded,
		fmt.Sprintf("Usage budget exceeded: the %s limit is spent; nothing was created. It resets at %s.",
			e.Limit, e.ResetsAt.UTC().Format(time.RFC3339)), e.Error())
}

// checkBudget refuses a turn of owner's when a budget is spent. A durable
// request already claimed is not refused: its answer is the claim's.
func (s *Server) checkBudget(ctx context.Context, owner uuid.UUID, requestID uuid.NullUUID) error {
	if s.deps.Usage == nil {
		return nil
	}
	if requestID.Valid {
		if claimed, err := s.claimed(ctx, requestID.UUID); err != nil || claimed {
			return err
		}
	}
	err := s.deps.Usage.CheckNow(ctx, owner)
	var e *usage.ExceededError
	if errors.As(err, &e) {
		return budgetError(e)
	}
	return err
}

// checkChatBudget is checkBudget for a turn of an existing chat: its owner
// pays (a chat the caller may not see is 404 first).
func (s *Server) checkChatBudget(r *http.Request, c *caller, chatID uuid.UUID, requestID uuid.NullUUID) error {
	if s.deps.Usage == nil {
		return nil
	}
	var owner uuid.UUID
	err := s.deps.Store.ReadTx(r.Context(), func(tx store.Reader) error {
		chat, err := s.readChat(r.Context(), c, tx, chatID)
		owner = chat.OwnerID
		return err
	})
	if err != nil {
		return err
	}
	return s.checkBudget(r.Context(), owner, requestID)
}

// usageQuery is a report's window and grouping: from and to are RFC 3339
// times or YYYY-MM-DD days (to exclusive); without them the current UTC
// month.
func (s *Server) usageQuery(r *http.Request, groups ...string) (store.UsageSumParams, error) {
	q := r.URL.Query()
	now := s.deps.Clock.Now().UTC()
	p := store.UsageSumParams{From: usage.MonthStart(now), To: usage.MonthStart(now).AddDate(0, 1, 0), GroupBy: q.Get("group_by")}
	for _, b := range []struct {
		name string
		dst  *time.Time
	}{{"from", &p.From}, {"to", &p.To}} {
		v := q.Get(b.name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			if t, err = time.Parse(time.DateOnly, v); err != nil {
				return p, validation(b.name, "must be an RFC 3339 time or a YYYY-MM-DD day")
			}
		}
		*b.dst = t.UTC()
	}
	if !p.To.After(p.From) {
		return p, validation("to", "must be after from")
	}
	if p.GroupBy == "" {
		p.GroupBy = store.UsageGroupDay
	}
	for _, g := range groups {
		if g == p.GroupBy {
			return p, nil
		}
	}
	return p, validation("group_by", fmt.Sprintf("must be one of %v", groups))
}

func (s *Server) userUsage(w http.ResponseWriter, r *http.Request, c *caller) error {
	u, err := s.pathUser(r, c)
	if err != nil {
		return err
	}
	p, err := s.usageQuery(r, store.UsageGroupDay, store.UsageGroupModel, store.UsageGroupChat)
	if err != nil {
		return err
	}
	p.UserID = uuid.NullUUID{UUID: u.ID, Valid: true}
	out, err := s.usageReport(r.Context(), p, func(ctx context.Context, tx store.Reader, out *sdk.UsageResponse) error {
		if s.deps.Usage == nil {
			return nil
		}
		st, err := s.deps.Usage.State(ctx, tx, u.ID)
		out.Budget = &st
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) allUsage(w http.ResponseWriter, r *http.Request, c *caller) error {
	if !c.user.Admin {
		return errAdminOnly
	}
	p, err := s.usageQuery(r, store.UsageGroupUser, store.UsageGroupDay, store.UsageGroupModel, store.UsageGroupChat)
	if err != nil {
		return err
	}
	if r.URL.Query().Get("group_by") == "" {
		p.GroupBy = store.UsageGroupUser
	}
	out, err := s.usageReport(r.Context(), p, func(ctx context.Context, tx store.Reader, out *sdk.UsageResponse) error {
		if p.GroupBy != store.UsageGroupUser {
			return nil
		}
		users, err := tx.UserList(ctx)
		names := map[string]string{}
		for _, u := range users {
			names[u.ID.String()] = u.Name
		}
		for i := range out.Rows {
			out.Rows[i].Username = names[out.Rows[i].UserID.String()]
		}
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// usageReport reads p's rows and total in one snapshot; more adds to it.
func (s *Server) usageReport(ctx context.Context, p store.UsageSumParams, more func(context.Context, store.Reader, *sdk.UsageResponse) error) (sdk.UsageResponse, error) {
	out := sdk.UsageResponse{From: p.From, To: p.To, GroupBy: p.GroupBy, Rows: []sdk.UsageRow{}}
	err := s.deps.Store.ReadTx(ctx, func(tx store.Reader) error {
		rows, err := tx.UsageSum(ctx, p)
		if err != nil {
			return err
		}
		var total store.UsageTokens
		for _, row := range rows {
			total = total.Add(row.UsageTokens)
			out.Rows = append(out.Rows, usageRow(p.GroupBy, row))
		}
		out.Total = usage.Totals(total)
		return more(ctx, tx, &out)
	})
	return out, err
}

func usageRow(group string, row store.UsageRow) sdk.UsageRow {
	out := sdk.UsageRow{Calls: row.Calls, UsageTotals: usage.Totals(row.UsageTokens)}
	switch group {
	case store.UsageGroupDay:
		out.Day = row.Key
	case store.UsageGroupModel:
		out.Model = row.Key
	case store.UsageGroupChat, store.UsageGroupUser:
		id, err := uuid.Parse(row.Key)
		if err == nil && group == store.UsageGroupChat {
			out.ChatID = &id
		} else if err == nil {
			out.UserID = &id
		}
	}
	return out
}

// chatUsage is a chat's total, for the chat object.
func chatUsage(ctx context.Context, tx store.Reader, id uuid.UUID) (*sdk.UsageTotals, error) {
	rows, err := tx.UsageSum(ctx, store.UsageSumParams{ChatIDs: []uuid.UUID{id}})
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	t := usage.Totals(rows[0].UsageTokens)
	return &t, nil
}

// chatUsages are the usage totals of a page of chats, by chat, in one
// read of the ledger (chats with nothing recorded are absent).
func chatUsages(ctx context.Context, tx store.Reader, chats []store.Chat) (map[uuid.UUID]*sdk.UsageTotals, error) {
	if len(chats) == 0 {
		return nil, nil
	}
	ids := make([]uuid.UUID, len(chats))
	for i, c := range chats {
		ids[i] = c.ID
	}
	rows, err := tx.UsageSum(ctx, store.UsageSumParams{ChatIDs: ids, GroupBy: store.UsageGroupChat})
	if err != nil {
		return nil, fmt.Errorf("usage of the listed chats: %w", err)
	}
	out := make(map[uuid.UUID]*sdk.UsageTotals, len(rows))
	for _, row := range rows {
		id, err := uuid.Parse(row.Key)
		if err != nil {
			return nil, fmt.Errorf("usage row of chat %q: %w", row.Key, err)
		}
		t := usage.Totals(row.UsageTokens)
		out[id] = &t
	}
	return out, nil
}

// patchBudget applies PATCH /users/{user}'s budget: an object sets the
// override, null removes it, absent leaves it.
func (s *Server) patchBudget(ctx context.Context, userID uuid.UUID, raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	var set *store.Budget
	if !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		var b sdk.Budget
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b); err != nil {
			return validation("budget", "must be an object of tokens_per_day, tokens_per_month, cost_per_day, cost_per_month (numbers or null), or null")
		}
		sb, err := usage.FromWire(b)
		if err != nil {
			return validation("budget", err.Error())
		}
		set = &sb
	}
	err := s.deps.Tokens.SetBudget(ctx, userID, set, s.deps.Clock.Now())
	if errors.Is(err, store.ErrNotFound) {
		return errUserNotFound
	}
	return err
}
