-- +goose Up
-- Search (GET /chats?q=): pg_trgm GIN indexes over chat titles and over the
-- text parts of live user and assistant messages people see, serving
-- ILIKE '%term%' (case-insensitive substring). The extension goes to the
-- public schema so every schema of a database shares one; a role that
-- may not create extensions needs a superuser to run this statement first
-- (IF NOT EXISTS then succeeds without the privilege).
-- +goose StatementBegin
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
EXCEPTION
    -- Another schema's migration created it at the same moment.
    WHEN unique_violation THEN NULL;
    WHEN insufficient_privilege THEN
        RAISE EXCEPTION 'chatd search needs the pg_trgm extension and this role may not create it: as a superuser run CREATE EXTENSION pg_trgm SCHEMA public, then start chatd again';
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- chatd_message_text is the searchable text of a message: its text parts,
-- one per line, in order. The store queries this very expression so the
-- index serves it.
CREATE FUNCTION chatd_message_text(content jsonb) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT string_agg(p.value ->> 'text', E'\n' ORDER BY p.ord)
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(content) = 'array' THEN content ELSE '[]'::jsonb END)
         WITH ORDINALITY AS p(value, ord)
    WHERE p.value ->> 'type' = 'text'
$$;
-- +goose StatementEnd

CREATE INDEX chats_title_trgm_idx ON chats USING gin (title public.gin_trgm_ops);

CREATE INDEX chat_messages_text_trgm_idx ON chat_messages
    USING gin (chatd_message_text(content) public.gin_trgm_ops)
    WHERE NOT deleted AND role IN ('user', 'assistant') AND visibility <> 'model';

-- +goose Down
DROP INDEX chat_messages_text_trgm_idx;
DROP INDEX chats_title_trgm_idx;
DROP FUNCTION chatd_message_text(jsonb);
