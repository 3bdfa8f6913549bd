-- Three released migrations (0005, 0006, 0008) were extended after some databases had already run
-- them; those databases never got the added statements. They are repeated here, each written so
-- that it changes nothing where it already ran.

-- 0005: tokens rotated before refresh-token parents were recorded get their parent from replaced_by.
UPDATE refresh_tokens SET parent_id = (SELECT p.id FROM refresh_tokens p WHERE p.replaced_by = refresh_tokens.id)
WHERE parent_id IS NULL AND id IN (SELECT replaced_by FROM refresh_tokens WHERE replaced_by IS NOT NULL);
-- 0005: a family that handed out grace successors before parents were recorded may have forked. Such a
-- family is the one with more than one token without a parent (every other token has one); it is
-- revoked, and its people sign in again, once.
INSERT OR IGNORE INTO revoked_refresh_families (family_id, revoked_at)
  SELECT family_id, CAST(strftime('%s', 'now') AS INTEGER) FROM refresh_tokens WHERE parent_id IS NULL GROUP BY family_id HAVING count(*) > 1;
UPDATE refresh_tokens SET revoked_at = CAST(strftime('%s', 'now') AS INTEGER)
WHERE revoked_at IS NULL AND family_id IN (SELECT family_id FROM refresh_tokens WHERE parent_id IS NULL GROUP BY family_id HAVING count(*) > 1);

-- 0006: the first administrator's made-up address (admin@localhost) was never anyone's mailbox: it
-- must not read as verified, nor let an upstream account of that email be linked to it.
UPDATE users SET email_verified = 0 WHERE email_verified = 1 AND lower(email) LIKE '%@localhost';

-- 0008: sign-out by session finds the session's refresh tokens by index.
CREATE INDEX IF NOT EXISTS refresh_tokens_session ON refresh_tokens(session_id) WHERE session_id IS NOT NULL;
