package apitypes

// RepoEnvironment is what may be shown of a repository's environment: its
// plain variables and the names of its secrets (their values are
// write-only: never in any answer).
type RepoEnvironment struct {
	Env     map[string]string `json:"env"`
	Secrets []string          `json:"secrets"`
}

// RepoEnvironmentRequest changes a repository's environment (PUT
// /v1/repos/{repo}/environment). Env replaces the plain variables;
// Secrets sets each secret named to its value (at most 64 KiB), and a
// null value removes it; secrets not named are kept.
type RepoEnvironmentRequest struct {
	Env     map[string]string  `json:"env"`
	Secrets map[string]*string `json:"secrets,omitempty"`
}
