package environment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"go.yaml.in/yaml/v3"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/record"
	"github.com/sessiond/sessiond/secret"
)

// Config is a repository's environment configuration, as the API takes
// it and as .sessiond/environment.json (or .yaml) holds it.
type Config = apitypes.EnvironmentConfig

// Step is one setup command (Args is its argv).
type Step = apitypes.EnvironmentStep

// Include is one file every view has.
type Include = apitypes.EnvironmentInclude

// DefaultKey are the lock files of the ecosystems sessiond knows, the key
// of a configuration that names none.
var DefaultKey = []string{
	"go.sum", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb",
	"Cargo.lock", "requirements*.txt", "poetry.lock", "uv.lock", "Gemfile.lock", "composer.lock",
}

// Files are the paths at a base commit a configuration is read from when
// the repository has none set through the API, in this order.
var Files = []string{".sessiond/environment.json", ".sessiond/environment.yaml", ".sessiond/environment.yml"}

// MaxTimeout bounds a setup step's timeout_seconds.
const MaxTimeout = 2 * time.Hour

// DefaultTimeout is a setup step's timeout when it names none.
const DefaultTimeout = 30 * time.Minute

// Enabled says whether c's Auto is on (nil is true).
func Enabled(c Config) bool { return c.Auto == nil || *c.Auto }

// Empty: c configures nothing.
func Empty(c Config) bool {
	return len(c.Setup) == 0 && len(c.Key) == 0 && len(c.Include) == 0 && c.Auto == nil
}

// Timeout is the step's timeout.
func Timeout(s Step) time.Duration {
	if s.TimeoutSeconds <= 0 {
		return DefaultTimeout
	}
	return time.Duration(s.TimeoutSeconds) * time.Second
}

// NetworkWanted says whether the step asks for the network (the default).
func NetworkWanted(s Step) bool { return s.Network == nil || *s.Network }

// Args is the step's argv.
func Args(s Step) []string {
	if s.Command != "" {
		return []string{"/bin/sh", "-c", s.Command}
	}
	return s.Argv
}

// Parse reads a configuration from data, JSON or (when name ends in .yaml
// or .yml) YAML, and checks it. Errors wrap record.ErrInvalid and name
// the file (name) with the line and column, or the field.
func Parse(name string, data []byte) (Config, error) {
	if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") {
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			return Config{}, fmt.Errorf("%w: %s: %v", record.ErrInvalid, name, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		if v == nil {
			v = map[string]any{}
		}
		j, err := json.Marshal(v)
		if err != nil {
			return Config{}, fmt.Errorf("%w: %s: %v", record.ErrInvalid, name, err)
		}
		c, err := decodeJSON(j)
		if err != nil {
			return Config{}, fmt.Errorf("%w: %s: %s", record.ErrInvalid, name, jsonProblem(nil, err))
		}
		return c, prefixed(name, Check(c))
	}
	c, err := decodeJSON(data)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %s: %s", record.ErrInvalid, name, jsonProblem(data, err))
	}
	return c, prefixed(name, Check(c))
}

func prefixed(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %s: %s", record.ErrInvalid, name, strings.TrimPrefix(err.Error(), record.ErrInvalid.Error()+": "))
}

func decodeJSON(data []byte) (Config, error) {
	var c Config
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return Config{}, err
	}
	if d.More() {
		return Config{}, &json.SyntaxError{Offset: d.InputOffset()}
	}
	return c, nil
}

// jsonProblem says what is wrong with a JSON document, at which line and
// column of data when it knows (data nil: by field only).
func jsonProblem(data []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		if se.Error() == "" {
			return fmt.Sprintf("%s: unexpected content after the document", position(data, se.Offset))
		}
		return fmt.Sprintf("%s: %s", position(data, se.Offset), se.Error())
	case errors.As(err, &te):
		msg := fmt.Sprintf("%s: want %s, not a JSON %s", te.Field, te.Type, te.Value)
		if data != nil {
			msg = position(data, te.Offset) + ": " + msg
		}
		return msg
	case errors.Is(err, io.EOF):
		return "an empty document"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// position is "line L, column C" of byte offset off of data.
func position(data []byte, off int64) string {
	if data == nil {
		return fmt.Sprintf("offset %d", off)
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := 1, 1
	for _, b := range data[:off] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("line %d, column %d", line, col)
}

// Check validates a configuration; the error wraps record.ErrInvalid and
// names the field (setup[1].argv, key[0], include[2].secret).
func Check(c Config) error {
	for i, s := range c.Setup {
		f := fmt.Sprintf("setup[%d]", i)
		switch {
		case s.Command != "" && len(s.Argv) > 0:
			return fmt.Errorf("%w: %s: give argv or command, not both", record.ErrInvalid, f)
		case s.Command == "" && len(s.Argv) == 0:
			return fmt.Errorf("%w: %s: an empty command (give argv, an array of strings, or command, shell text)", record.ErrInvalid, f)
		case len(s.Argv) > 0 && s.Argv[0] == "":
			return fmt.Errorf("%w: %s.argv[0]: an empty program name", record.ErrInvalid, f)
		case s.TimeoutSeconds < 0 || time.Duration(s.TimeoutSeconds)*time.Second > MaxTimeout:
			return fmt.Errorf("%w: %s.timeout_seconds: %d is not between 0 and %d", record.ErrInvalid, f, s.TimeoutSeconds, int(MaxTimeout.Seconds()))
		}
		for j, a := range Args(s) {
			if strings.IndexByte(a, 0) >= 0 {
				return fmt.Errorf("%w: %s.argv[%d]: holds a NUL byte", record.ErrInvalid, f, j)
			}
		}
		for k, v := range s.Env {
			if !secret.ValidName(k) {
				return fmt.Errorf("%w: %s.env: %q is not a valid variable name", record.ErrInvalid, f, k)
			}
			if strings.IndexByte(v, 0) >= 0 {
				return fmt.Errorf("%w: %s.env.%s: the value holds a NUL byte", record.ErrInvalid, f, k)
			}
		}
	}
	for i, k := range c.Key {
		if err := checkGlob(k); err != nil {
			return fmt.Errorf("%w: key[%d]: %v", record.ErrInvalid, i, err)
		}
	}
	seen := map[string]bool{}
	for i, in := range c.Include {
		f := fmt.Sprintf("include[%d]", i)
		if err := checkIncludePath(in.Path); err != nil {
			return fmt.Errorf("%w: %s.path: %v", record.ErrInvalid, f, err)
		}
		if seen[in.Path] {
			return fmt.Errorf("%w: %s.path: %q is included twice", record.ErrInvalid, f, in.Path)
		}
		seen[in.Path] = true
		switch {
		case in.Content != nil && in.Secret != "":
			return fmt.Errorf("%w: %s: give content or secret, not both", record.ErrInvalid, f)
		case in.Content == nil && in.Secret == "":
			return fmt.Errorf("%w: %s: give content or secret", record.ErrInvalid, f)
		case in.Secret != "" && !secret.ValidName(in.Secret):
			return fmt.Errorf("%w: %s.secret: %q is not a valid variable name", record.ErrInvalid, f, in.Secret)
		}
	}
	return nil
}

func checkGlob(p string) error {
	switch {
	case p == "":
		return errors.New("an empty glob")
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("glob %q: patterns are relative to the repository root, without a leading /", p)
	case !doublestar.ValidatePattern(p):
		return fmt.Errorf("glob %q does not compile: an unclosed '[' or '{', an empty class, or a trailing '\\'", p)
	}
	return nil
}

func checkIncludePath(p string) error {
	switch {
	case p == "":
		return errors.New("empty")
	case strings.HasPrefix(p, "/"), path.Clean(p) != p, p == "." || p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("%q: want a clean path relative to the repository root", p)
	case strings.IndexByte(p, 0) >= 0 || strings.Contains(p, "\\"):
		return fmt.Errorf("%q: holds a NUL byte or a backslash", p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".git" {
			return fmt.Errorf("%q: a .git component", p)
		}
	}
	return nil
}
