package files_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/clock"
	"github.com/chatd/chatd/app/files"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

var png = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 16)...)

func TestMediaType(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, declared string
		content        []byte
		want           string // "" = refused
	}{
		{"png as png", "image/png", png, "image/png"},
		{"png declared jpeg: the bytes win", "image/jpeg", png, "image/png"},
		{"png undeclared", "", png, "image/png"},
		{"not a png", "image/png", []byte("hello"), ""},
		{"text undeclared", "application/octet-stream", []byte("hello"), "text/plain"},
		{"markdown", "text/markdown; charset=utf-8", []byte("# x"), "text/markdown"},
		{"json", "Application/JSON", []byte(`{}`), "application/json"},
		{"text that is not UTF-8", "text/plain", []byte{0xff, 0xfe, 0x00}, ""},
		{"binary undeclared", "", []byte{0, 1, 2, 0xff}, "application/octet-stream"},
		{"pdf", "application/pdf", []byte("%PDF-1.4"), "application/pdf"},
		{"pdf undeclared", "", []byte("%PDF-1.4\n%\xe2\xe3\xcf\xd3\x00"), "application/pdf"},
		{"not a pdf", "application/pdf", []byte("hello"), ""},
		{"bad type", "not a type;;", []byte("x"), ""},
	} {
		got, err := files.MediaType(tc.declared, tc.content)
		if tc.want == "" {
			require.ErrorIs(t, err, files.ErrBadContent, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, got, tc.name)
	}
}

func TestServing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ mediaType, contentType, disposition string }{
		{"image/png", "image/png", "inline"},
		{"text/plain", "text/plain; charset=utf-8", "inline"},
		{"text/html", "text/plain; charset=utf-8", "attachment"},
		{"image/svg+xml", "text/plain; charset=utf-8", "attachment"},
		{"application/pdf", "application/pdf", "attachment"},
		{"application/zip", "application/octet-stream", "attachment"},
	} {
		ct, cd := files.Serving(store.File{Name: `a "b".x`, MediaType: tc.mediaType})
		require.Equal(t, tc.contentType, ct, tc.mediaType)
		require.True(t, strings.HasPrefix(cd, tc.disposition+";"), "%s: %s", tc.mediaType, cd)
		require.Contains(t, cd, `filename=`)
	}
}

func TestAsText(t *testing.T) {
	t.Parallel()
	require.Equal(t, "[file: a.txt (text/plain, 2 bytes)]\nhi", files.AsText("a.txt", "text/plain", []byte("hi")))
	big := strings.Repeat("é", files.MaxTextFileBytes) // 2 bytes each
	got := files.AsText("b.txt", "text/plain", []byte(big))
	require.Less(t, len(got), files.MaxTextFileBytes+200)
	require.Contains(t, got, "[... cut: the file has")
}

// TestUploadQuotaAndRetention: the size cap and the per-user quota, a
// name kept displayable, and only unlinked files older than the retention
// time are removed (the fake clock moves time).
func TestUploadQuotaAndRetention(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx := context.Background()
		s := newStore(t)
		fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		svc := files.New(s, fake, files.Config{MaxFileBytes: 10, QuotaBytes: 15, Retention: time.Hour})
		var owner store.User
		require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
			var err error
			owner, err = tx.UserInsert(ctx, store.UserInsertParams{ID: uuid.New(), Name: "alice", Now: fake.Now()})
			return err
		}))
		_, err := svc.Upload(ctx, owner.ID, "x", "text/plain", []byte("01234567890"))
		require.ErrorIs(t, err, files.ErrTooLarge)

		f, err := svc.Upload(ctx, owner.ID, "../dir/a\nb.txt", "text/plain", []byte("0123456789"))
		require.NoError(t, err)
		require.Equal(t, "ab.txt", f.Name)
		_, err = svc.Upload(ctx, owner.ID, "c", "text/plain", []byte("012345"))
		require.ErrorIs(t, err, files.ErrQuota)

		_, err = svc.Get(ctx, uuid.New(), f.ID)
		require.ErrorIs(t, err, files.ErrNotFound, "another user's file is not found")
		got, err := svc.Get(ctx, owner.ID, f.ID)
		require.NoError(t, err)
		require.Equal(t, []byte("0123456789"), got.Content)

		fake.Advance(time.Hour)
		n, err := svc.RemoveUnreferenced(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "exactly the retention time: kept")
		fake.Advance(time.Second)
		n, err = svc.RemoveUnreferenced(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		_, err = svc.Get(ctx, owner.ID, f.ID)
		require.ErrorIs(t, err, files.ErrNotFound)
	})
}

// TestUploadCountCap: a user holding MaxPerUser files, linked or not, is
// refused another (ErrLimitReached) until one is gone; other users are
// not counted; concurrent uploads at the cap land exactly up to it.
func TestUploadCountCap(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		ctx := context.Background()
		s := newStore(t)
		fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		svc := files.New(s, fake, files.Config{MaxPerUser: 3, Retention: time.Hour})
		var alice, bob store.User
		require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
			var err error
			if alice, err = tx.UserInsert(ctx, store.UserInsertParams{ID: uuid.New(), Name: "alice", Now: fake.Now()}); err != nil {
				return err
			}
			bob, err = tx.UserInsert(ctx, store.UserInsertParams{ID: uuid.New(), Name: "bob", Now: fake.Now()})
			return err
		}))
		first, err := svc.Upload(ctx, alice.ID, "a.txt", "text/plain", []byte("a"))
		require.NoError(t, err)
		_, err = svc.Upload(ctx, bob.ID, "b.txt", "text/plain", []byte("b"))
		require.NoError(t, err)

		const writers = 4
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() { _, errs[i] = svc.Upload(ctx, alice.ID, "c.txt", "text/plain", []byte("c")) })
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, files.ErrLimitReached):
				t.Fatalf("unexpected error: %v", err)
			}
		}
		require.Equal(t, 2, ok, "two places were left")
		_, err = svc.Upload(ctx, alice.ID, "d.txt", "text/plain", []byte("d"))
		require.ErrorIs(t, err, files.ErrLimitReached)
		require.ErrorContains(t, err, "you have 3 files; at most 3")

		require.NoError(t, s.InTx(ctx, func(tx store.Tx) error {
			_, err := tx.FileDelete(ctx, first.ID)
			return err
		}))
		_, err = svc.Upload(ctx, alice.ID, "e.txt", "text/plain", []byte("e"))
		require.NoError(t, err, "a removed file frees its place")

		unlimited := files.New(s, fake, files.Config{MaxPerUser: -1})
		_, err = unlimited.Upload(ctx, alice.ID, "f.txt", "text/plain", []byte("f"))
		require.NoError(t, err)
		require.Equal(t, files.DefaultMaxPerUser, files.Config{}.WithDefaults().MaxPerUser)
	})
}
