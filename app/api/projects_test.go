package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/chatd/chatd/app/projects"
	"github.com/chatd/chatd/app/sdk"
	"github.com/chatd/chatd/store"
	"github.com/chatd/chatd/store/dbtest"
)

func TestProjects(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		ctx := h.ctx
		bob, _, _ := h.newUser(t, "bob")

		p, err := h.alice.CreateProject(ctx, sdk.CreateProjectRequest{Name: "  Launch  ", Instructions: "Answer in French."})
		require.NoError(t, err)
		require.Equal(t, "Launch", p.Name)
		require.Equal(t, "Answer in French.", p.Instructions)
		require.Equal(t, h.aliceID, p.OwnerID)
		bobs, err := bob.CreateProject(ctx, sdk.CreateProjectRequest{Name: "Bob's"})
		require.NoError(t, err)

		// Each sees their own; the admin sees both.
		mine, err := h.alice.Projects(ctx)
		require.NoError(t, err)
		require.Len(t, mine, 1)
		all, err := h.admin.Projects(ctx)
		require.NoError(t, err)
		require.Len(t, all, 2)
		got, err := h.admin.Project(ctx, p.ID)
		require.NoError(t, err)
		require.Equal(t, p, got)

		// Another user's project and its memories are 404, whatever the verb.
		_, err = h.alice.PutMemory(ctx, p.ID, "style", "short answers")
		require.NoError(t, err)
		_, err = bob.Project(ctx, p.ID)
		requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)
		_, err = bob.UpdateProject(ctx, p.ID, sdk.UpdateProjectRequest{Name: ptr("mine")})
		requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)
		requireAPIError(t, bob.DeleteProject(ctx, p.ID), http.StatusNotFound, sdk.CodeNotFound)
		_, err = bob.Memories(ctx, p.ID)
		requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)
		_, err = bob.Memory(ctx, p.ID, "style")
		requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)
		_, err = bob.PutMemory(ctx, p.ID, "style", "mine now")
		requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)
		requireAPIError(t, bob.DeleteMemory(ctx, p.ID, "style"), http.StatusNotFound, sdk.CodeNotFound)
		m, err := h.alice.Memory(ctx, p.ID, "style")
		require.NoError(t, err)
		require.Equal(t, "short answers", m.Content, "bob changed nothing")
		_, err = h.alice.Project(ctx, uuid.New())
		requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)

		// PATCH.
		p2, err := h.alice.UpdateProject(ctx, p.ID, sdk.UpdateProjectRequest{Instructions: ptr("Answer in German.")})
		require.NoError(t, err)
		require.Equal(t, "Launch", p2.Name)
		require.Equal(t, "Answer in German.", p2.Instructions)
		_, err = h.alice.UpdateProject(ctx, p.ID, sdk.UpdateProjectRequest{Name: ptr("  ")})
		requireAPIError(t, err, http.StatusBadRequest, sdk.CodeValidation)

		// Chats in the project: created there, listed by it, and the
		// project cannot go while they are in it.
		in, err := h.alice.CreateChat(ctx, sdk.CreateChatRequest{ProjectID: &p.ID})
		require.NoError(t, err)
		require.Equal(t, &p.ID, in.ProjectID)
		out, err := h.alice.CreateChat(ctx, sdk.CreateChatRequest{})
		require.NoError(t, err)
		require.Nil(t, out.ProjectID)
		_, err = h.alice.CreateChat(ctx, sdk.CreateChatRequest{ProjectID: &bobs.ID})
		e := requireAPIError(t, err, http.StatusBadRequest, sdk.CodeValidation)
		require.Equal(t, "project_id", e.Validations[0].Field)
		_, err = h.admin.CreateChat(ctx, sdk.CreateChatRequest{ProjectID: &p.ID})
		requireAPIError(t, err, http.StatusBadRequest, sdk.CodeValidation) // the admin's chat, alice's project

		listed, err := h.alice.ListChats(ctx, sdk.ListChatsOptions{ProjectID: p.ID})
		require.NoError(t, err)
		require.Len(t, listed, 1)
		require.Equal(t, in.ID, listed[0].ID)
		requireAPIError(t, h.alice.DeleteProject(ctx, p.ID), http.StatusConflict, sdk.CodeProjectNotEmpty)

		// A child is created in its parent's project and moves with it;
		// it cannot be moved on its own.
		child, err := h.alice.CreateChat(ctx, sdk.CreateChatRequest{ParentChatID: &in.ID})
		require.NoError(t, err)
		require.Equal(t, &p.ID, child.ProjectID)
		e = requireAPIError(t, h.alice.UpdateChat(ctx, child.ID, sdk.UpdateChatRequest{ProjectID: sdk.SelectProject(uuid.Nil)}),
			http.StatusBadRequest, sdk.CodeValidation)
		require.Equal(t, "project_id", e.Validations[0].Field)
		require.NoError(t, h.alice.UpdateChat(ctx, in.ID, sdk.UpdateChatRequest{ProjectID: sdk.SelectProject(uuid.Nil)}))
		c, err := h.alice.Chat(ctx, child.ID)
		require.NoError(t, err)
		require.Nil(t, c.ProjectID, "the family moved together")
		require.NoError(t, h.alice.UpdateChat(ctx, in.ID, sdk.UpdateChatRequest{ProjectID: sdk.SelectProject(p.ID)}))
		c, err = h.alice.Chat(ctx, child.ID)
		require.NoError(t, err)
		require.Equal(t, &p.ID, c.ProjectID)

		// PATCH moves chats in and out.
		require.NoError(t, h.alice.UpdateChat(ctx, out.ID, sdk.UpdateChatRequest{ProjectID: sdk.SelectProject(p.ID)}))
		listed, err = h.alice.ListChats(ctx, sdk.ListChatsOptions{ProjectID: p.ID})
		require.NoError(t, err)
		require.Len(t, listed, 3, "both root chats and the child")
		requireAPIError(t, h.alice.UpdateChat(ctx, out.ID, sdk.UpdateChatRequest{ProjectID: sdk.SelectProject(bobs.ID)}),
			http.StatusBadRequest, sdk.CodeValidation)
		for _, id := range []uuid.UUID{in.ID, out.ID} {
			require.NoError(t, h.alice.UpdateChat(ctx, id, sdk.UpdateChatRequest{ProjectID: sdk.SelectProject(uuid.Nil)}))
			c, err := h.alice.Chat(ctx, id)
			require.NoError(t, err)
			require.Nil(t, c.ProjectID)
		}
		r := h.raw(t, "PATCH", "/api/v2/chats/"+in.ID.String(), `{"project_id": "nope"}`, "Authorization", "Bearer "+h.aliceToken)
		requireJSONError(t, r, http.StatusBadRequest, sdk.CodeValidation)
		r = h.raw(t, "GET", "/api/v2/chats?project_id=nope", nil, "Authorization", "Bearer "+h.aliceToken)
		requireJSONError(t, r, http.StatusBadRequest, sdk.CodeValidation)

		// Empty now (the child left with its root): it goes, with its memories.
		require.NoError(t, h.alice.DeleteProject(ctx, p.ID))
		_, err = h.alice.Project(ctx, p.ID)
		requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)
		r = h.raw(t, "GET", "/api/experimental/projects/"+bobs.ID.String(), nil, "Authorization", "Bearer "+h.adminToken)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	})
}

func TestProjectsBadInput(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		h := setup(t, newStore)
		p, err := h.alice.CreateProject(h.ctx, sdk.CreateProjectRequest{Name: "p"})
		require.NoError(t, err)
		auth := []string{"Authorization", "Bearer " + h.aliceToken}
		base := "/api/v2/projects/" + p.ID.String()
		for _, tc := range []struct {
			method, path, body string
			status             int
			code               string
		}{
			{"POST", "/api/v2/projects", `{}`, 400, sdk.CodeValidation},
			{"POST", "/api/v2/projects", `{"name": "` + strings.Repeat("x", 201) + `"}`, 400, sdk.CodeValidation},
			{"POST", "/api/v2/projects", `{"name": "a", "instructions": "` + strings.Repeat("x", 33<<10) + `"}`, 400, sdk.CodeValidation},
			{"POST", "/api/v2/projects", `{"name": 3}`, 400, sdk.CodeValidation},
			{"GET", "/api/v2/projects/nope", ``, 404, sdk.CodeNotFound},
			{"PUT", base + "/memories/Bad", `{"content": "x"}`, 400, sdk.CodeValidation},
			{"PUT", base + "/memories/.dot", `{"content": "x"}`, 400, sdk.CodeValidation},
			{"PUT", base + "/memories/" + strings.Repeat("a", 65), `{"content": "x"}`, 400, sdk.CodeValidation},
			{"PUT", base + "/memories/ok", `{"content": ""}`, 400, sdk.CodeValidation},
			{"PUT", base + "/memories/ok", `{"content": "` + strings.Repeat("x", 16<<10+1) + `"}`, 400, sdk.CodeValidation},
			{"GET", base + "/memories/none", ``, 404, sdk.CodeNotFound},
			{"DELETE", base + "/memories/none", ``, 404, sdk.CodeNotFound},
			{"GET", base + "/memories/BAD", ``, 400, sdk.CodeValidation},
		} {
			var body any
			if tc.body != "" {
				body = tc.body
			}
			r := h.raw(t, tc.method, tc.path, body, auth...)
			requireJSONError(t, r, tc.status, tc.code)
		}
	})
}

func TestProjectMemoriesAPI(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, newStore func(t testing.TB) store.Store) {
		s := newStore(t)
		h := setupOn(t, s)
		ctx := h.ctx
		p, err := h.alice.CreateProject(ctx, sdk.CreateProjectRequest{Name: "p"})
		require.NoError(t, err)

		r := h.raw(t, "PUT", "/api/v2/projects/"+p.ID.String()+"/memories/style", `{"content": "terse"}`, "Authorization", "Bearer "+h.aliceToken)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		r = h.raw(t, "PUT", "/api/v2/projects/"+p.ID.String()+"/memories/style", `{"content": "terse, kind"}`, "Authorization", "Bearer "+h.aliceToken)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		m, err := h.alice.Memory(ctx, p.ID, "style")
		require.NoError(t, err)
		require.Equal(t, "terse, kind", m.Content)
		require.Nil(t, m.ChatID, "a person wrote it")

		// Fill the project to the cap: a new name is refused, an existing
		// one still replaced.
		svc := projects.New(s, nil, projects.Limits{})
		for i := 1; i < projects.MaxMemories; i++ {
			_, err := svc.SaveMemory(ctx, p.ID, fmt.Sprintf("m%03d", i), "x", uuid.NullUUID{})
			require.NoError(t, err)
		}
		_, err = h.alice.PutMemory(ctx, p.ID, "one-more", "x")
		requireAPIError(t, err, http.StatusConflict, sdk.CodeMemoryFull)
		_, err = h.alice.PutMemory(ctx, p.ID, "style", "plain")
		require.NoError(t, err)
		ms, err := h.alice.Memories(ctx, p.ID)
		require.NoError(t, err)
		require.Len(t, ms, projects.MaxMemories)
		require.Equal(t, "m001", ms[0].Name)

		require.NoError(t, h.alice.DeleteMemory(ctx, p.ID, "style"))
		_, err = h.alice.Memory(ctx, p.ID, "style")
		requireAPIError(t, err, http.StatusNotFound, sdk.CodeNotFound)
		_, err = h.alice.PutMemory(ctx, p.ID, "one-more", "x")
		require.NoError(t, err, "room again after a delete")
	})
}
