-- Where the two dialects' histories had made the schema differently, made the same.

-- Removing a client cascades to its device grants, authorization codes and refresh tokens: without
-- an index on client_id, each is a scan of the whole table. PostgreSQL has had these since 0001.
CREATE INDEX device_grants_client_id ON device_grants(client_id);
CREATE INDEX authorization_codes_client_id ON authorization_codes(client_id);
CREATE INDEX refresh_tokens_client_id ON refresh_tokens(client_id);

-- On PostgreSQL this change also gives the index of a person's sessions SQLite's name
-- (sessions_user) and counts rate limits in 64 bits, as SQLite's INTEGER always has.
