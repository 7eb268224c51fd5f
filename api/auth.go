package api

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/changeset"
	"github.com/sessiond/sessiond/record"
)

// Tokens. The admin token manages repositories and sessions. A session
// token reaches only its own session's routes; it is derived, not stored:
// "sst." + session id + "." + base64url(HMAC-SHA256(secret, session id)),
// so it survives restarts as long as the secret does, and the server keeps
// no table of tokens to lose or leak. A reviewer token names a person the
// admin issued it for (POST /v1/reviewers), and is derived the same way:
// "srt." + base64url(name) + "." + base64url(HMAC-SHA256(secret,
// "reviewer\x00" + name)); the prefix in the MAC keeps the two kinds apart.
// principalOf is the one check of every token; reviewerOf is the one place
// that turns a request's credentials into the identity a review is by.

//
// A port link (POST …/ports/{port}/link) opens one port of one session
// until it expires: "spl." + session id + "." + port + "." + expiry (Unix
// seconds) + "." + base64url(HMAC-SHA256(secret, "port-link\x00" + the
// three)). linkOf is its one check; it is never a bearer token.

const (
	sessionTokenPrefix  = "sst."
	reviewerTokenPrefix = "srt."
	linkTokenPrefix     = "spl."
)

// scope says who may call a route.
type scope int

const (
	scopePublic  scope = iota // no token needed (health, metrics)
	scopeAdmin                // the admin token only
	scopeSession              // the admin token or the token of the session in {id}
	scopeReader               // the admin token or a reviewer token: what a reviewer reads
	// scopeReview is scopeReader or any session token: the changeset
	// rules then hold a session to comments on its own changesets.
	scopeReview
)

// principal is who a request authenticated as.
type principal struct {
	admin    bool
	session  uuid.UUID // for a session token
	reviewer string    // for a reviewer token: the name it carries
}

type auth struct {
	adminHash [sha256.Size]byte
	enabled   bool
	secret    []byte
	localUser string // the one identity when auth is off
}

func newAuth(adminToken string, secret []byte, localUser string) *auth {
	a := &auth{secret: secret, localUser: localUser}
	if a.localUser == "" {
		a.localUser = "local user"
	}
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

// reviewerToken is the token of the reviewer called name.
func (a *auth) reviewerToken(name string) string {
	mac := hmac.New(sha256.New, a.secret)
	mac.Write([]byte("reviewer\x00" + name))
	return reviewerTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(name)) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// maxIdentityName bounds an identity's name, in bytes.
const maxIdentityName = 200

// CheckIdentityName is the rule for an identity's name (a reviewer
// token's, the local user's): text a person reads, on one line.
func CheckIdentityName(name string) error {
	if e := identityNameError(name); e != nil {
		return errors.New(e.Message)
	}
	return nil
}

func identityNameError(name string) *apitypes.Error {
	switch {
	case strings.TrimSpace(name) == "":
		return badRequest("name: empty")
	case name != strings.TrimSpace(name):
		return badRequest("name %q: leading or trailing space", name)
	case len(name) > maxIdentityName:
		return badRequest("name: %d bytes, at most %d", len(name), maxIdentityName)
	case !utf8.ValidString(name):
		return badRequest("name %q: not UTF-8", name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return badRequest("name %q: control characters", name)
	}
	return nil
}

// reviewerOf is who a review sent with p's credentials is by: the name a
// reviewer token carries; the local user when auth is off (the daemon
// has one identity); for a session token, that session; for the admin
// token, the name it asserts (asserted, "admin" when none), which the
// changeset rules count as a comment.
func (a *auth) reviewerOf(p principal, asserted string) changeset.Reviewer {
	switch {
	case !a.enabled:
		return changeset.Reviewer{Name: a.localUser, Kind: changeset.ReviewerLocal}
	case p.reviewer != "":
		return changeset.Reviewer{Name: p.reviewer, Kind: changeset.ReviewerToken}
	case p.session != uuid.Nil:
		return changeset.Reviewer{Kind: changeset.ReviewerSession, Session: p.session}
	}
	name := strings.TrimSpace(asserted)
	if name == "" {
		name = "admin"
	}
	return changeset.Reviewer{Name: name, Kind: changeset.ReviewerAsserted}
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
	if rest, ok := strings.CutPrefix(tok, reviewerTokenPrefix); ok {
		nameText, _, _ := strings.Cut(rest, ".")
		if name, err := base64.RawURLEncoding.DecodeString(nameText); err == nil && len(a.secret) > 0 && identityNameError(string(name)) == nil &&
			subtle.ConstantTimeCompare([]byte(a.reviewerToken(string(name))), []byte(tok)) == 1 {
			return principal{reviewer: string(name)}, true
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
	isSession := p.session != uuid.Nil
	switch {
	case sc == scopePublic || p.admin:
		return nil
	case sc == scopeSession && isSession && sessionID == p.session.String():
		return nil
	case sc == scopeSession && isSession:
		return newError(http.StatusForbidden, apitypes.CodeForbidden, "this token is for another session")
	case (sc == scopeReader || sc == scopeReview) && p.reviewer != "":
		return nil
	case sc == scopeReview && isSession:
		return nil // the changeset rules: comments on its own changesets
	case p.reviewer != "":
		return newError(http.StatusForbidden, apitypes.CodeForbidden, "a reviewer token reads and reviews changesets; it cannot call this route")
	}
	return newError(http.StatusForbidden, apitypes.CodeForbidden, "a session token cannot call this route")
}

// linkToken is the token of a link to port of session id until exp.
func (a *auth) linkToken(id uuid.UUID, port int, exp time.Time) string {
	payload := id.String() + "." + strconv.Itoa(port) + "." + strconv.FormatInt(exp.Unix(), 10)
	mac := hmac.New(sha256.New, a.secret)
	mac.Write([]byte("port-link\x00" + payload))
	return linkTokenPrefix + payload + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// linkOf checks a port link's token at now: the session and port it
// opens; 401 when it is not one of this daemon's or has expired.
func (a *auth) linkOf(tok string, now time.Time) (uuid.UUID, int, *apitypes.Error) {
	invalid := newError(http.StatusUnauthorized, apitypes.CodeUnauthorized, "invalid port link")
	rest, ok := strings.CutPrefix(tok, linkTokenPrefix)
	if !ok {
		return uuid.Nil, 0, invalid
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 4 {
		return uuid.Nil, 0, invalid
	}
	id, err := uuid.Parse(parts[0])
	port, perr := strconv.Atoi(parts[1])
	exp, eerr := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || perr != nil || eerr != nil || id.String() != parts[0] {
		return uuid.Nil, 0, invalid
	}
	if subtle.ConstantTimeCompare([]byte(a.linkToken(id, port, time.Unix(exp, 0))), []byte(tok)) != 1 {
		return uuid.Nil, 0, invalid
	}
	if !now.Before(time.Unix(exp, 0)) {
		return uuid.Nil, 0, newError(http.StatusUnauthorized, apitypes.CodeUnauthorized, "this port link expired at %s", time.Unix(exp, 0).UTC().Format(time.RFC3339))
	}
	return id, port, nil
}
