package api_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/sessiond/sessiond/api"
)

// TestOpenAPIDescribesEveryRoute fails when a route exists that
// openapi.yaml does not describe, or the file describes one that does not
// exist.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "openapi.yaml"))
	require.NoError(t, err)
	var doc struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(data, &doc))
	documented := map[string]bool{}
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "head", "patch", "options":
				documented[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	served := map[string]bool{}
	for _, r := range api.Routes() {
		served[r.Method+" "+strings.ReplaceAll(r.Pattern, "...}", "}")] = true
	}
	var missing, stale []string
	for k := range served {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !served[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	assert.Empty(t, missing, "routes openapi.yaml does not describe")
	assert.Empty(t, stale, "openapi.yaml describes routes that do not exist")
}
