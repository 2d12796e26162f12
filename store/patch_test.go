package store

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// encodable are the value types a store must encode (see Assignment).
var encodable = map[reflect.Type]bool{
	reflect.TypeFor[string]():            true,
	reflect.TypeFor[int64]():             true,
	reflect.TypeFor[bool]():              true,
	reflect.TypeFor[time.Time]():         true,
	reflect.TypeFor[*time.Time]():        true,
	reflect.TypeFor[*int64]():            true,
	reflect.TypeFor[uuid.NullUUID]():     true,
	reflect.TypeFor[json.RawMessage]():   true,
	reflect.TypeFor[map[string]string](): true,
	reflect.TypeFor[[]uuid.UUID]():       true,
}

// setAll marks every Opt field of the patch p points to as set and returns
// how many there are.
func setAll(t *testing.T, p any) int {
	t.Helper()
	v := reflect.ValueOf(p).Elem()
	n := 0
	for i := range v.NumField() {
		f := v.Field(i)
		if set := f.FieldByName("Set"); f.Kind() == reflect.Struct && set.IsValid() && f.FieldByName("Value").IsValid() {
			set.SetBool(true)
			n++
		}
	}
	require.Positive(t, n, "%T has Opt fields", p)
	return n
}

// Every Opt field of every patch becomes exactly one assignment of its own
// column, with a value the stores can encode: a field added to a patch
// without a column fails here, not silently in one dialect.
func TestPatchAssignmentsCoverEveryField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		patch  any // pointer to a zero patch
		always int // assignments written even when nothing is set
		list   func(p any) []Assignment
	}{
		{"ChatPatch", &ChatPatch{}, 0, func(p any) []Assignment { return p.(*ChatPatch).Assignments() }},
		{"MessagePatch", &MessagePatch{}, 0, func(p any) []Assignment { return p.(*MessagePatch).Assignments() }},
		{"InvocationPatch", &InvocationPatch{}, 1, func(p any) []Assignment { return p.(*InvocationPatch).Assignments() }},
		{"JournalPatch", &JournalPatch{}, 0, func(p any) []Assignment { return p.(*JournalPatch).Assignments() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Len(t, tc.list(tc.patch), tc.always, "a zero patch writes nothing of its own")
			n := setAll(t, tc.patch)
			as := tc.list(tc.patch)
			require.Len(t, as, n+tc.always)
			seen := map[string]bool{}
			for _, a := range as {
				require.NotEmpty(t, a.Column)
				require.False(t, seen[a.Column], "column %s is assigned once", a.Column)
				seen[a.Column] = true
				require.True(t, encodable[reflect.TypeOf(a.Value)], "%s: %T is not an encodable value", a.Column, a.Value)
			}
		})
	}
}

// Named string types go out as plain strings.
func TestPatchAssignmentsFlattenNamedStrings(t *testing.T) {
	t.Parallel()
	as := ChatPatch{Status: Some(ChatStatusRunning), TitleSource: Some(TitleSourceUser)}.Assignments()
	require.Equal(t, []Assignment{{"status", "running"}, {"title_source", "user"}}, as)
	inv := InvocationPatch{UpdatedAt: time.Unix(0, 0)}.Assignments()
	require.Equal(t, []Assignment{{"updated_at", time.Unix(0, 0)}}, inv)
}
