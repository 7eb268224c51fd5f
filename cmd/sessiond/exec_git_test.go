package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sessiond/sessiond/apitypes"
)

// The exec summary names the checkpoints a command's git commits became,
// and why commits did not.
func TestExecSummaryGitCheckpoints(t *testing.T) {
	var b bytes.Buffer
	printExecSummary(&b, apitypes.ExecResponse{Isolated: true, Recorded: true,
		Checkpoints: []apitypes.Checkpoint{{N: 3, Commit: "5e1f0c2a9b7d5e1f0c2a9b7d5e1f0c2a9b7d0000", Label: "fix the rounding"}},
		GitNote:     "HEAD moved to x, which does not descend from y"})
	assert.Contains(t, b.String(), "sessiond: commit became checkpoint 3 (5e1f0c2a9b7d): fix the rounding\n")
	assert.Contains(t, b.String(), "sessiond: git: HEAD moved to x")
}
