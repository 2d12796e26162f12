-- +goose Up
-- Projects group a user's chats under shared instructions and a durable
-- memory (spec: "Project memory"). A project with chats cannot be deleted:
-- chats.project_id references it without a cascade.
CREATE TABLE projects (
    id           uuid PRIMARY KEY,
    owner_id     uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name         text NOT NULL,
    instructions text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);
CREATE INDEX projects_owner_idx ON projects (owner_id, created_at, id);

-- A project's memories, by name. chat_id is the chat that wrote the
-- memory (NULL when a person did through the API); it is a record, not a
-- reference, so deleting the chat keeps the memory.
CREATE TABLE project_memories (
    project_id uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name       text NOT NULL,
    content    text NOT NULL,
    chat_id    uuid,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (project_id, name)
);

ALTER TABLE chats ADD COLUMN project_id uuid REFERENCES projects(id);
CREATE INDEX chats_project_idx ON chats (project_id, updated_at DESC, id DESC) WHERE project_id IS NOT NULL;

-- +goose Down
DROP INDEX chats_project_idx;
ALTER TABLE chats DROP COLUMN project_id;
DROP TABLE project_memories;
DROP TABLE projects;
