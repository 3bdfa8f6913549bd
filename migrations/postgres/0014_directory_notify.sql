-- The servers' directory cache (src/store/postgres/directory_cache.ts): every change to what it
-- keeps (clients, users and their roles, APIs, connectors) is announced on the channel
-- latchkey_directory when its transaction commits, with the schema as payload, so that each
-- instance drops its cache. Once per statement: a NOTIFY repeated in a transaction is sent once.
CREATE FUNCTION latchkey_directory_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('latchkey_directory', TG_TABLE_SCHEMA);
  RETURN NULL;
END
$$;

CREATE TRIGGER clients_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON clients
  FOR EACH STATEMENT EXECUTE FUNCTION latchkey_directory_changed();
CREATE TRIGGER users_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON users
  FOR EACH STATEMENT EXECUTE FUNCTION latchkey_directory_changed();
CREATE TRIGGER apis_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON apis
  FOR EACH STATEMENT EXECUTE FUNCTION latchkey_directory_changed();
CREATE TRIGGER connectors_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON connectors
  FOR EACH STATEMENT EXECUTE FUNCTION latchkey_directory_changed();
-- A user's roles (also when a removed role takes its grants along, by the foreign key's cascade).
CREATE TRIGGER user_roles_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON user_roles
  FOR EACH STATEMENT EXECUTE FUNCTION latchkey_directory_changed();
