-- Dynamic client registration (RFC 7591) and management (RFC 7592) (issue 19); see
-- migrations/0010_registration.sql for the reasons.
ALTER TABLE clients ADD COLUMN registration_access_token_hash TEXT;
ALTER TABLE clients ADD COLUMN token_endpoint_auth_method TEXT
  CHECK (token_endpoint_auth_method IN ('none', 'client_secret_basic', 'client_secret_post', 'client_secret_jwt', 'private_key_jwt'));

CREATE TABLE registration_tokens (
  token_hash TEXT PRIMARY KEY,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  used_at    BIGINT,
  client_id  TEXT
);
CREATE INDEX registration_tokens_expires_at ON registration_tokens(expires_at);
