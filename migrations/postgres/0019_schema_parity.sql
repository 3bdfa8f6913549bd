-- Where the two dialects' histories had made the schema differently, made the same.

-- The index of a person's sessions gets the name it has on SQLite.
ALTER INDEX sessions_user_id RENAME TO sessions_user;

-- Rate limits count in 64 bits, as SQLite's INTEGER does: a 32-bit count of a long run of failures
-- for one key would end in an out-of-range error instead of a refusal. The table holds only live
-- counters, so rewriting it is quick.
ALTER TABLE rate_limit_counters ALTER COLUMN count TYPE BIGINT;

-- On SQLite this change also adds the indexes of client_id that PostgreSQL has had since 0001
-- (device_grants, authorization_codes, refresh_tokens), which the cascade of removing a client uses.
