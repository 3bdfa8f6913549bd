-- Three released migrations (0003, 0004, 0006 here; 0005, 0006, 0008 on SQLite) were extended after
-- some databases had already run them; those databases never got the added statements. They are
-- repeated here, each written so that it changes nothing where it already ran.

-- Tokens rotated before refresh-token parents were recorded get their parent from replaced_by.
UPDATE refresh_tokens c SET parent_id = p.id FROM refresh_tokens p WHERE p.replaced_by = c.id AND c.parent_id IS NULL;
-- A family that handed out grace successors before parents were recorded may have forked. Such a
-- family is the one with more than one token without a parent (every other token has one); it is
-- revoked, and its people sign in again, once.
INSERT INTO revoked_refresh_families (family_id, revoked_at)
  SELECT family_id, floor(extract(epoch FROM now()))::bigint FROM refresh_tokens WHERE parent_id IS NULL GROUP BY family_id HAVING count(*) > 1
  ON CONFLICT DO NOTHING;
UPDATE refresh_tokens SET revoked_at = floor(extract(epoch FROM now()))::bigint
WHERE revoked_at IS NULL AND family_id IN (SELECT family_id FROM refresh_tokens WHERE parent_id IS NULL GROUP BY family_id HAVING count(*) > 1);

-- The first administrator's made-up address (admin@localhost) was never anyone's mailbox: it must
-- not read as verified, nor let an upstream account of that email be linked to it.
UPDATE users SET email_verified = false WHERE email_verified AND lower(email) LIKE '%@localhost';

-- Sign-out by session finds the session's refresh tokens by index.
CREATE INDEX IF NOT EXISTS refresh_tokens_session ON refresh_tokens(session_id) WHERE session_id IS NOT NULL;
