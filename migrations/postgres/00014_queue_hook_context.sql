-- +goose Up
-- The lifecycle hook context of a queued prompt: user_prompt_submit is
-- evaluated when the prompt is queued, and the context it returned enters
-- history with the prompt when it is promoted. A JSON array of
-- {text, visibility}, NULL when there is none.
ALTER TABLE chat_queued_messages ADD COLUMN hook_context jsonb
    CHECK (hook_context IS NULL OR jsonb_typeof(hook_context) = 'array');

-- +goose Down
ALTER TABLE chat_queued_messages DROP COLUMN hook_context;
