-- A counter that every change to clients, users or APIs bumps, whichever process makes it (the
-- admin CLI runs beside the server). A server caches those rows and drops its cache whenever the
-- counter differs from the one it read, so a disabled user or a removed client takes effect at once.
CREATE TABLE directory_version (
  id      INTEGER PRIMARY KEY CHECK (id = 1),
  version INTEGER NOT NULL
) STRICT;
INSERT INTO directory_version (id, version) VALUES (1, 0);

CREATE TRIGGER clients_inserted AFTER INSERT ON clients BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER clients_updated AFTER UPDATE ON clients BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER clients_deleted AFTER DELETE ON clients BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER users_inserted AFTER INSERT ON users BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER users_updated AFTER UPDATE ON users BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER users_deleted AFTER DELETE ON users BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER apis_inserted AFTER INSERT ON apis BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER apis_updated AFTER UPDATE ON apis BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER apis_deleted AFTER DELETE ON apis BEGIN UPDATE directory_version SET version = version + 1; END;
