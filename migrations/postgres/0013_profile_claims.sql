-- OIDC Core §5.1 standard claims of a person, and the claims an authorization request names; see
-- migrations/0013_profile_claims.sql for the reasons. JSON is kept as TEXT, as groups and the
-- clients' JSON columns are: both stores parse it the same way, and it comes back as written.
ALTER TABLE users ADD COLUMN profile TEXT NOT NULL DEFAULT '{}';
ALTER TABLE users ADD COLUMN updated_at BIGINT;
UPDATE users SET updated_at = created_at;
ALTER TABLE users ALTER COLUMN updated_at SET NOT NULL;

ALTER TABLE authorization_codes ADD COLUMN claims TEXT;
ALTER TABLE refresh_tokens ADD COLUMN claims TEXT;
