package mcp

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/pubsub"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// reverseSealer stands for an encrypting sealer: what it stores is not
// the clear text.
type reverseSealer struct{}

func (reverseSealer) Seal(p []byte) ([]byte, error) { return reversed(p), nil }
func (reverseSealer) Open(p []byte) ([]byte, error) { return reversed(p), nil }

func reversed(p []byte) []byte {
	out := slices.Clone(p)
	slices.Reverse(out)
	return out
}

func rows(t *testing.T, s store.Store) []store.MCPServer {
	t.Helper()
	var out []store.MCPServer
	require.NoError(t, s.ReadTx(t.Context(), func(r store.Reader) error {
		var err error
		out, err = r.MCPServerList(t.Context())
		return err
	}))
	return out
}

func newServers(t *testing.T, st store.Store, f fixture, file Config) *Servers {
	return NewServers(f.m, ServersOptions{Store: st, Sealer: reverseSealer{}, File: file})
}

func TestServersSeedEditDelete(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		st := newStore(t)
		f := setup(t, Server{Name: "unused"})
		file := testConfig(Server{Name: "f", Env: map[string]string{"TOKEN": "s3cret-env"}, Include: []string{"echo", "write"}})
		a := newServers(t, st, f, file)
		require.NoError(t, a.Seed(t.Context()))
		require.NoError(t, a.Reload(t.Context()))
		require.False(t, f.m.Has(ServerID("unused")), "the stored servers replace NewManager's")
		require.Equal(t, []string{"f__echo", "f__write"}, names(f.m.Tools(t.Context(), anAdmin, nil)))

		got := rows(t, st)
		require.Len(t, got, 1)
		require.Equal(t, ServerID("f"), got[0].ID)
		require.Equal(t, store.MCPSourceConfigFile, got[0].Source)
		require.NotContains(t, string(got[0].Spec), "s3cret-env")
		require.NotContains(t, string(got[0].Secrets), "s3cret-env", "secrets are sealed")

		// An edit through the API wins over the file at the next start.
		ans, err := a.Update(t.Context(), ServerID("f"), []byte(`{"tools":{"include":["echo"]},"approval":"always"}`))
		require.NoError(t, err)
		require.Equal(t, []string{"TOKEN"}, ans.Config.EnvKeys)
		require.Equal(t, sdk.MCPSourceConfigFile, ans.Config.Source)
		require.Equal(t, []string{"f__echo"}, names(f.m.Tools(t.Context(), anAdmin, nil)), "the edit reconnected the server")
		require.NoError(t, a.Seed(t.Context()))
		require.NoError(t, a.Reload(t.Context()))
		require.Equal(t, []string{"f__echo"}, names(f.m.Tools(t.Context(), anAdmin, nil)))
		require.Equal(t, "always", find(t, f.m.Tools(t.Context(), anAdmin, nil), "f__echo").Approval())

		// Create: env values never come back.
		ans, err = a.Create(t.Context(), []byte(`{"name":"n","command":"in-memory","env":{"KEY":"v4lue"},"tools":{"include":["idem"]}}`))
		require.NoError(t, err)
		require.Equal(t, ServerID("n"), ans.ID)
		require.Equal(t, sdk.MCPSourceDatabase, ans.Config.Source)
		require.True(t, ans.Config.Enabled)
		out, err := json.Marshal(ans)
		require.NoError(t, err)
		require.NotContains(t, string(out), "v4lue")
		require.Equal(t, []string{"f__echo", "n__idem"}, names(f.m.Tools(t.Context(), anAdmin, nil)))
		cfgs, err := a.Configs(t.Context())
		require.NoError(t, err)
		require.Equal(t, []string{"KEY"}, cfgs[ServerID("n")].EnvKeys)

		// Env is replaced whole; null resets a field.
		ans, err = a.Update(t.Context(), ServerID("n"), []byte(`{"env":{"OTHER":"x"},"tools":null,"enabled":false}`))
		require.NoError(t, err)
		require.Equal(t, []string{"OTHER"}, ans.Config.EnvKeys)
		require.Empty(t, ans.Config.Tools.Include)
		require.False(t, ans.Config.Enabled)
		require.Equal(t, sdk.MCPStateDisabled, ans.State)
		require.Equal(t, []string{"f__echo"}, names(f.m.Tools(t.Context(), anAdmin, nil)), "disabled: its tools are gone")

		for name, tc := range map[string]struct {
			body string
			err  error
		}{
			"taken name":      {`{"name":"n","command":"x"}`, ErrNameTaken},
			"no name":         {`{"command":"x"}`, ErrInvalid},
			"bad name":        {`{"name":"a_b","command":"x"}`, ErrInvalid},
			"unknown field":   {`{"name":"u","command":"x","disabled":true}`, ErrInvalid},
			"both transports": {`{"name":"u","command":"x","url":"http://h"}`, ErrInvalid},
			"bad approval":    {`{"name":"u","command":"x","approval":"sometimes"}`, ErrInvalid},
			"bad enabled":     {`{"name":"u","command":"x","enabled":"yes"}`, ErrInvalid},
			"not an object":   {`[1]`, ErrInvalid},
		} {
			_, err := a.Create(t.Context(), []byte(tc.body))
			require.ErrorIs(t, err, tc.err, name)
		}
		for name, tc := range map[string]struct {
			body string
			err  error
		}{
			"rename":       {`{"name":"m"}`, ErrInvalid},
			"no transport": {`{"command":null}`, ErrInvalid},
			"bad timeout":  {`{"timeout":"soon"}`, ErrInvalid},
		} {
			_, err := a.Update(t.Context(), ServerID("n"), []byte(tc.body))
			require.ErrorIs(t, err, tc.err, name)
		}
		_, err = a.Update(t.Context(), ServerID("nope"), []byte(`{}`))
		require.ErrorIs(t, err, ErrNotFound)

		// Delete: not while the file names the server.
		require.ErrorIs(t, a.Delete(t.Context(), ServerID("f")), ErrInConfigFile)
		require.NoError(t, a.Delete(t.Context(), ServerID("n")))
		require.False(t, f.m.Has(ServerID("n")))
		require.ErrorIs(t, a.Delete(t.Context(), ServerID("n")), ErrNotFound)
		// Once the file no longer names it, a seeded server can go.
		gone := newServers(t, st, f, Config{})
		require.NoError(t, gone.Delete(t.Context(), ServerID("f")))
		require.Empty(t, f.m.Tools(t.Context(), anAdmin, nil))
		require.Empty(t, rows(t, st))
	})
}

func TestServersTest(t *testing.T) {
	t.Parallel()
	st := dbtest.NewSQLite(t)
	f := setup(t)
	a := newServers(t, st, f, Config{})
	ans, err := a.Create(t.Context(), []byte(`{"name":"n","command":"in-memory","enabled":false,"tools":{"include":["echo"]}}`))
	require.NoError(t, err)
	res, err := a.Test(t.Context(), ans.ID)
	require.NoError(t, err)
	require.True(t, res.OK, "a disabled server can be tested")
	require.Equal(t, "n__echo", res.Tools[0].Name)
	require.Equal(t, 1, f.ts.dials())
	require.Empty(t, f.m.Tools(t.Context(), anAdmin, nil), "the test left the shared connections alone")
	_, err = a.Test(t.Context(), ServerID("nope"))
	require.ErrorIs(t, err, ErrNotFound)

	// A server that cannot be reached reports why.
	ans, err = a.Create(t.Context(), []byte(`{"name":"missing","command":"/nonexistent/mcp-server"}`))
	require.NoError(t, err)
	f.m.dial = nil
	res, err = a.Test(t.Context(), ans.ID)
	require.NoError(t, err)
	require.False(t, res.OK)
	require.Contains(t, *res.Error, "/nonexistent/mcp-server")
}

// A write on one replica reaches another: at once through the pubsub
// hint, and through the periodic resync when the hint is lost.
func TestServersReplicasConverge(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		st := newStore(t)
		ps := pubsub.NewMemory()
		fa, fb, fc := setup(t), setup(t), setup(t)
		a := NewServers(fa.m, ServersOptions{Store: st, Pubsub: ps})
		b := NewServers(fb.m, ServersOptions{Store: st, Pubsub: ps})
		fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		c := NewServers(fc.m, ServersOptions{Store: st, Clock: fake, ResyncInterval: time.Minute}) // hears no hints
		b.reloaded, c.reloaded = make(chan struct{}, 1), make(chan struct{}, 1)
		for _, s := range []*Servers{a, b, c} {
			require.NoError(t, s.Start(t.Context()))
			t.Cleanup(s.Stop)
		}
		ans, err := a.Create(t.Context(), []byte(`{"name":"n","command":"in-memory","tools":{"include":["echo"]}}`))
		require.NoError(t, err)
		for !fb.m.Has(ans.ID) {
			<-b.reloaded
		}
		require.Equal(t, []string{"n__echo"}, names(fb.m.Tools(t.Context(), anAdmin, nil)))

		require.False(t, fc.m.Has(ans.ID))
		require.NoError(t, fake.BlockUntil(t.Context(), 1)) // c's resync ticker
		fake.Advance(time.Minute)
		<-c.reloaded
		require.True(t, fc.m.Has(ans.ID))

		require.NoError(t, a.Delete(t.Context(), ans.ID))
		for fb.m.Has(ans.ID) {
			<-b.reloaded
		}
		require.Empty(t, fb.m.Tools(t.Context(), anAdmin, nil))
	})
}
