package environment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/sessiond/sessiond/gitstore"
	"github.com/sessiond/sessiond/record"
)

// Tree is what resolving a configuration reads of a repository.
type Tree interface {
	List(ctx context.Context, root gitstore.OID, prefix string, recursive bool, fn func(gitstore.Entry) error) error
	Lookup(ctx context.Context, root gitstore.OID, p string) (gitstore.Entry, error)
	ReadBlob(ctx context.Context, id gitstore.OID) ([]byte, error)
}

// Sources of a Plan.
const (
	SourceAPI  = "api"  // PUT /v1/repos/{repo}/environment
	SourceFile = "file" // .sessiond/environment.json|yaml at the base
	SourceAuto = "auto" // derived from the key files
	SourceNone = ""     // nothing to build
)

// Plan is a configuration resolved against a base tree: what to build and
// the Key that names the result.
type Plan struct {
	// Source says where the steps came from; SourceNone: no layer.
	Source string
	// File names the configuration file at the base (SourceFile).
	File    string
	Steps   []Step
	Include []Include
	// KeyGlobs are the globs that decide the layer; KeyFiles the files
	// they matched at the base, path → blob id.
	KeyGlobs []string
	KeyFiles map[string]gitstore.OID
	// Key is the layer's identity: a hash of the steps, the includes, the
	// globs and the key files' blob ids.
	Key string
	// Problem is why a configuration at the base could not be used (it
	// does not parse): commands run without a layer and say so.
	Problem string
}

// Empty: nothing to build.
func (p Plan) Empty() bool { return p.Source == SourceNone }

// ReadFile returns the configuration file at tree, if any: its name and
// content; "" when there is none.
func ReadFile(ctx context.Context, t Tree, tree gitstore.OID) (string, []byte, error) {
	for _, f := range Files {
		e, err := t.Lookup(ctx, tree, f)
		if errors.Is(err, gitstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		if !e.Mode.IsBlob() {
			continue
		}
		b, err := t.ReadBlob(ctx, e.OID)
		if err != nil {
			return "", nil, err
		}
		return f, b, nil
	}
	return "", nil, nil
}

// Resolve resolves the repository's configuration against the base tree:
// api is the one set through the API (nil: none), in which case the
// file at the base is read instead. A file that does not parse gives a
// Plan with Problem set and nothing to build.
func Resolve(ctx context.Context, t Tree, tree gitstore.OID, api *Config) (Plan, error) {
	var cfg Config
	var p Plan
	switch {
	case api != nil:
		cfg, p.Source = *api, SourceAPI
	default:
		name, data, err := ReadFile(ctx, t, tree)
		if err != nil {
			return Plan{}, err
		}
		if name != "" {
			c, err := Parse(name, data)
			if err != nil {
				return Plan{Problem: strings.TrimPrefix(err.Error(), record.ErrInvalid.Error()+": ")}, nil
			}
			cfg, p.Source, p.File = c, SourceFile, name
		}
	}
	p.KeyGlobs = cfg.Key
	if len(p.KeyGlobs) == 0 {
		p.KeyGlobs = DefaultKey
	}
	files, err := keyFiles(ctx, t, tree, p.KeyGlobs)
	if err != nil {
		return Plan{}, err
	}
	p.KeyFiles = files
	p.Steps, p.Include = cfg.Setup, cfg.Include
	if len(p.Steps) == 0 && Enabled(cfg) {
		if auto := AutoSetup(files); len(auto) > 0 {
			p.Steps = auto
			if p.Source == SourceNone {
				p.Source = SourceAuto
			}
		}
	}
	if len(p.Steps) == 0 && len(p.Include) == 0 {
		return Plan{KeyGlobs: p.KeyGlobs, KeyFiles: files}, nil
	}
	if p.Source == SourceNone {
		p.Source = SourceAuto
	}
	p.Key = key(p)
	return p, nil
}

// key hashes exactly the inputs of a build.
func key(p Plan) string {
	type input struct {
		Steps    []Step                  `json:"steps"`
		Include  []Include               `json:"include"`
		KeyGlobs []string                `json:"key"`
		KeyFiles map[string]gitstore.OID `json:"files"`
	}
	b, _ := json.Marshal(input{Steps: p.Steps, Include: p.Include, KeyGlobs: p.KeyGlobs, KeyFiles: p.KeyFiles})
	sum := sha256.Sum256(append([]byte("sessiond environment v1\n"), b...))
	return hex.EncodeToString(sum[:16])
}

// keyFiles lists the blobs of tree that globs match, path → blob id. Each
// glob is looked for below its literal directory only: a root-level name
// costs one directory's listing, however large the tree.
func keyFiles(ctx context.Context, t Tree, tree gitstore.OID, globs []string) (map[string]gitstore.OID, error) {
	out := map[string]gitstore.OID{}
	listed := map[string]bool{}
	for _, g := range globs {
		base, rest := doublestar.SplitPattern(g)
		if base == "." {
			base = ""
		}
		recursive := strings.Contains(rest, "/") || strings.Contains(rest, "**")
		k := fmt.Sprintf("%s\x00%v\x00%s", base, recursive, g)
		if listed[k] {
			continue
		}
		listed[k] = true
		err := t.List(ctx, tree, base, recursive, func(e gitstore.Entry) error {
			if !e.Mode.IsBlob() {
				return nil
			}
			if ok, _ := doublestar.Match(g, e.Path); ok {
				out[e.Path] = e.OID
			}
			return nil
		})
		if errors.Is(err, gitstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Stale reports whether a session whose changed paths are changed has
// touched a key file of p (its exec results then say environment_stale).
func (p Plan) Stale(changed []string) bool {
	for _, c := range changed {
		if _, ok := p.KeyFiles[c]; ok {
			return true
		}
		for _, g := range p.KeyGlobs {
			if ok, _ := doublestar.Match(g, c); ok {
				return true
			}
		}
	}
	return false
}

// auto is one ecosystem sessiond knows: its lock file and the command
// that installs what it locks.
type auto struct {
	file string
	step Step
}

var autos = []auto{
	{"go.sum", Step{Argv: []string{"go", "mod", "download"}}},
	{"package-lock.json", Step{Argv: []string{"npm", "ci"}}},
	{"npm-shrinkwrap.json", Step{Argv: []string{"npm", "ci"}}},
	{"pnpm-lock.yaml", Step{Argv: []string{"pnpm", "install", "--frozen-lockfile"}}},
	{"yarn.lock", Step{Argv: []string{"yarn", "install", "--immutable"}}},
	{"requirements.txt", Step{Command: "python3 -m venv .venv && .venv/bin/pip install -r requirements.txt"}},
	{"uv.lock", Step{Argv: []string{"uv", "sync", "--frozen"}}},
	{"Cargo.lock", Step{Argv: []string{"cargo", "fetch"}}},
}

// AutoSetup is the setup derived from the key files at the repository's
// root, for the ecosystems sessiond knows, in a fixed order.
func AutoSetup(files map[string]gitstore.OID) []Step {
	var out []Step
	for _, a := range autos {
		if _, ok := files[a.file]; !ok {
			continue
		}
		if slices.ContainsFunc(out, func(s Step) bool { return slices.Equal(Args(s), Args(a.step)) }) {
			continue
		}
		out = append(out, a.step)
	}
	return out
}

// Describe is a step as a shell reads it, for logs.
func Describe(s Step) string {
	if s.Command != "" {
		return s.Command
	}
	q := make([]string, len(s.Argv))
	for i, a := range s.Argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r == '-' || r == '_' || r == '.' || r == '/' || r == '=' || r == ':' || r == '@' || r == ',' || r == '+' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'))
		}) < 0 {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}
