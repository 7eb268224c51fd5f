package api

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/record"
)

// Tokens. The admin token manages repositories and sessions. A session
// token reaches only its own session's routes; it is derived, not stored:
// "sst." + session id + "." + base64url(HMAC-SHA256(secret, session id)),
// so it survives restarts as long as the secret does, and the server keeps
// no table of tokens to lose or leak.

const sessionTokenPrefix = "sst."

// scope says who may call a route.
type scope int

const (
	scopePublic  scope = iota // no token needed (health, metrics)
	scopeAdmin                // the admin token only
	scopeSession              // the admin token or the token of the session in {id}
)

// principal is who a request authenticated as.
type principal struct {
	admin   bool
	session uuid.UUID // for a session token
}

type auth struct {
	adminHash [sha256.Size]byte
	enabled   bool
	secret    []byte
}

func newAuth(adminToken string, secret []byte) *auth {
	a := &auth{secret: secret}
	if adminToken != "" {
		a.enabled = true
		a.adminHash = sha256.Sum256([]byte(adminToken))
	}
	return a
}

// sessionToken is the token of session id.
func (a *auth) sessionToken(id uuid.UUID) string {
	mac := hmac.New(sha256.New, a.secret)
	mac.Write([]byte(id.String()))
	return sessionTokenPrefix + id.String() + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// authenticate checks the request's bearer token. With auth off every
// request is admin.
func (a *auth) authenticate(r *http.Request) (principal, *apitypes.Error) {
	if !a.enabled {
		return principal{admin: true}, nil
	}
	tok, ok := apitypes.BearerToken(r.Header.Get("Authorization"))
	if !ok {
		return principal{}, newError(http.StatusUnauthorized, apitypes.CodeUnauthorized, "a bearer token is required")
	}
	if p, ok := a.principalOf(tok); ok {
		return p, nil
	}
	return principal{}, newError(http.StatusUnauthorized, apitypes.CodeUnauthorized, "invalid token")
}

// principalOf is who token stands for: the admin, a session, or nobody.
func (a *auth) principalOf(tok string) (principal, bool) {
	if sum := sha256.Sum256([]byte(tok)); subtle.ConstantTimeCompare(sum[:], a.adminHash[:]) == 1 {
		return principal{admin: true}, true
	}
	if rest, ok := strings.CutPrefix(tok, sessionTokenPrefix); ok {
		idText, _, _ := strings.Cut(rest, ".")
		if id, err := uuid.Parse(idText); err == nil && len(a.secret) > 0 &&
			subtle.ConstantTimeCompare([]byte(a.sessionToken(id)), []byte(tok)) == 1 {
			return principal{session: id}, true
		}
	}
	return principal{}, false
}

// authorizeFrom checks that the request may read session from as well as
// its route's own: the admin may, and so may a request whose
// FromTokenHeader is from's token (or the admin token).
func (a *auth) authorizeFrom(r *http.Request, from uuid.UUID) *apitypes.Error {
	if p := principalFrom(r.Context()); p.admin {
		return nil
	}
	tok := strings.TrimSpace(r.Header.Get(apitypes.FromTokenHeader))
	if tok == "" {
		return newError(http.StatusForbidden, apitypes.CodeForbidden,
			"this token reaches only its own session; to read session %s as well, send its token in %s", from, apitypes.FromTokenHeader)
	}
	p, ok := a.principalOf(tok)
	if !ok {
		return newError(http.StatusUnauthorized, apitypes.CodeUnauthorized, "invalid token in %s", apitypes.FromTokenHeader)
	}
	if !p.admin && p.session != from {
		return newError(http.StatusForbidden, apitypes.CodeForbidden, "the token in %s is for another session than %s", apitypes.FromTokenHeader, from)
	}
	return nil
}

type principalKey struct{}

// withPrincipal records p in ctx, and for anyone but the admin the reach
// the engines resolve revisions within (record.Reach): a session token's
// revisions name only its own session's refs, the repository's branches
// and tags, and what they reach.
func withPrincipal(ctx context.Context, p principal) context.Context {
	if !p.admin {
		ctx = record.WithReach(ctx, record.Reach{Session: p.session})
	}
	return context.WithValue(ctx, principalKey{}, p)
}

// principalFrom is who the request authenticated as; the admin when auth
// is off (handlerFor stores it on every authenticated route).
func principalFrom(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p
}

// authorize checks that p may call a route of scope sc; sessionID is the
// route's {id}, if any.
func (p principal) authorize(sc scope, sessionID string) *apitypes.Error {
	switch {
	case sc == scopePublic || p.admin:
		return nil
	case sc == scopeSession && sessionID == p.session.String():
		return nil
	case sc == scopeSession:
		return newError(http.StatusForbidden, apitypes.CodeForbidden, "this token is for another session")
	}
	return newError(http.StatusForbidden, apitypes.CodeForbidden, "a session token cannot call this route")
}
