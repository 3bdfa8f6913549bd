-- OIDC Core §5.1 standard claims of a person, and the claims an authorization request names.

-- The claims an operator sets besides name and email (`latchkey users add|update`): a JSON object
-- keyed by the claims' own names (given_name, phone_number_verified, address …), '{}' for none.
-- updated_at is OIDC's updated_at: when name, email or these claims last changed. Users made before
-- this version last changed when they were made.
ALTER TABLE users ADD COLUMN profile TEXT NOT NULL DEFAULT '{}';
ALTER TABLE users ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0;
UPDATE users SET updated_at = created_at;

-- The claims an authorization request asked for by name (the OIDC `claims` parameter, Core §5.5):
-- a JSON object {"userinfo": [...], "idToken": [...]}, carried from the code into the refresh-token
-- family and along every rotation. NULL when the request named none (and for older rows).
ALTER TABLE authorization_codes ADD COLUMN claims TEXT;
ALTER TABLE refresh_tokens ADD COLUMN claims TEXT;
