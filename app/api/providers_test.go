package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/apptest"
	"github.com/chatd/chatd/app/modelconfig"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

// The provider and model config API: admins manage, users read enabled
// models only, anonymous callers nothing; bad input is a 400 naming the
// field; the API key never comes back, nor reaches the log or the
// database in clear.
func TestProvidersAPI(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		const secret = "sk-never-shown-4f1c2a9b"
		logs := &apptest.LogBuffer{}
		s := newStore(t)
		rig := newLoggedSecretRig(t, s, "", logs, secret)
		adminToken, userToken, do := rig.adminToken, rig.userToken, rig.do

		// Presets: the demo model is there with its stable id and is the default.
		status, body := do(adminToken, "GET", "/api/v2/chats/model-configs", "")
		require.Equal(t, http.StatusOK, status, "%s", body)
		var configs []sdk.ChatModelConfig
		require.NoError(t, json.Unmarshal(body, &configs))
		require.Len(t, configs, 1)
		require.Equal(t, modelconfig.ModelID("demo", "demo"), configs[0].ID)
		require.True(t, configs[0].IsDefault)
		require.Equal(t, "env_preset", configs[0].Source)

		status, body = do(adminToken, "POST", "/api/v2/chats/providers", fmt.Sprintf(`{"provider":"openai","api_key":%q,"base_url":"http://127.0.0.1:1/v1"}`, secret))
		require.Equal(t, http.StatusCreated, status, "%s", body)
		var prov sdk.ChatProviderConfig
		require.NoError(t, json.Unmarshal(body, &prov))
		require.True(t, prov.HasAPIKey)
		require.Equal(t, "database", prov.Source)

		status, body = do(adminToken, "POST", "/api/experimental/chats/model-configs",
			fmt.Sprintf(`{"ai_provider_id":%q,"model":"gpt-4o","enabled":false,"model_config":{"reasoning_effort":{"max":"high"}}}`, prov.ID))
		require.Equal(t, http.StatusCreated, status, "%s", body)
		var mc sdk.ChatModelConfig
		require.NoError(t, json.Unmarshal(body, &mc))
		require.Equal(t, "openai", mc.Provider)
		require.Equal(t, []string{"none", "minimal", "low", "medium", "high"}, mc.ReasoningEfforts)

		// Users see enabled models only; admins see all.
		status, body = do(userToken, "GET", "/api/v2/chats/model-configs", "")
		require.Equal(t, http.StatusOK, status)
		require.NoError(t, json.Unmarshal(body, &configs))
		require.Len(t, configs, 1)
		status, body = do(adminToken, "GET", "/api/v2/chats/model-configs", "")
		require.Equal(t, http.StatusOK, status)
		require.NoError(t, json.Unmarshal(body, &configs))
		require.Len(t, configs, 2)

		status, body = do(adminToken, "PATCH", "/api/v2/chats/model-configs/"+mc.ID.String(), `{"enabled":true,"is_default":true}`)
		require.Equal(t, http.StatusOK, status, "%s", body)
		status, body = do(userToken, "GET", "/api/v2/chats/models", "")
		require.Equal(t, http.StatusOK, status)
		var models sdk.ChatModelsResponse
		require.NoError(t, json.Unmarshal(body, &models))
		require.Len(t, models.Models, 2)
		require.Equal(t, mc.ID, models.Models[0].ID, "the new default comes first")
		require.Equal(t, int64(128000), models.Models[0].ContextLimit, "from the built-in table")

		for _, tc := range []struct {
			name, token, method, path, body string
			status                          int
			code, field                     string
		}{
			{"anonymous list", "", "GET", "/api/v2/chats/providers", "", 401, sdk.CodeUnauthorized, ""},
			{"user list", userToken, "GET", "/api/v2/chats/providers", "", 403, sdk.CodeForbidden, ""},
			{"user create", userToken, "POST", "/api/v2/chats/providers", `{"provider":"openai"}`, 403, sdk.CodeForbidden, ""},
			{"user patch", userToken, "PATCH", "/api/v2/chats/model-configs/" + mc.ID.String(), `{"enabled":false}`, 403, sdk.CodeForbidden, ""},
			{"user delete", userToken, "DELETE", "/api/v2/chats/providers/" + prov.ID.String(), "", 403, sdk.CodeForbidden, ""},
			{"unknown type", adminToken, "POST", "/api/v2/chats/providers", `{"provider":"bedrock"}`, 400, sdk.CodeValidation, "provider"},
			{"bad base_url", adminToken, "POST", "/api/v2/chats/providers", `{"provider":"openai","base_url":"localhost:11434"}`, 400, sdk.CodeValidation, "base_url"},
			{"compat without base_url", adminToken, "POST", "/api/v2/chats/providers", `{"provider":"openai-compat"}`, 400, sdk.CodeValidation, "base_url"},
			{"effort off the scale", adminToken, "POST", "/api/v2/chats/model-configs",
				fmt.Sprintf(`{"ai_provider_id":%q,"model":"m","model_config":{"reasoning_effort":{"max":"turbo"}}}`, prov.ID), 400, sdk.CodeValidation, "model_config.reasoning_effort.max"},
			{"threshold", adminToken, "PATCH", "/api/v2/chats/model-configs/" + mc.ID.String(), `{"compression_threshold":101}`, 400, sdk.CodeValidation, "compression_threshold"},
			{"no model", adminToken, "POST", "/api/v2/chats/model-configs", fmt.Sprintf(`{"ai_provider_id":%q}`, prov.ID), 400, sdk.CodeValidation, "model"},
			{"duplicate", adminToken, "POST", "/api/v2/chats/model-configs", fmt.Sprintf(`{"ai_provider_id":%q,"model":"gpt-4o"}`, prov.ID), 409, sdk.CodeModelConfigConflict, ""},
			{"bad id", adminToken, "PATCH", "/api/v2/chats/providers/nope", `{}`, 404, sdk.CodeNotFound, ""},
			{"missing", adminToken, "DELETE", "/api/v2/chats/model-configs/" + prov.ID.String(), "", 404, sdk.CodeNotFound, ""},
		} {
			status, body := do(tc.token, tc.method, tc.path, tc.body)
			require.Equal(t, tc.status, status, "%s: %s", tc.name, body)
			var e sdk.Response
			require.NoError(t, json.Unmarshal(body, &e), tc.name)
			require.Equal(t, tc.code, e.Code, "%s: %s", tc.name, body)
			if tc.field != "" {
				require.Len(t, e.Validations, 1, tc.name)
				require.Equal(t, tc.field, e.Validations[0].Field, tc.name)
			}
		}

		status, body = do(adminToken, "PATCH", "/api/v2/chats/providers/"+prov.ID.String(), `{"display_name":"Mine"}`)
		require.Equal(t, http.StatusOK, status, "%s", body)
		status, _ = do(adminToken, "GET", "/api/v2/chats/providers", "")
		require.Equal(t, http.StatusOK, status)
		dump := storeDump(t, s)
		require.Contains(t, dump, "HasKey", "the dump covers the provider row")
		require.NotContains(t, dump, secret)
		status, _ = do(adminToken, "DELETE", "/api/v2/chats/providers/"+prov.ID.String(), "")
		require.Equal(t, http.StatusNoContent, status)
		status, body = do(adminToken, "GET", "/api/v2/chats/model-configs", "")
		require.Equal(t, http.StatusOK, status)
		require.NoError(t, json.Unmarshal(body, &configs))
		require.Len(t, configs, 1)
		require.True(t, configs[0].IsDefault, "deleting the default's provider elected the demo model")

		// Every answer was checked for the secret by the rig's do.
		require.NotContains(t, logs.String(), secret)
	})
}

// storeDump is every provider row as text, the sealed key included.
func storeDump(t *testing.T, s store.Store) string {
	t.Helper()
	var out strings.Builder
	require.NoError(t, s.ReadTx(context.Background(), func(tx store.Reader) error {
		ps, err := tx.AIProviderList(context.Background())
		for _, p := range ps {
			fmt.Fprintf(&out, "%+v HasKey %s\n", p, p.APIKeyCipher)
		}
		return err
	}))
	return out.String()
}
