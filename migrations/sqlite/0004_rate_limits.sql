-- Rate-limit counters kept in the database, for stores shared by several server instances
-- (PostgreSQL); a single SQLite machine counts in memory. One row per limiter bucket and key: a
-- fixed window (count since started_at) or a run of failures (count, the latest at last_at).
CREATE TABLE rate_limit_counters (
  bucket     TEXT NOT NULL,
  key        TEXT NOT NULL,
  count      INTEGER NOT NULL,
  started_at REAL NOT NULL,
  last_at    REAL NOT NULL,
  PRIMARY KEY (bucket, key)
) STRICT;
CREATE INDEX rate_limit_counters_last_at ON rate_limit_counters(last_at);
