package session_test

import (
	"sort"
	"strings"
)

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

func slicesSort(s []string) { sort.Strings(s) }
