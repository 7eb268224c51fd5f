-- The SQLite form of postgres/0013_environment_config.sql.
ALTER TABLE repo_environments ADD COLUMN config text NOT NULL DEFAULT '';
