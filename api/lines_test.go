package api

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessiond/sessiond/apitypes"
)

// TestChangesetLines: the lines a reviewer expands around a hunk, at
// either side of a revision, with their syntax tokens; a bad range, side
// or path is refused naming what is wrong.
func TestChangesetLines(t *testing.T) {
	e := newDaemonEnv(t, Config{})
	ts := &testServer{t: t, URL: e.srv.URL, m: e.m, repo: e.repo}
	var before, after strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&before, "var v%d = %d\n", i, i)
		if i == 15 {
			fmt.Fprintf(&after, "var v%d = \"fifteen\"\n", i)
		} else {
			fmt.Fprintf(&after, "var v%d = %d\n", i, i)
		}
	}
	submit := func(files map[string]string) string {
		t.Helper()
		sid := ts.newSession()
		for p, c := range files {
			r := ts.call("PUT", "/v1/sessions/"+sid+"/files/"+p, []byte(c))
			require.Contains(t, []int{200, 201}, r.StatusCode, "%s", r.body)
		}
		r := ts.call("POST", "/v1/sessions/"+sid+"/changesets", []byte(`{"intent":"lines"}`))
		require.Equal(t, 201, r.StatusCode, "%s", r.body)
		var c apitypes.Changeset
		require.NoError(t, json.Unmarshal(r.body, &c))
		return c.ID
	}
	base := submit(map[string]string{"pkg/v.go": "package pkg\n\n" + before.String(), "same.txt": "unchanged\n"})
	r := ts.call("POST", "/v1/changesets/"+base+"/accept", []byte(`{}`))
	require.Equal(t, 200, r.StatusCode, "%s", r.body)
	id := submit(map[string]string{"pkg/v.go": "package pkg\n\n" + after.String()})

	get := func(q string) apitypes.FileLines {
		t.Helper()
		r := ts.call("GET", "/v1/changesets/"+id+"/files/pkg/v.go?"+q, nil)
		require.Equal(t, 200, r.StatusCode, "%s", r.body)
		var fl apitypes.FileLines
		require.NoError(t, json.Unmarshal(r.body, &fl))
		return fl
	}
	fl := get("lines=16-18")
	assert.Equal(t, "head", fl.Side)
	assert.Equal(t, 1, fl.Revision)
	assert.Equal(t, []string{"var v14 = 14\n", "var v15 = \"fifteen\"\n", "var v16 = 16\n"}, fl.Lines, "line 16 of the file is v14")
	assert.Equal(t, 16, fl.Start)
	assert.Equal(t, 18, fl.End)
	assert.Equal(t, 32, fl.Total)
	require.Len(t, fl.Spans, 3)
	require.NotEmpty(t, fl.Spans[0])
	assert.Equal(t, apitypes.Span{Start: 0, End: 3, Class: "kd"}, fl.Spans[0][0], "var is a declaration keyword")

	fl = get("lines=17-17&side=base")
	assert.Equal(t, []string{"var v15 = 15\n"}, fl.Lines, "the base side")
	fl = get("lines=31-100&side=base&revision=1")
	assert.Equal(t, []string{"var v29 = 29\n", "var v30 = 30\n"}, fl.Lines, "a range past the end stops at it")
	assert.Equal(t, 32, fl.End)

	for q, want := range map[string]string{
		"":                     "lines",
		"lines=abc":            "lines",
		"lines=0-3":            "lines",
		"lines=5-2":            "lines",
		"lines=1-20000":        "lines",
		"lines=40-41":          "lines",
		"lines=1-2&side=left":  "side",
		"lines=1-2&revision=x": "revision",
	} {
		r := ts.call("GET", "/v1/changesets/"+id+"/files/pkg/v.go?"+q, nil)
		assert.Equal(t, 400, r.StatusCode, "%s: %s", q, r.body)
		assert.Contains(t, string(r.body), want, q)
	}
	// Only a file the revision changes, at a side where it exists.
	r = ts.call("GET", "/v1/changesets/"+id+"/files/same.txt?lines=1-1", nil)
	assert.Equal(t, 404, r.StatusCode, "%s", r.body)
	r = ts.call("GET", "/v1/changesets/"+id+"/files/pkg/v.go?lines=1-1&revision=9", nil)
	assert.Equal(t, 404, r.StatusCode, "%s", r.body)
}

// TestDiffPathsAndSpans: ?path= keeps only the files named (the stats
// summed over them), ?spans=false leaves the tokens out, a bad value is
// 400 naming spans.
func TestDiffPathsAndSpans(t *testing.T) {
	e := newDaemonEnv(t, Config{})
	ts := &testServer{t: t, URL: e.srv.URL, m: e.m, repo: e.repo}
	sid := ts.newSession()
	for p, c := range map[string]string{"a.go": "package a\n", "b.go": "package b\n\nvar B = 1\n", "c.txt": "c\n"} {
		r := ts.call("PUT", "/v1/sessions/"+sid+"/files/"+p, []byte(c))
		require.Contains(t, []int{200, 201}, r.StatusCode, "%s", r.body)
	}
	r := ts.call("POST", "/v1/sessions/"+sid+"/changesets", []byte(`{"intent":"paths"}`))
	require.Equal(t, 201, r.StatusCode, "%s", r.body)
	var c apitypes.Changeset
	require.NoError(t, json.Unmarshal(r.body, &c))
	get := func(route, q string) apitypes.Diff {
		t.Helper()
		r := ts.call("GET", route+"?format=json&"+q, nil)
		require.Equal(t, 200, r.StatusCode, "%s", r.body)
		var d apitypes.Diff
		require.NoError(t, json.Unmarshal(r.body, &d))
		return d
	}
	for _, route := range []string{"/v1/changesets/" + c.ID + "/diff", "/v1/sessions/" + sid + "/diff"} {
		d := get(route, "path=b.go&path=c.txt")
		require.Len(t, d.Files, 2, route)
		assert.Equal(t, "b.go", d.Files[0].Path)
		assert.Equal(t, "c.txt", d.Files[1].Path)
		assert.Equal(t, apitypes.Stats{Files: 2, Insertions: 4}, d.Stats)
		assert.NotEmpty(t, d.Files[0].Hunks[0].Spans, "tokens by default")
		d = get(route, "spans=false")
		require.Len(t, d.Files, 3)
		for _, f := range d.Files {
			assert.Nil(t, f.Hunks[0].Spans, f.Path)
		}
		r := ts.call("GET", route+"?format=json&spans=maybe", nil)
		assert.Equal(t, 400, r.StatusCode)
		assert.Contains(t, string(r.body), "spans")
	}
}

// TestChangesetLinesRenamed: a renamed file is read by its new path at
// the head and its old path at the base, not the other way round.
func TestChangesetLinesRenamed(t *testing.T) {
	e := newDaemonEnv(t, Config{})
	ts := &testServer{t: t, URL: e.srv.URL, m: e.m, repo: e.repo}
	var body strings.Builder
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&body, "row %d\n", i)
	}
	sid := ts.newSession()
	r := ts.call("PUT", "/v1/sessions/"+sid+"/files/r1.txt", []byte(body.String()))
	require.Contains(t, []int{200, 201}, r.StatusCode, "%s", r.body)
	r = ts.call("POST", "/v1/sessions/"+sid+"/changesets", []byte(`{"intent":"base"}`))
	require.Equal(t, 201, r.StatusCode, "%s", r.body)
	var base apitypes.Changeset
	require.NoError(t, json.Unmarshal(r.body, &base))
	r = ts.call("POST", "/v1/changesets/"+base.ID+"/accept", []byte(`{}`))
	require.Equal(t, 200, r.StatusCode, "%s", r.body)

	sid = ts.newSession()
	r = ts.call("POST", "/v1/sessions/"+sid+"/edits", []byte(`{"edits":[{"op":"move","path":"r1.txt","to":"r2.txt"},{"op":"replace","path":"r2.txt","old":"row 6\n","new":"row six\n"}]}`))
	require.Equal(t, 200, r.StatusCode, "%s", r.body)
	r = ts.call("POST", "/v1/sessions/"+sid+"/changesets", []byte(`{"intent":"rename"}`))
	require.Equal(t, 201, r.StatusCode, "%s", r.body)
	var c apitypes.Changeset
	require.NoError(t, json.Unmarshal(r.body, &c))
	d := ts.call("GET", "/v1/changesets/"+c.ID+"/diff?format=json", nil)
	require.Contains(t, string(d.body), `"status":"renamed"`)

	read := func(q string) (int, apitypes.FileLines) {
		t.Helper()
		r := ts.call("GET", "/v1/changesets/"+c.ID+"/files/"+q, nil)
		var fl apitypes.FileLines
		if r.StatusCode == 200 {
			require.NoError(t, json.Unmarshal(r.body, &fl))
		}
		return r.StatusCode, fl
	}
	code, fl := read("r2.txt?lines=5-6")
	require.Equal(t, 200, code)
	assert.Equal(t, []string{"row 5\n", "row six\n"}, fl.Lines)
	code, fl = read("r1.txt?lines=6-6&side=base")
	require.Equal(t, 200, code)
	assert.Equal(t, []string{"row 6\n"}, fl.Lines)
	code, _ = read("r1.txt?lines=1-1")
	assert.Equal(t, 404, code, "the old path at the head")
	code, _ = read("r2.txt?lines=1-1&side=base")
	assert.Equal(t, 404, code, "the new path at the base")
}
