package session_test

import "strings"

func splitZ(b []byte) []string {
	var out []string
	for _, s := range strings.Split(string(b), "\x00") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func cut(s, sep string) (string, string, bool) { return strings.Cut(s, sep) }
func fields(s string) []string                 { return strings.Fields(s) }
