package apitypes

import "strings"

// BearerToken is the token of an Authorization header value with the
// Bearer scheme, whose name is case-insensitive (RFC 7235 §2.1): "Bearer
// t", "bearer t" and "BEARER  t" all carry t. ok is false for another
// scheme or an empty token.
func BearerToken(header string) (token string, ok bool) {
	scheme, tok, found := strings.Cut(strings.TrimSpace(header), " ")
	tok = strings.TrimSpace(tok)
	if !found || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", false
	}
	return tok, true
}
