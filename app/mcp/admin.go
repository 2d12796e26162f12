package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
)

// ChannelServers is the pubsub channel of MCP server changes: a hint to
// every replica to read the servers again (its payload is ignored).
const ChannelServers = "mcp:servers"

// DefaultResyncInterval is how often Servers reads the stored servers
// even without a hint, so a lost notification delays a change at most
// this long.
const DefaultResyncInterval = 30 * time.Second

// Errors of the admin operations.
var (
	// ErrInvalid is a server definition that is not valid; the message says
	// what is wrong.
	ErrInvalid = errors.New("invalid MCP server")
	// ErrNotFound: no stored server has the id.
	ErrNotFound = errors.New("MCP server not found")
	// ErrNameTaken: another server has the name.
	ErrNameTaken = errors.New("an MCP server with this name exists")
	// ErrInConfigFile: the server cannot be deleted while the MCP config
	// file names it, as the next start would seed it again.
	ErrInConfigFile = errors.New("the MCP config file names this server")
)

// ServersOptions are the collaborators of Servers.
type ServersOptions struct {
	Store store.Store
	// Pubsub carries ChannelServers between replicas (none when nil).
	Pubsub pubsub.Pubsub
	// Sealer seals env and header values (PlainSealer when nil).
	Sealer Sealer
	Clock  clock.Clock
	Log    *slog.Logger
	// File is the MCP config file's servers, seeded by Seed.
	File Config
	// ResyncInterval: DefaultResyncInterval when zero.
	ResyncInterval time.Duration
}

// Servers are the stored MCP servers (table mcp_servers) and the admin
// operations on them. It keeps its Manager's set equal to the stored one:
// after its own writes at once, after another replica's on a pubsub hint,
// and every resync interval in any case.
type Servers struct {
	m      *Manager
	opts   ServersOptions
	reload sync.Mutex // one Reload at a time, so the last read wins
	wake   chan struct{}
	stop   context.CancelFunc
	done   chan struct{}
	// reloaded, when set (tests), gets a value after each reload of the loop.
	reloaded chan struct{}
}

// NewServers manages m's servers from opts.Store.
func NewServers(m *Manager, opts ServersOptions) *Servers {
	if opts.Sealer == nil {
		opts.Sealer = PlainSealer{}
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.ResyncInterval <= 0 {
		opts.ResyncInterval = DefaultResyncInterval
	}
	return &Servers{m: m, opts: opts, wake: make(chan struct{}, 1)}
}

// Seed stores the config file's servers that are not stored yet (source
// config_file, ids from ServerID). A stored server is left as it is: edits
// made through the API win over the file.
func (a *Servers) Seed(ctx context.Context) error {
	now := a.opts.Clock.Now()
	for _, s := range a.opts.File.Servers {
		row, err := s.Row(store.MCPSourceConfigFile, a.opts.Sealer, now)
		if err != nil {
			return err
		}
		err = a.opts.Store.InTx(ctx, func(tx store.Tx) error {
			if _, err := tx.MCPServerGet(ctx, s.ID); !errors.Is(err, store.ErrNotFound) {
				return err
			}
			_, err := tx.MCPServerInsert(ctx, row)
			return err
		})
		if errors.Is(err, store.ErrConflict) {
			// Another replica seeded it meanwhile, or an API server took the name.
			a.opts.Log.Warn("MCP config file server not seeded: its id or name is taken", "mcp_server", s.Name)
			continue
		}
		if err != nil {
			return fmt.Errorf("seed MCP server %s: %w", s.Name, err)
		}
	}
	return nil
}

// Reload reads the stored servers and applies them to the Manager. A row
// that no longer parses is logged and left out rather than stopping the
// rest.
func (a *Servers) Reload(ctx context.Context) error {
	a.reload.Lock()
	defer a.reload.Unlock()
	var rows []store.MCPServer
	err := a.opts.Store.ReadTx(ctx, func(r store.Reader) error {
		var err error
		rows, err = r.MCPServerList(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("reload MCP servers: %w", err)
	}
	var cfg Config
	for _, row := range rows {
		s, err := FromRow(row, a.opts.Sealer)
		if err != nil {
			a.opts.Log.Error("stored MCP server left out", "mcp_server", row.Name, "err", err)
			continue
		}
		cfg.Servers = append(cfg.Servers, s)
	}
	a.m.Apply(cfg)
	return nil
}

// Start subscribes to ChannelServers and starts the loop that reloads on
// hints and every resync interval, until Stop.
func (a *Servers) Start(ctx context.Context) error {
	ctx, a.stop = context.WithCancel(ctx)
	a.done = make(chan struct{})
	cancelSub := func() {}
	if a.opts.Pubsub != nil {
		var err error
		cancelSub, err = a.opts.Pubsub.Subscribe(ctx, ChannelServers, func([]byte) { a.poke() })
		if err != nil {
			a.stop()
			close(a.done)
			return fmt.Errorf("subscribe to MCP server changes: %w", err)
		}
	}
	go func() {
		defer close(a.done)
		defer cancelSub()
		ticker := a.opts.Clock.NewTicker(a.opts.ResyncInterval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-a.wake:
			case <-ticker.C():
			}
			if err := a.Reload(ctx); err != nil && ctx.Err() == nil {
				a.opts.Log.Warn("MCP servers not reloaded; retrying at the next resync", "err", err)
			}
			if a.reloaded != nil {
				select {
				case a.reloaded <- struct{}{}:
				default:
				}
			}
		}
	}()
	return nil
}

// Stop ends the loop Start began and waits for it.
func (a *Servers) Stop() {
	if a.stop == nil {
		return
	}
	a.stop()
	<-a.done
}

// poke asks the loop for a reload; hints coalesce.
func (a *Servers) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// changed applies a write here and tells the other replicas.
func (a *Servers) changed(ctx context.Context) error {
	if err := a.Reload(ctx); err != nil {
		return err
	}
	if a.opts.Pubsub != nil {
		// A lost hint is caught up by the others' periodic resync.
		if err := a.opts.Pubsub.Publish(ctx, ChannelServers, nil); err != nil {
			a.opts.Log.Warn("MCP server change not announced; other replicas see it at their next resync", "err", err)
		}
	}
	return nil
}

// editable are the fields of a server definition in the API.
var editable = []string{"command", "args", "env", "url", "headers", "tools", "effects", "approval", "approvals", "timeout", "access", "oauth"}

// decodeBody splits an API body into its fields, refusing unknown ones.
func decodeBody(body []byte) (map[string]json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("%w: the body must be a JSON object", ErrInvalid)
	}
	for k := range fields {
		if k != "name" && k != "enabled" && !slices.Contains(editable, k) {
			return nil, fmt.Errorf("%w: %s: unknown field (known: name, enabled, %v)", ErrInvalid, k, editable)
		}
	}
	return fields, nil
}

func enabledOf(fields map[string]json.RawMessage, def bool) (bool, error) {
	raw, ok := fields["enabled"]
	if !ok || string(raw) == "null" {
		return def, nil
	}
	var v bool
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, fmt.Errorf("%w: enabled: must be true or false", ErrInvalid)
	}
	return v, nil
}

// Create stores a new server from an API body: name, enabled (true when
// absent) and the fields of a config file entry.
func (a *Servers) Create(ctx context.Context, body []byte) (sdk.MCPServer, error) {
	fields, err := decodeBody(body)
	if err != nil {
		return sdk.MCPServer{}, err
	}
	var name string
	if err := json.Unmarshal(fields["name"], &name); err != nil || name == "" {
		return sdk.MCPServer{}, fmt.Errorf("%w: name: required, 1 to 32 letters, digits or '-'", ErrInvalid)
	}
	enabled, err := enabledOf(fields, true)
	if err != nil {
		return sdk.MCPServer{}, err
	}
	delete(fields, "name")
	delete(fields, "enabled")
	if err := keepSecrets(fields, nil, nil); err != nil {
		return sdk.MCPServer{}, err
	}
	data, _ := json.Marshal(fields) // raw messages just decoded
	s, err := parseServer(name, data)
	if err != nil {
		return sdk.MCPServer{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	s.Disabled = !enabled
	row, err := s.Row(store.MCPSourceDatabase, a.opts.Sealer, a.opts.Clock.Now())
	if err != nil {
		return sdk.MCPServer{}, err
	}
	err = a.opts.Store.InTx(ctx, func(tx store.Tx) error {
		if err := checkUsers(ctx, tx, s); err != nil {
			return err
		}
		row, err = tx.MCPServerInsert(ctx, row)
		return err
	})
	if errors.Is(err, store.ErrConflict) {
		return sdk.MCPServer{}, fmt.Errorf("%w: %s", ErrNameTaken, name)
	}
	if err != nil {
		return sdk.MCPServer{}, fmt.Errorf("create MCP server %s: %w", name, err)
	}
	return a.answer(ctx, s, row)
}

// Update changes a stored server from an API body: each field given
// replaces the stored one, null resets it, env and headers are replaced
// whole. The name cannot change (tool names and chats' journals carry
// it).
func (a *Servers) Update(ctx context.Context, id uuid.UUID, body []byte) (sdk.MCPServer, error) {
	fields, err := decodeBody(body)
	if err != nil {
		return sdk.MCPServer{}, err
	}
	var s Server
	var row store.MCPServer
	err = a.opts.Store.InTx(ctx, func(tx store.Tx) error {
		old, err := a.get(ctx, tx, id)
		if err != nil {
			return err
		}
		cur, err := FromRow(old, a.opts.Sealer)
		if err != nil {
			return err
		}
		if raw, ok := fields["name"]; ok {
			var name string
			if json.Unmarshal(raw, &name) != nil || name != old.Name {
				return fmt.Errorf("%w: name: cannot change (create a new server instead)", ErrInvalid)
			}
		}
		enabled, err := enabledOf(fields, old.Enabled)
		if err != nil {
			return err
		}
		if err := keepSecrets(fields, cur.Env, cur.Headers); err != nil {
			return err
		}
		if err := keepOAuthSecret(fields, cur.OAuth); err != nil {
			return err
		}
		o := cur.object()
		for _, k := range editable {
			raw, ok := fields[k]
			switch {
			case !ok:
			case string(raw) == "null":
				delete(o, k)
			default:
				o[k] = raw
			}
		}
		delete(o, "disabled")
		data, err := json.Marshal(o)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		if s, err = parseServer(old.Name, data); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		s.ID, s.Disabled = old.ID, !enabled
		if err := checkUsers(ctx, tx, s); err != nil {
			return err
		}
		next, err := s.Row(old.Source, a.opts.Sealer, a.opts.Clock.Now())
		if err != nil {
			return err
		}
		row, err = tx.MCPServerUpdate(ctx, next)
		return err
	})
	if err != nil {
		return sdk.MCPServer{}, err
	}
	return a.answer(ctx, s, row)
}

// checkUsers refuses an access list that names no user: a misspelt name
// would let nobody in silently. (The config file may name users not
// created yet.)
func checkUsers(ctx context.Context, r store.Reader, s Server) error {
	for _, name := range s.Users {
		_, err := r.UserGetByName(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: access: no user is named %q", ErrInvalid, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// keepSecrets fills the null values of a body's env and headers objects
// with the stored values of the same names (env, headers), so an admin
// who cannot see a value can keep it while changing or removing others. A
// null value without a stored one is invalid (always so on create, where
// nothing is stored). Objects that are not of strings and nulls are left
// for parseServer to refuse.
func keepSecrets(fields map[string]json.RawMessage, env, headers map[string]string) error {
	for key, stored := range map[string]map[string]string{"env": env, "headers": headers} {
		raw, ok := fields[key]
		if !ok || string(raw) == "null" {
			continue
		}
		var values map[string]*string
		if json.Unmarshal(raw, &values) != nil {
			continue
		}
		out := make(map[string]string, len(values))
		for name, v := range values {
			if v != nil {
				out[name] = *v
				continue
			}
			kept, ok := stored[name]
			if !ok {
				return fmt.Errorf("%w: %s.%s: null keeps the stored value, and none is stored (give a value)", ErrInvalid, key, name)
			}
			out[name] = kept
		}
		fields[key], _ = json.Marshal(out) // a map of strings always encodes
	}
	return nil
}

// keepOAuthSecret gives a body's "oauth": {"client_secret": null} the
// stored client secret (never shown), like env and headers' nulls: an
// admin changes the other oauth fields without giving it again.
func keepOAuthSecret(fields map[string]json.RawMessage, stored *OAuth) error {
	raw, ok := fields["oauth"]
	if !ok || string(raw) == "null" {
		return nil
	}
	var o map[string]json.RawMessage
	if json.Unmarshal(raw, &o) != nil {
		return nil // parseServer says what is wrong
	}
	if v, ok := o["client_secret"]; !ok || string(v) != "null" {
		return nil
	}
	if stored == nil || stored.ClientSecret == "" {
		return fmt.Errorf("%w: oauth.client_secret: null keeps the stored value, and none is stored (give a value)", ErrInvalid)
	}
	o["client_secret"], _ = json.Marshal(stored.ClientSecret)
	fields["oauth"], _ = json.Marshal(o)
	return nil
}

// Delete removes a stored server and disconnects it.
func (a *Servers) Delete(ctx context.Context, id uuid.UUID) error {
	err := a.opts.Store.InTx(ctx, func(tx store.Tx) error {
		row, err := a.get(ctx, tx, id)
		if err != nil {
			return err
		}
		if row.Source == store.MCPSourceConfigFile && slices.ContainsFunc(a.opts.File.Servers, func(s Server) bool { return s.ID == id }) {
			return fmt.Errorf("%w: %s; disable it, or remove it from the file first", ErrInConfigFile, row.Name)
		}
		_, err = tx.MCPServerDelete(ctx, id)
		return err
	})
	if err != nil {
		return err
	}
	return a.changed(ctx)
}

// Test connects to a stored server afresh (disabled ones too), lists its
// tools and disconnects; the shared connection is not touched.
func (a *Servers) Test(ctx context.Context, id uuid.UUID) (sdk.MCPServerTest, error) {
	var row store.MCPServer
	err := a.opts.Store.ReadTx(ctx, func(r store.Reader) error {
		var err error
		row, err = a.get(ctx, r, id)
		return err
	})
	if err != nil {
		return sdk.MCPServerTest{}, err
	}
	s, err := FromRow(row, a.opts.Sealer)
	if err != nil {
		return sdk.MCPServerTest{}, err
	}
	s.Disabled = false
	return a.m.Test(ctx, s), nil
}

// Configs are the admin views of the stored servers, by id.
func (a *Servers) Configs(ctx context.Context) (map[uuid.UUID]sdk.MCPServerConfig, error) {
	out := map[uuid.UUID]sdk.MCPServerConfig{}
	err := a.opts.Store.ReadTx(ctx, func(r store.Reader) error {
		rows, err := r.MCPServerList(ctx)
		if err != nil {
			return err
		}
		for _, row := range rows {
			if s, err := FromRow(row, a.opts.Sealer); err == nil {
				out[row.ID] = configOf(s, row)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list MCP servers: %w", err)
	}
	return out, nil
}

func (a *Servers) get(ctx context.Context, r store.Reader, id uuid.UUID) (store.MCPServer, error) {
	row, err := r.MCPServerGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.MCPServer{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return row, err
}

// answer applies a write and describes the server as written.
func (a *Servers) answer(ctx context.Context, s Server, row store.MCPServer) (sdk.MCPServer, error) {
	if err := a.changed(ctx); err != nil {
		return sdk.MCPServer{}, err
	}
	st, ok := a.m.statusOf(s.ID)
	if !ok {
		st = sdk.MCPServer{ID: s.ID, Name: s.Name, Tools: []sdk.MCPTool{}}
	}
	cfg := configOf(s, row)
	st.Config = &cfg
	return st, nil
}
