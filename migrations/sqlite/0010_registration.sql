-- Dynamic client registration (RFC 7591) and management (RFC 7592) (issue 19).

-- A registered client keeps the SHA-256 of its registration access token (RFC 7592 §1), compared
-- in constant time at its registration_client_uri, and the token_endpoint_auth_method it asked for
-- (which tells client_secret_basic from client_secret_post). NULL for clients an operator made.
ALTER TABLE clients ADD COLUMN registration_access_token_hash TEXT;
ALTER TABLE clients ADD COLUMN token_endpoint_auth_method TEXT
  CHECK (token_endpoint_auth_method IN ('none', 'client_secret_basic', 'client_secret_post', 'client_secret_jwt', 'private_key_jwt'));

-- Initial access tokens (`latchkey clients registration-token`), kept as their SHA-256: single use
-- (used_at is set by the registration that spends it, in the same transaction as the new client),
-- removed by housekeeping once expired. No foreign key on client_id: the record of which
-- registration spent a token outlives the client.
CREATE TABLE registration_tokens (
  token_hash TEXT PRIMARY KEY,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at    INTEGER,
  client_id  TEXT
) STRICT;
CREATE INDEX registration_tokens_expires_at ON registration_tokens(expires_at);
