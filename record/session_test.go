package record

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestAgentIdentity: an agent given as an id, a name, both or neither is
// one identity, shown and signed the same way.
func TestAgentIdentity(t *testing.T) {
	when := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		id, name                     string
		wantID, wantName, label, sig string
	}{
		{"", "chi", "chi", "chi", "chi", "chi <chi@sessiond>"},
		{"bot-7", "", "bot-7", "bot-7", "bot-7", "bot-7 <bot-7@sessiond>"},
		{"bot-8", "Chi Bot", "bot-8", "Chi Bot", "Chi Bot (bot-8)", "Chi Bot <bot-8@sessiond>"},
		{"", "Chi Bot", "Chi Bot", "Chi Bot", "Chi Bot", "Chi Bot <Chi.Bot@sessiond>"},
		{"  ", "", UnnamedAgent, UnnamedAgent, UnnamedAgent, "agent <agent@sessiond>"},
	} {
		id, name := AgentIdentity(tc.id, tc.name)
		assert.Equal(t, tc.wantID, id, "%q %q", tc.id, tc.name)
		assert.Equal(t, tc.wantName, name, "%q %q", tc.id, tc.name)
		assert.Equal(t, tc.label, AgentLabel(tc.id, tc.name))
		s := SessionInfo{AgentID: tc.id, AgentName: tc.name}
		assert.Equal(t, tc.wantID, s.Agent())
		sig := s.Author(when)
		assert.Equal(t, tc.sig, sig.Name+" <"+sig.Email+">")
	}
}
