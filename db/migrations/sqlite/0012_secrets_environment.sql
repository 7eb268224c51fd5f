-- The SQLite form of postgres/0012_secrets_environment.sql.
CREATE TABLE repo_environments (
    repo    text PRIMARY KEY REFERENCES repos (name),
    env     text NOT NULL DEFAULT '{}',
    secrets text NOT NULL DEFAULT '{}'
) STRICT;
ALTER TABLE sessions ADD COLUMN env text NOT NULL DEFAULT '{}';
