-- +goose Up
-- A chat's own tool approval policy (it may only tighten the MCP config's
-- and the deployment's), and the approval round of the tool calls it waits
-- on: a JSON array of {tool_call_id, tool_name, server, args, effect,
-- state, reason}, NULL when no call awaits or holds an answer.
ALTER TABLE chats ADD COLUMN tool_approval TEXT NOT NULL DEFAULT 'never'
    CHECK (tool_approval IN ('never', 'effectful', 'always'));
ALTER TABLE chats ADD COLUMN tool_approvals TEXT
    CHECK (tool_approvals IS NULL OR (json_valid(tool_approvals) AND json_type(tool_approvals) = 'array'));

-- +goose Down
ALTER TABLE chats DROP COLUMN tool_approvals;
ALTER TABLE chats DROP COLUMN tool_approval;
