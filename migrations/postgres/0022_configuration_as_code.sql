-- Configuration as code: the objects a configuration file declares (`latchkey config apply`) are
-- managed by that file; see migrations/sqlite/0022_configuration_as_code.sql for the reasons.
ALTER TABLE clients ADD COLUMN managed_by TEXT;
ALTER TABLE apis ADD COLUMN managed_by TEXT;
ALTER TABLE roles ADD COLUMN managed_by TEXT;
ALTER TABLE connectors ADD COLUMN managed_by TEXT;

-- The primary key leads with the role: a role's groups are read with it, and go with it.
CREATE TABLE role_groups (
  role_name  TEXT NOT NULL REFERENCES roles(name) ON DELETE CASCADE,
  group_name TEXT NOT NULL,
  PRIMARY KEY (role_name, group_name)
);

-- Roles held through an upstream group ('group') apart from those granted by hand ('direct'); the
-- existing grants are direct. The user_roles_changed trigger stays with the table.
ALTER TABLE user_roles ADD COLUMN source TEXT NOT NULL DEFAULT 'direct' CHECK (source IN ('direct', 'group'));
ALTER TABLE user_roles DROP CONSTRAINT user_roles_pkey;
ALTER TABLE user_roles ADD PRIMARY KEY (user_id, role, source);
