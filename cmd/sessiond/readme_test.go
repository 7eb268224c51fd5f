package main

import (
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeRow is one row of a README flag table.
type readmeRow struct{ variable, def string }

// readmeFlagTables reads the README's flag tables, each headed
// "| `CMD` flag | variable | default |": command → flag name → row.
func readmeFlagTables(t *testing.T) map[string]map[string]readmeRow {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	header := regexp.MustCompile("^\\| `([a-z]+)` flag \\| variable \\| default \\|$")
	flag := regexp.MustCompile("^`--([a-z0-9-]+)")
	tables := map[string]map[string]readmeRow{}
	var cur map[string]readmeRow
	for _, line := range strings.Split(string(data), "\n") {
		if m := header.FindStringSubmatch(line); m != nil {
			cur = map[string]readmeRow{}
			tables[m[1]] = cur
			continue
		}
		if cur == nil || strings.HasPrefix(line, "| ---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			cur = nil
			continue
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|"), "|")
		require.Len(t, cells, 3, "README flag row %q", line)
		m := flag.FindStringSubmatch(strings.TrimSpace(cells[0]))
		require.NotNil(t, m, "README flag row %q names no flag", line)
		cur[m[1]] = readmeRow{variable: strings.TrimSpace(cells[1]), def: strings.TrimSpace(cells[2])}
	}
	return tables
}

// TestREADMEFlagTables: the README's serve and mcp tables list every flag
// the command's help shows, each with its variable and its default, and
// no flag the command does not have.
func TestREADMEFlagTables(t *testing.T) {
	tables := readmeFlagTables(t)
	var root cliRoot
	parser, err := newParser(&root, io.Discard, io.Discard)
	require.NoError(t, err)
	for _, name := range []string{"serve", "mcp"} {
		t.Run(name, func(t *testing.T) {
			rows := tables[name]
			require.NotEmpty(t, rows, "README has no table headed | `%s` flag | variable | default |", name)
			i := slices.IndexFunc(parser.Model.Children, func(n *kong.Node) bool { return n.Name == name })
			require.GreaterOrEqual(t, i, 0)
			flags := slices.Clone(parser.Model.Children[i].Flags)
			for _, f := range parser.Model.Flags { // the root's, where the command reads them
				if f.Name != "help" && !slices.Contains(daemonHelpHides[name], f.Name) {
					flags = append(flags, f)
				}
			}
			for _, f := range flags {
				if f.Hidden {
					continue
				}
				row, ok := rows[f.Name]
				if !assert.True(t, ok, "README's %s table lacks --%s", name, f.Name) {
					continue
				}
				delete(rows, f.Name)
				if len(f.Envs) > 0 {
					assert.True(t, strings.HasPrefix(row.variable, "`"+f.Envs[0]+"`"), "--%s: README says variable %q, the flag reads %s", f.Name, row.variable, f.Envs[0])
				} else {
					assert.Empty(t, row.variable, "--%s reads no variable", f.Name)
				}
				if f.HasDefault && f.Default != "" && !f.IsBool() {
					assert.True(t, strings.HasPrefix(row.def, "`"+f.Default+"`"), "--%s: README says default %q, the flag's is %s", f.Name, row.def, f.Default)
				}
			}
			assert.Empty(t, rows, "README's %s table lists flags %s does not have", name, name)
		})
	}
}
