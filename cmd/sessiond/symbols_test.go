package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sessiond/sessiond/apitypes"
)

func TestPrintChangesetSymbols(t *testing.T) {
	var b bytes.Buffer
	printChangeset(&b, apitypes.Changeset{ID: "c1", Symbols: []apitypes.FileSymbols{
		{Path: "scan.go", Status: "modified", Lang: "go",
			Added:    []apitypes.SymbolKey{{Kind: "type", Name: "Limits"}},
			Modified: []apitypes.SymbolKey{{Kind: "func", Name: "Parse"}},
			Removed:  []apitypes.SymbolKey{{Kind: "method", Receiver: "Scanner", Name: "Close"}},
		},
		{Path: "bad.go", Status: "added", Lang: "go", ParseError: "1:1: expected 'package'"},
	}})
	assert.Contains(t, b.String(), "  scan.go (modified)\n    added type Limits\n    modified func Parse\n    removed method (Scanner).Close\n")
	assert.Contains(t, b.String(), "  bad.go (added)\n    not parsed: 1:1: expected 'package'\n")
}
