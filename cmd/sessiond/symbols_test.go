package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sessiond/sessiond/api"
	"github.com/sessiond/sessiond/graph"
)

func TestPrintChangesetSymbols(t *testing.T) {
	var b bytes.Buffer
	printChangeset(&b, api.Changeset{ID: "c1", Symbols: []graph.FileSummary{
		{Path: "scan.go", Status: "modified", Lang: "go", SymbolChanges: graph.SymbolChanges{
			Added:    []graph.Key{{Kind: graph.KindType, Name: "Limits"}},
			Modified: []graph.Key{{Kind: graph.KindFunc, Name: "Parse"}},
			Removed:  []graph.Key{{Kind: graph.KindMethod, Receiver: "Scanner", Name: "Close"}},
		}},
		{Path: "bad.go", Status: "added", Lang: "go", ParseError: "1:1: expected 'package'"},
	}})
	assert.Contains(t, b.String(), "  scan.go (modified)\n    added type Limits\n    modified func Parse\n    removed method (Scanner).Close\n")
	assert.Contains(t, b.String(), "  bad.go (added)\n    not parsed: 1:1: expected 'package'\n")
}
