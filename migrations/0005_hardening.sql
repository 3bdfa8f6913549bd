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

-- The confidential clients that may introspect tokens issued for an API (RFC 7662 §4): JSON array.
ALTER TABLE apis ADD COLUMN introspection_clients TEXT NOT NULL DEFAULT '[]';
