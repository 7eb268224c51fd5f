package apitypes

import (
	"bytes"
	"encoding/json"
	"time"
)

// RepoEnvironment is what may be shown of a repository's environment: its
// plain variables and the names of its secrets (their values are
// write-only: never in any answer).
type RepoEnvironment struct {
	Env     map[string]string `json:"env"`
	Secrets []string          `json:"secrets"`
	// The configuration set through the API (none: the file at the base
	// commit, or the defaults).
	EnvironmentConfig
}

// RepoEnvironmentRequest changes a repository's environment (PUT
// /v1/repos/{repo}/environment). Env replaces the plain variables;
// Secrets sets each secret named to its value (at most 64 KiB), and a
// null value removes it; secrets not named are kept.
//
// When any of setup, key, include or auto is present, the configuration
// is replaced by exactly what is given (all of them empty removes it, so
// the file at the base applies again); when none is, it is kept.
//
// File, instead, gives the configuration as a file's text (JSON, or YAML
// when its name ends in .yaml or .yml); a file that does not parse is
// refused naming the file, the line and the column.
type RepoEnvironmentRequest struct {
	Env     map[string]string  `json:"env"`
	Secrets map[string]*string `json:"secrets,omitempty"`
	EnvironmentConfig
	File *EnvironmentFile `json:"file,omitempty"`
}

// EnvironmentFile is an environment configuration as a file's text.
type EnvironmentFile struct {
	Name    string `json:"name"`
	Content string `json:"content"`
}

// EnvironmentConfig is a repository's environment configuration (SPEC
// §13), as PUT /v1/repos/{repo}/environment takes it beside the
// variables and as .sessiond/environment.json (or .yaml) holds it at a
// base commit: Setup commands run in order in a view of the base to
// install the dependencies; Key globs of the files whose content decides
// the layer (default: the common lock files); Include files every view
// has; Auto (default true) derives a setup from the lock files when Setup
// is empty.
type EnvironmentConfig struct {
	Setup   []EnvironmentStep    `json:"setup,omitempty" yaml:"setup,omitempty"`
	Key     []string             `json:"key,omitempty" yaml:"key,omitempty"`
	Include []EnvironmentInclude `json:"include,omitempty" yaml:"include,omitempty"`
	Auto    *bool                `json:"auto,omitempty" yaml:"auto,omitempty"`
}

// EnvironmentStep is one setup command: Argv, or Command (shell text run
// by /bin/sh -c). It may also be written as a plain string (shell text)
// or an array of strings (argv). Network (default true) gives the step
// the network the repository's policy allows; TimeoutSeconds defaults to
// 1800.
type EnvironmentStep struct {
	Argv           []string          `json:"argv,omitempty"`
	Command        string            `json:"command,omitempty"`
	Network        *bool             `json:"network,omitempty"`
	TimeoutSeconds int               `json:"timeout_seconds,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
}

// UnmarshalJSON takes a step as shell text, an argv array or an object
// (whose unknown fields are refused).
func (s *EnvironmentStep) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '"':
		*s = EnvironmentStep{}
		return json.Unmarshal(b, &s.Command)
	case len(b) > 0 && b[0] == '[':
		*s = EnvironmentStep{}
		return json.Unmarshal(b, &s.Argv)
	}
	type plain EnvironmentStep
	var p plain
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&p); err != nil {
		return err
	}
	*s = EnvironmentStep(p)
	return nil
}

// EnvironmentInclude is one file every view has: Content, or the value
// of the repository's secret named Secret (written mode 0600).
type EnvironmentInclude struct {
	Path    string  `json:"path"`
	Content *string `json:"content,omitempty"`
	Secret  string  `json:"secret,omitempty"`
}

// ExecEnvironment is the environment layer a command ran on: its Key,
// Status (ready; failed, when the command ran without it; none) and
// Source (api, file, auto). Built: this command waited for its build.
// A failed build's Log and Error are kept; Problem says why a
// configuration at the base could not be used.
type ExecEnvironment struct {
	Key     string `json:"key,omitempty"`
	Status  string `json:"status"`
	Source  string `json:"source,omitempty"`
	Built   bool   `json:"built,omitempty"`
	Log     string `json:"log,omitempty"`
	Error   string `json:"error,omitempty"`
	Problem string `json:"problem,omitempty"`
}

// EnvironmentLayer is one environment layer of a repository (GET
// /v1/repos/{repo}/environments): its key, the commit it was built from,
// its size and files, how long the build took, its status (ready,
// failed, building), its last use and the commands holding it.
type EnvironmentLayer struct {
	Key      string    `json:"key"`
	Commit   string    `json:"commit,omitempty"`
	Status   string    `json:"status"`
	Bytes    int64     `json:"bytes"`
	Files    int64     `json:"files"`
	BuildMS  int64     `json:"build_ms"`
	BuiltAt  time.Time `json:"built_at"`
	LastUsed time.Time `json:"last_used"`
	InUse    int       `json:"in_use"`
	Log      string    `json:"log,omitempty"`
	Error    string    `json:"error,omitempty"`
}

// EnvironmentLayers lists a repository's environment layers, most
// recently used first.
type EnvironmentLayers struct {
	Layers []EnvironmentLayer `json:"layers"`
}

// EnvironmentRebuild is the answer of POST
// /v1/repos/{repo}/environments/rebuild: how many layers and remembered
// failures were dropped (the next command builds again).
type EnvironmentRebuild struct {
	Dropped int `json:"dropped"`
}
