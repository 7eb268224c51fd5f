-- The SQLite form of postgres/0008_repo_exec_policy.sql.
ALTER TABLE repo_policies ADD COLUMN exec text NOT NULL DEFAULT '{}';
