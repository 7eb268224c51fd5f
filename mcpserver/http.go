package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiond/sessiond/apitypes"
)

// boundHeader carries the session of /mcp/sessions/{id} from the route to
// the tool calls; the handler sets it on every request, over anything a
// client sent.
const boundHeader = "X-Sessiond-Mcp-Session"

// NewHTTPHandler serves MCP over streamable HTTP. It sits behind the API's
// auth, which has already checked the bearer token against the route:
// /mcp/sessions/{id} binds the tools to that session, /mcp leaves them
// unbound (every tool takes `session`). backend gives the engine that acts
// with a request's token, so every tool call is authorized again by the
// API exactly as an HTTP request with that token would be.
//
// Two servers serve every request (bound and unbound), built once: the
// token and the bound session come with each request, so a client of the
// sessionless protocol revision costs no server construction per call.
// An MCP session of the older, stateful revisions belongs to the token
// that started it: a request with another token cannot use its
// Mcp-Session-Id.
func NewHTTPHandler(backend func(token string) Backend, opts Options) http.Handler {
	per := func(req *mcp.CallToolRequest) (Backend, string) {
		var h http.Header
		if req.Extra != nil {
			h = req.Extra.Header
		}
		return backend(bearerOf(h)), h.Get(boundHeader)
	}
	unboundOpts := opts
	unboundOpts.Session = ""
	bound := newServer(&server{per: per, boundPer: true}, unboundOpts)
	unbound := newServer(&server{per: per}, unboundOpts)
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if r.PathValue("id") != "" {
			return bound
		}
		return unbound
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
		r.Header.Del(boundHeader)
		if id := r.PathValue("id"); id != "" {
			r.Header.Set(boundHeader, id)
		}
		if bearerOf(r.Header) == "" { // auth is off: there is no owner to tell apart
			h.ServeHTTP(w, r)
			return
		}
		owned.ServeHTTP(w, r)
	})
}

// bearerOf is the request's bearer token, read as the API reads it.
func bearerOf(h http.Header) string {
	tok, _ := apitypes.BearerToken(h.Get("Authorization"))
	return tok
}
