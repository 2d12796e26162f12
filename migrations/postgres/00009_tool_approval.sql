-- +goose Up
-- A chat's own tool approval policy (it may only tighten the MCP config's
-- and the deployment's), and the approval round of the tool calls it waits
-- on: a JSON object {history_version, calls: [{tool_call_id, tool_name,
-- server, args, effect, state, reason}]}, NULL when there is none.
ALTER TABLE chats ADD COLUMN tool_approval text NOT NULL DEFAULT 'never'
    CHECK (tool_approval IN ('never', 'effectful', 'always'));
ALTER TABLE chats ADD COLUMN tool_approvals jsonb
    CHECK (tool_approvals IS NULL OR jsonb_typeof(tool_approvals) = 'object');

-- +goose Down
ALTER TABLE chats DROP COLUMN tool_approvals;
ALTER TABLE chats DROP COLUMN tool_approval;
