-- Hardening round two (issue 14).

-- An authorization request is no longer stored while nobody has acted on it: it travels sealed
-- (HMAC) in the browser's URL, so anonymous requests cost no disk. A session remembers the request
-- its sign-in was made for (prompt=login, max_age).
DROP TABLE interactions;
ALTER TABLE sessions ADD COLUMN interaction_id TEXT;

-- Access tokens of a user issued at or before this time are refused (a new password, a disabled
-- account, `users revoke-tokens`); refresh families are revoked at the same moment.
ALTER TABLE users ADD COLUMN tokens_revoked_at INTEGER;

-- A client_id removed and registered again does not inherit the old client's tokens: the new row
-- carries the time of the removal, and tokens issued at or before it are refused.
CREATE TABLE removed_clients (
  client_id  TEXT PRIMARY KEY,
  removed_at INTEGER NOT NULL
) STRICT;
ALTER TABLE clients ADD COLUMN tokens_revoked_at INTEGER;

-- Refresh-token siblings: every successor records its parent. Once one successor of a parent has
-- been used, its siblings (grace successors handed to a racing process or a thief) are superseded,
-- and presenting one of them is reuse (RFC 9700 §4.14.2): the family can never fork.
ALTER TABLE refresh_tokens ADD COLUMN parent_id TEXT;
ALTER TABLE refresh_tokens ADD COLUMN superseded_at INTEGER;
CREATE INDEX refresh_tokens_parent ON refresh_tokens(parent_id);
CREATE INDEX refresh_tokens_user ON refresh_tokens(user_id);
-- Tokens rotated before this version: the first successor is known (replaced_by).
UPDATE refresh_tokens SET parent_id = (SELECT p.id FROM refresh_tokens p WHERE p.replaced_by = refresh_tokens.id)
WHERE parent_id IS NULL AND id IN (SELECT replaced_by FROM refresh_tokens WHERE replaced_by IS NOT NULL);
-- Grace successors handed out before this version have no recorded parent, so a family that got
-- one may already have forked: such a family is revoked (its people sign in again, once).
INSERT OR IGNORE INTO revoked_refresh_families (family_id, revoked_at)
  SELECT DISTINCT family_id, CAST(strftime('%s', 'now') AS INTEGER) FROM refresh_tokens WHERE grace_successors > 0 AND revoked_at IS NULL;
UPDATE refresh_tokens SET revoked_at = CAST(strftime('%s', 'now') AS INTEGER)
WHERE revoked_at IS NULL AND family_id IN (SELECT family_id FROM refresh_tokens WHERE grace_successors > 0);

-- The confidential clients that may introspect tokens issued for an API (RFC 7662 §4): JSON array.
ALTER TABLE apis ADD COLUMN introspection_clients TEXT NOT NULL DEFAULT '[]';
