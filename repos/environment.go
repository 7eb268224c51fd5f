package repos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sessiond/sessiond/environment"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/secret"
)

// ErrSecretTooLarge: a secret's value over secret.MaxValueBytes (API
// too_large, 413).
var ErrSecretTooLarge = errors.New("secret too large")

// Environment is a repository's environment as stored: plain variables,
// and secrets sealed by a secret.Box (never their values).
type Environment struct {
	Repo    string
	Env     map[string]string
	Secrets map[string][]byte
	// Config is the environment configuration set through the API; nil:
	// none (the file at the base commit, or the defaults, apply).
	Config *environment.Config
}

// EnvironmentUpdate changes a repository's environment.
type EnvironmentUpdate struct {
	// Env replaces the plain variables.
	Env map[string]string
	// Secrets sets the secrets named, each to its value; a nil value
	// removes that secret. Secrets not named are kept.
	Secrets map[string]*string
	// SetConfig replaces the configuration by Config (an empty one
	// removes it); otherwise it is kept.
	SetConfig bool
	Config    environment.Config
	// File, when set, is the configuration as a file's text, parsed
	// instead of Config (its errors name the file, line and column).
	File *ConfigFile
}

// ConfigFile is an environment configuration as a file's text.
type ConfigFile struct {
	Name    string
	Content []byte
}

// EnvironmentView is what may be shown of an environment: the plain
// variables and the names of the secrets.
type EnvironmentView struct {
	Repo    string
	Env     map[string]string
	Secrets []string
	Config  *environment.Config
}

// Variables are a repository's variables as commands get them.
type Variables struct {
	Env     map[string]string
	Secrets map[string]string
	// Masker masks the secrets' values in outputs and finds them in
	// content.
	Masker *secret.Masker
}

// CheckVariable checks one variable of field ("env", "secrets"): a valid
// name and a value without NUL. The value is never named in the error.
func CheckVariable(field, name, value string) error {
	if !secret.ValidName(name) {
		return fmt.Errorf("%w: %s: %q is not a valid variable name (a letter or '_', then letters, digits or '_')", record.ErrInvalid, field, name)
	}
	if strings.IndexByte(value, 0) >= 0 {
		return fmt.Errorf("%w: %s.%s: the value holds a NUL byte", record.ErrInvalid, field, name)
	}
	return nil
}

// Environment returns what may be shown of a repository's environment.
func (g *Registry) Environment(ctx context.Context, repo string) (EnvironmentView, error) {
	e, err := g.environment(ctx, repo)
	if err != nil {
		return EnvironmentView{}, err
	}
	v := EnvironmentView{Repo: repo, Env: e.Env, Secrets: slices.Sorted(maps.Keys(e.Secrets)), Config: e.Config}
	if v.Env == nil {
		v.Env = map[string]string{}
	}
	if v.Secrets == nil {
		v.Secrets = []string{}
	}
	return v, nil
}

func (g *Registry) environment(ctx context.Context, repo string) (Environment, error) {
	e, gen, ok := g.settings.envs.get(repo)
	if ok {
		return e, nil
	}
	at := time.Now()
	e, err := g.storedEnvironment(ctx, repo)
	if err != nil {
		return Environment{}, err
	}
	g.settings.envs.put(repo, gen, e, at)
	return e, nil
}

// storedEnvironment is repo's environment as the store has it now.
func (g *Registry) storedEnvironment(ctx context.Context, repo string) (Environment, error) {
	if _, err := g.Open(ctx, repo); err != nil {
		return Environment{}, err
	}
	e, err := g.store.GetRepoEnvironment(ctx, repo)
	if errors.Is(err, record.ErrNotFound) {
		return Environment{Repo: repo}, nil
	}
	return e, err
}

// SetEnvironment changes a repository's environment: bad names or values
// change nothing (record.ErrInvalid naming the field, ErrSecretTooLarge).
func (g *Registry) SetEnvironment(ctx context.Context, repo string, u EnvironmentUpdate) (EnvironmentView, error) {
	for n, v := range u.Env {
		if err := CheckVariable("env", n, v); err != nil {
			return EnvironmentView{}, err
		}
	}
	for n, v := range u.Secrets {
		if v == nil {
			if !secret.ValidName(n) {
				return EnvironmentView{}, CheckVariable("secrets", n, "")
			}
			continue
		}
		if err := CheckVariable("secrets", n, *v); err != nil {
			return EnvironmentView{}, err
		}
		if len(*v) > secret.MaxValueBytes {
			return EnvironmentView{}, fmt.Errorf("%w: secrets.%s: %d bytes, the limit is %d", ErrSecretTooLarge, n, len(*v), secret.MaxValueBytes)
		}
	}
	if u.File != nil {
		name := u.File.Name
		if name == "" {
			name = "environment.json"
		}
		c, err := environment.Parse(name, u.File.Content)
		if err != nil {
			return EnvironmentView{}, err
		}
		u.Config = c
	}
	if u.SetConfig {
		if err := environment.Check(u.Config); err != nil {
			return EnvironmentView{}, err
		}
	}
	if len(u.Secrets) > 0 && g.box == nil {
		return EnvironmentView{}, fmt.Errorf("%w: secrets: this registry has no key to seal them with", record.ErrInvalid)
	}
	g.envMu.Lock() // one writer at a time: the merge of secrets reads, then writes
	defer g.envMu.Unlock()
	cur, err := g.storedEnvironment(ctx, repo)
	if err != nil {
		return EnvironmentView{}, err
	}
	next := Environment{Repo: repo, Env: maps.Clone(u.Env), Secrets: maps.Clone(cur.Secrets), Config: cur.Config}
	if u.SetConfig {
		next.Config = nil
		if !environment.Empty(u.Config) {
			c := u.Config
			next.Config = &c
		}
	}
	if next.Secrets == nil {
		next.Secrets = map[string][]byte{}
	}
	for n, v := range u.Secrets {
		if v == nil {
			delete(next.Secrets, n)
			continue
		}
		sealed, err := g.box.Seal(repo, n, *v)
		if err != nil {
			return EnvironmentView{}, fmt.Errorf("secrets.%s: seal: %w", n, err)
		}
		next.Secrets[n] = sealed
	}
	err = g.store.SetRepoEnvironment(ctx, next)
	g.settings.drop(repo)
	if err != nil {
		return EnvironmentView{}, err
	}
	g.varsMu.Lock()
	delete(g.vars, repo)
	g.varsMu.Unlock()
	return g.Environment(ctx, repo)
}

// Variables returns a repository's variables with its secrets opened, for
// commands and for the secret rule of writes. They are kept in memory
// until the environment changes.
func (g *Registry) Variables(ctx context.Context, repo string) (Variables, error) {
	g.varsMu.Lock()
	v, ok := g.vars[repo]
	g.varsMu.Unlock()
	if ok {
		return v, nil
	}
	e, err := g.environment(ctx, repo)
	if err != nil {
		return Variables{}, err
	}
	v = Variables{Env: e.Env, Secrets: make(map[string]string, len(e.Secrets))}
	for n, sealed := range e.Secrets {
		if g.box == nil {
			return Variables{}, fmt.Errorf("secrets of repository %q: no key to open them with", repo)
		}
		val, err := g.box.Open(repo, n, sealed)
		if err != nil {
			return Variables{}, err
		}
		v.Secrets[n] = val
	}
	v.Masker = secret.NewMasker(v.Secrets)
	g.varsMu.Lock()
	g.vars[repo] = v
	g.varsMu.Unlock()
	return v, nil
}

// EnvironmentConfig returns the environment configuration set through the
// API for repo; nil when none is.
func (g *Registry) EnvironmentConfig(ctx context.Context, repo string) (*environment.Config, error) {
	e, err := g.environment(ctx, repo)
	if err != nil {
		return nil, err
	}
	return e.Config, nil
}
