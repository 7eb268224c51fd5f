package gitstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	format "github.com/go-git/go-git/v5/plumbing/format/config"
)

// Config is a repository's own configuration file ($GIT_DIR/config) as
// it was when read: section and key names compare without regard to
// case, subsection names exactly, and the last value of a key wins, as in
// git. Includes are not followed, and the system and global files are not
// read (they belong to a user, not the repository). A Config is
// read-only and safe for concurrent use.
type Config struct {
	c *format.Config
}

// ReadConfig reads the configuration of the repository whose git
// directory is gitDir; a repository without the file has an empty one.
func ReadConfig(gitDir string) (*Config, error) {
	c := format.New()
	data, err := os.ReadFile(filepath.Join(gitDir, "config"))
	if errors.Is(err, os.ErrNotExist) {
		return &Config{c: c}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := format.NewDecoder(bytes.NewReader(data)).Decode(c); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(gitDir, "config"), err)
	}
	return &Config{c: c}, nil
}

// Get returns the value of section.subsection.key ("" subsection for
// section.key) and whether it is set.
func (c *Config) Get(section, subsection, key string) (string, bool) {
	if c == nil || !c.c.HasSection(section) {
		return "", false
	}
	s := c.c.Section(section)
	opts := s.Options
	if subsection != "" {
		if !s.HasSubsection(subsection) {
			return "", false
		}
		opts = s.Subsection(subsection).Options
	}
	if !opts.Has(key) {
		return "", false
	}
	return opts.Get(key), true
}

// Last returns whichever of keys was set last in section.subsection, with
// its value: for settings where two keys set one thing and the later line
// wins (diff.<driver>.funcname and xfuncname).
func (c *Config) Last(section, subsection string, keys ...string) (key, value string, ok bool) {
	if c == nil || !c.c.HasSection(section) {
		return "", "", false
	}
	s := c.c.Section(section)
	opts := s.Options
	if subsection != "" {
		if !s.HasSubsection(subsection) {
			return "", "", false
		}
		opts = s.Subsection(subsection).Options
	}
	for i := len(opts) - 1; i >= 0; i-- {
		for _, k := range keys {
			if opts[i].IsKey(k) {
				return k, opts[i].Value, true
			}
		}
	}
	return "", "", false
}

// Bool returns a boolean setting as git reads one (true, yes, on, 1 or a
// key without a value; false, no, off or 0), or def when it is not set or
// not a boolean.
func (c *Config) Bool(section, subsection, key string, def bool) bool {
	v, ok := c.Get(section, subsection, key)
	if !ok {
		return def
	}
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1", "":
		return true
	case "false", "no", "off", "0":
		return false
	}
	return def
}
