-- Configuration as code: the objects a configuration file declares (`latchkey config apply`) are
-- managed by that file. `managed_by` holds the file's absolute path, NULL for objects made by hand;
-- the admin commands and the console refuse to change a managed object (the file would undo it).
ALTER TABLE clients ADD COLUMN managed_by TEXT;
ALTER TABLE apis ADD COLUMN managed_by TEXT;
ALTER TABLE roles ADD COLUMN managed_by TEXT;
ALTER TABLE connectors ADD COLUMN managed_by TEXT;

-- The upstream groups that grant a role: a person whose upstream (OIDC, GitHub, LDAP) reports one
-- of them at sign-in holds the role until a sign-in without it. Names are compared exactly.
CREATE TABLE role_groups (
  role_name  TEXT NOT NULL REFERENCES roles(name) ON DELETE CASCADE,
  group_name TEXT NOT NULL,
  PRIMARY KEY (role_name, group_name)
) STRICT;

-- A role held through an upstream group ('group', replaced at each upstream sign-in) is kept apart
-- from one granted by hand ('direct', `users grant`): a person may hold the same role both ways, and
-- losing the group leaves the direct grant. SQLite cannot change a primary key in place: the table
-- is made again with the source in its key and its rows copied over as direct grants (nothing
-- refers to it); its index and the directory_version triggers go with the old table and are made
-- again.
CREATE TABLE user_roles_next (
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role       TEXT NOT NULL REFERENCES roles(name) ON DELETE CASCADE,
  granted_at INTEGER NOT NULL,
  source     TEXT NOT NULL DEFAULT 'direct' CHECK (source IN ('direct', 'group')),
  PRIMARY KEY (user_id, role, source)
) STRICT;
INSERT INTO user_roles_next (user_id, role, granted_at, source) SELECT user_id, role, granted_at, 'direct' FROM user_roles;
DROP TABLE user_roles;
ALTER TABLE user_roles_next RENAME TO user_roles;
CREATE INDEX user_roles_role ON user_roles(role);
CREATE TRIGGER user_roles_inserted AFTER INSERT ON user_roles BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER user_roles_deleted AFTER DELETE ON user_roles BEGIN UPDATE directory_version SET version = version + 1; END;
