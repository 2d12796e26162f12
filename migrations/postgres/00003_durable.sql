-- +goose Up
-- Durable requests (spec: durable-messages). A request's user message, or
-- its queued message while it waits, carries the request id.
ALTER TABLE chat_messages ADD COLUMN request_id uuid;
ALTER TABLE chat_queued_messages ADD COLUMN request_id uuid;

-- A claim binds a request id to its caller and content. It outlives its
-- chat (no foreign key on chat_id): a deleted chat must not free the id
-- for another execution.
CREATE TABLE invocations (
    request_id        uuid PRIMARY KEY,
    caller_id         uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    content_sha256    text NOT NULL,
    kind              text NOT NULL CHECK (kind IN ('create_chat', 'send_message')),
    chat_id           uuid NOT NULL,
    audit_id          uuid NOT NULL UNIQUE,
    state             text NOT NULL
                      CHECK (state IN ('admitted', 'completed', 'unresolved', 'reconciled')),
    message_id        bigint,
    queued_message_id bigint,
    response          jsonb,
    outcome           jsonb,
    review            jsonb,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    completed_at      timestamptz
);

CREATE INDEX invocations_chat_id_idx ON invocations (chat_id);

-- One row per server-side tool call, written before the call runs, so a
-- crash leaves evidence that an effect may have happened. seq is the start
-- order.
CREATE TABLE tool_journal (
    seq          bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    chat_id      uuid NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    tool_call_id text NOT NULL,
    request_id   uuid,
    tool_name    text NOT NULL,
    effect       text NOT NULL CHECK (effect IN ('pure', 'idempotent', 'effectful')),
    args         jsonb,
    state        text NOT NULL CHECK (state IN ('started', 'completed', 'unresolved', 'reconciled')),
    result       jsonb,
    is_error     boolean NOT NULL DEFAULT false,
    attempts     bigint NOT NULL DEFAULT 1,
    started_at   timestamptz NOT NULL,
    completed_at timestamptz,
    PRIMARY KEY (chat_id, tool_call_id)
);

CREATE INDEX tool_journal_chat_seq_idx ON tool_journal (chat_id, seq);

-- +goose Down
DROP TABLE tool_journal;
DROP TABLE invocations;
ALTER TABLE chat_queued_messages DROP COLUMN request_id;
ALTER TABLE chat_messages DROP COLUMN request_id;
