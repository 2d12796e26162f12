-- +goose Up
CREATE TABLE users (
    id         uuid PRIMARY KEY,
    name       text NOT NULL UNIQUE CHECK (name <> ''),
    admin      boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL
);

-- Tokens are stored as SHA-256 hashes only; the clear token is shown once.
CREATE TABLE api_tokens (
    id         uuid PRIMARY KEY,
    user_id    uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    hash       bytea NOT NULL UNIQUE,
    name       text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL
);

CREATE TABLE chats (
    id                          uuid PRIMARY KEY,
    owner_id                    uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    parent_chat_id              uuid REFERENCES chats(id) ON DELETE CASCADE,
    root_chat_id                uuid REFERENCES chats(id) ON DELETE CASCADE,
    title                       text NOT NULL DEFAULT '',
    title_source                text NOT NULL DEFAULT 'fallback'
                                CHECK (title_source IN ('fallback', 'generated', 'user')),
    title_updated_at            timestamptz NOT NULL,
    status                      text NOT NULL
                                CHECK (status IN ('waiting', 'running', 'interrupting', 'requires_action', 'error')),
    archived                    boolean NOT NULL DEFAULT false,
    worker_id                   uuid,
    runner_id                   uuid,
    last_error                  jsonb,
    retry_state                 jsonb,
    snapshot_version            bigint NOT NULL DEFAULT 1,
    history_version             bigint NOT NULL DEFAULT 0,
    queue_version               bigint NOT NULL DEFAULT 0,
    retry_state_version         bigint NOT NULL DEFAULT 0,
    generation_attempt          bigint NOT NULL DEFAULT 0,
    requires_action_deadline_at timestamptz,
    compaction_requested_at     timestamptz,
    labels                      jsonb NOT NULL DEFAULT '{}'::jsonb,
    pin_order                   bigint NOT NULL DEFAULT 0,
    last_model_config_id        uuid,
    last_reasoning_effort       text NOT NULL DEFAULT '',
    dynamic_tools               jsonb,
    created_at                  timestamptz NOT NULL,
    updated_at                  timestamptz NOT NULL
);

CREATE INDEX chats_owner_updated_idx ON chats (owner_id, updated_at DESC, id DESC);
CREATE INDEX chats_root_idx ON chats (root_chat_id) WHERE root_chat_id IS NOT NULL;
CREATE INDEX chats_runnable_idx ON chats (status)
    WHERE archived = false AND status IN ('running', 'interrupting', 'requires_action');

CREATE TABLE chat_queued_messages (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    chat_id          uuid NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    position         bigint NOT NULL,
    created_by       uuid,
    content          jsonb NOT NULL,
    model_config_id  uuid,
    reasoning_effort text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL
);

CREATE INDEX chat_queued_messages_chat_position_idx ON chat_queued_messages (chat_id, position, id);

CREATE TABLE chat_messages (
    id                    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    chat_id               uuid NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    role                  text NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content               jsonb NOT NULL,
    visibility            text NOT NULL DEFAULT 'both' CHECK (visibility IN ('both', 'user', 'model')),
    compressed            boolean NOT NULL DEFAULT false,
    deleted               boolean NOT NULL DEFAULT false,
    revision              bigint,
    -- No foreign key: the queue row is deleted by the very promotion that
    -- records its id here.
    queued_message_id     bigint,
    created_by            uuid,
    model_config_id       uuid,
    reasoning_effort      text NOT NULL DEFAULT '',
    input_tokens          bigint,
    output_tokens         bigint,
    total_tokens          bigint,
    reasoning_tokens      bigint,
    cache_creation_tokens bigint,
    cache_read_tokens     bigint,
    context_limit         bigint,
    created_at            timestamptz NOT NULL
);

CREATE INDEX chat_messages_chat_id_idx ON chat_messages (chat_id, id);

-- Heartbeats are soft state: losing them on a crash only makes leases look
-- stale, which is what a crash means anyway.
CREATE UNLOGGED TABLE chat_heartbeats (
    chat_id      uuid NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    runner_id    uuid NOT NULL,
    heartbeat_at timestamptz NOT NULL,
    PRIMARY KEY (chat_id, runner_id)
);

CREATE INDEX chat_heartbeats_heartbeat_at_idx ON chat_heartbeats (heartbeat_at);

-- Message revisions and history version (spec: "Message revisions and
-- history version"). revision is the snapshot_version of the transaction
-- that last inserted or meaningfully changed the row.
-- +goose StatementBegin
CREATE FUNCTION set_chat_message_revision() RETURNS trigger AS $$
DECLARE
    chat_snapshot_version bigint;
BEGIN
    IF TG_OP = 'INSERT' AND NEW.revision IS NOT NULL THEN
        RAISE EXCEPTION 'chat_messages.revision must be assigned by trigger' USING ERRCODE = 'P0001';
    END IF;

    IF TG_OP = 'UPDATE' THEN
        IF OLD.chat_id IS DISTINCT FROM NEW.chat_id THEN
            RAISE EXCEPTION 'chat_messages.chat_id is immutable' USING ERRCODE = 'P0001';
        END IF;
        IF OLD.revision IS DISTINCT FROM NEW.revision THEN
            RAISE EXCEPTION 'chat_messages.revision must be assigned by trigger' USING ERRCODE = 'P0001';
        END IF;
        IF OLD IS NOT DISTINCT FROM NEW THEN
            RETURN NEW;
        END IF;
    END IF;

    UPDATE chats
    SET history_version = snapshot_version,
        generation_attempt = 0
    WHERE id = NEW.chat_id
    RETURNING snapshot_version INTO chat_snapshot_version;

    IF chat_snapshot_version IS NULL THEN
        RAISE EXCEPTION 'chat % does not exist', NEW.chat_id USING ERRCODE = 'P0001';
    END IF;

    NEW.revision = chat_snapshot_version;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd

CREATE TRIGGER trigger_set_chat_message_revision_on_insert
BEFORE INSERT ON chat_messages
FOR EACH ROW EXECUTE FUNCTION set_chat_message_revision();

CREATE TRIGGER trigger_set_chat_message_revision_on_update
BEFORE UPDATE ON chat_messages
FOR EACH ROW EXECUTE FUNCTION set_chat_message_revision();

-- Queue version (spec: "Queue version").
-- +goose StatementBegin
CREATE FUNCTION bump_chat_queue_version_on_queued_message_change() RETURNS trigger AS $$
DECLARE
    changed_chat_id uuid;
BEGIN
    IF TG_OP = 'DELETE' THEN
        changed_chat_id = OLD.chat_id;
    ELSE
        changed_chat_id = NEW.chat_id;
    END IF;

    UPDATE chats SET queue_version = snapshot_version WHERE id = changed_chat_id;

    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd

CREATE TRIGGER trigger_bump_chat_queue_version_on_queued_message_insert
AFTER INSERT ON chat_queued_messages
FOR EACH ROW EXECUTE FUNCTION bump_chat_queue_version_on_queued_message_change();

CREATE TRIGGER trigger_bump_chat_queue_version_on_queued_message_update
AFTER UPDATE OF content, model_config_id, position, created_by ON chat_queued_messages
FOR EACH ROW EXECUTE FUNCTION bump_chat_queue_version_on_queued_message_change();

CREATE TRIGGER trigger_bump_chat_queue_version_on_queued_message_delete
AFTER DELETE ON chat_queued_messages
FOR EACH ROW EXECUTE FUNCTION bump_chat_queue_version_on_queued_message_change();

-- Retry state version (spec: "Retry state version"). Retry state is scoped
-- to the generation attempt and to the running turn: a new attempt or any
-- status other than running clears it.
-- +goose StatementBegin
CREATE FUNCTION sync_chat_retry_state() RETURNS trigger AS $$
BEGIN
    IF OLD.retry_state_version IS DISTINCT FROM NEW.retry_state_version THEN
        RAISE EXCEPTION 'chats.retry_state_version must be assigned by trigger' USING ERRCODE = 'P0001';
    END IF;

    IF NEW.generation_attempt IS DISTINCT FROM OLD.generation_attempt THEN
        NEW.retry_state = NULL;
    END IF;

    IF NEW.status <> 'running' THEN
        NEW.retry_state = NULL;
    END IF;

    IF NEW.retry_state IS DISTINCT FROM OLD.retry_state THEN
        NEW.retry_state_version = NEW.snapshot_version;
    END IF;

    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd

CREATE TRIGGER trigger_sync_chat_retry_state
BEFORE UPDATE OF retry_state, retry_state_version, generation_attempt, status ON chats
FOR EACH ROW EXECUTE FUNCTION sync_chat_retry_state();

-- +goose Down
DROP TABLE chat_heartbeats;
DROP TABLE chat_messages;
DROP TABLE chat_queued_messages;
DROP TABLE chats;
DROP TABLE api_tokens;
DROP TABLE users;
DROP FUNCTION set_chat_message_revision();
DROP FUNCTION bump_chat_queue_version_on_queued_message_change();
DROP FUNCTION sync_chat_retry_state();
