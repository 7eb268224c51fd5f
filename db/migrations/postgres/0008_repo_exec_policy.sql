-- What commands run on a repository's sessions may use: the host's
-- network, and limits narrower than the daemon's (repos.ExecPolicy as
-- JSON; {} is the daemon's defaults and no host network).
ALTER TABLE repo_policies ADD COLUMN exec text NOT NULL DEFAULT '{}';
