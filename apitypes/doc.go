// Package apitypes holds the wire types of the sessiond HTTP API v1: the
// request and response bodies, the error body and its codes, and the
// headers a client sends. Package api serves them and converts the
// engine's values to them; package client and other programs decode them
// without linking the engine.
//
// Invariants: the package imports only the standard library, so a client
// of the API pulls in nothing of the engine, git or the metrics. A type's
// JSON form is the contract that openapi.yaml describes: field names,
// omitempty and formats change only with the API's version. Object ids
// are 40-digit hex strings (empty for none), modes six octal digits,
// times RFC 3339 in UTC.
//
// The types are plain values with no shared state; they are safe for
// concurrent use as any Go value is.
package apitypes
