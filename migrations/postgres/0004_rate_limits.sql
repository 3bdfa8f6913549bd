-- Rate-limit counters shared by every instance on this database: one row per limiter bucket and
-- key, a fixed window (count since started_at) or a run of failures (count, the latest at last_at).
CREATE TABLE rate_limit_counters (
  bucket     TEXT NOT NULL,
  key        TEXT NOT NULL,
  count      INTEGER NOT NULL,
  started_at DOUBLE PRECISION NOT NULL,
  last_at    DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (bucket, key)
);
CREATE INDEX rate_limit_counters_last_at ON rate_limit_counters(last_at);
