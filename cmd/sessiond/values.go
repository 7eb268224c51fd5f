package main

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sessiond/sessiond/client"
)

// The value types of flags and environment variables that a plain int or
// string would get wrong. Each parses in UnmarshalText, so that kong
// reports a bad value with the flag or the variable it came from.

// byteSize is a number of bytes: a plain number, or one with a unit —
// B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of
// 1024); K, M, G, T alone are the binary ones, as in 128M. Case is
// ignored, a space before the unit allowed.
type byteSize int64

var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

func parseByteSize(text string) (int64, error) {
	s := strings.TrimSpace(text)
	i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsDigit(r) })
	if i < 0 {
		i = len(s)
	}
	if i == 0 {
		return 0, fmt.Errorf("size %q: want a number of bytes, optionally with a unit such as KB, MiB or G", text)
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: too large", text)
	}
	unit, ok := sizeUnits[strings.ToLower(strings.TrimSpace(s[i:]))]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", text, strings.TrimSpace(s[i:]))
	}
	if n > math.MaxInt64/unit {
		return 0, fmt.Errorf("size %q: too large", text)
	}
	return n * unit, nil
}

func (b *byteSize) UnmarshalText(text []byte) error {
	n, err := parseByteSize(string(text))
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

// seconds is a duration given as a whole number of seconds (10) or as a
// Go duration (10m, 1h30m).
type seconds time.Duration

func parseSeconds(text string) (time.Duration, error) {
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		if n < 0 || n > math.MaxInt64/int64(time.Second) {
			return 0, fmt.Errorf("duration %q: out of range", text)
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("duration %q: want seconds (10) or a duration (10m, 1h30m)", text)
	}
	return d, nil
}

func (s *seconds) UnmarshalText(text []byte) error {
	d, err := parseSeconds(string(text))
	if err != nil {
		return err
	}
	*s = seconds(d)
	return nil
}

// fileMode is a mode a client may write, in git's spelling: 100644,
// 100755 or 120000; 644, 755 and 0755 are accepted for the two file
// modes, and "symlink" for 120000.
type fileMode string

func parseFileMode(text string) (string, error) {
	switch strings.TrimLeft(strings.TrimSpace(text), "0") {
	case "644", "100644":
		return "100644", nil
	case "755", "100755":
		return "100755", nil
	case "120000", "symlink":
		return "120000", nil
	}
	return "", fmt.Errorf("mode %q: use 644, 755 (or 100644, 100755) or 120000 for a symlink", text)
}

func (m *fileMode) UnmarshalText(text []byte) error {
	s, err := parseFileMode(string(text))
	if err != nil {
		return err
	}
	*m = fileMode(s)
	return nil
}

// checkServer accepts the daemon's URL: http:// or https:// with a host
// ("" is the client's default).
func checkServer(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--server (SESSIOND_SERVER) %q: want the daemon's http:// or https:// URL, such as %s", s, client.DefaultServer)
	}
	return nil
}

// count is n of noun for a person: "1 file", "2 files", "0 files" (the
// nouns the command line counts take an s).
func count[N int | int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
