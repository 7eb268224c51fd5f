package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// NewHTTPHandler serves MCP over streamable HTTP. It sits behind the API's
// auth, which has already checked the bearer token against the route:
// /mcp/sessions/{id} binds the server to that session, /mcp leaves it
// unbound (every tool takes `session`). backend gives the engine that acts
// with a request's token, so every tool call is authorized again by the
// API exactly as an HTTP request with that token would be.
//
// An MCP session belongs to the token that started it: a request carrying
// another token (another session's, or none) cannot use its
// Mcp-Session-Id.
func NewHTTPHandler(backend func(token string) Backend, opts Options) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		o := opts
		o.Session = r.PathValue("id")
		return New(backend(bearer(r)), o)
	}, &mcp.StreamableHTTPOptions{
		// The API's body limit already applies.
		MaxRequestBodyBytes: -1,
		Logger:              opts.Logger,
	})
	// The SDK ties an MCP session to the user id of the token that
	// started it; the id here is the token's hash.
	owned := auth.RequireBearerToken(func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		sum := sha256.Sum256([]byte(token))
		return &auth.TokenInfo{UserID: hex.EncodeToString(sum[:]), Expiration: time.Now().Add(time.Hour)}, nil
	}, nil)(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if bearer(r) == "" { // auth is off: there is no owner to tell apart
			h.ServeHTTP(w, r)
			return
		}
		owned.ServeHTTP(w, r)
	})
}

func bearer(r *http.Request) string {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return strings.TrimSpace(tok)
}
