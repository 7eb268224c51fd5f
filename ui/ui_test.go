package ui

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The page loads nothing from elsewhere: no asset names another origin.
func TestAssetsAreSelfContained(t *testing.T) {
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}|@import|url\(`)
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(assets, p)
		require.NoError(t, err)
		assert.Empty(t, external.FindAllString(string(data), -1), "%s refers to another origin", p)
		return nil
	})
	require.NoError(t, err)
}

func TestHandler(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := Mount(api)
	get := func(method, path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		return rec
	}
	r := get("GET", "/")
	assert.Equal(t, http.StatusFound, r.Code)
	assert.Equal(t, "/ui/", r.Header().Get("Location"))
	assert.Equal(t, http.StatusFound, get("GET", "/ui").Code)
	for _, p := range []string{"/ui/", "/ui/changesets/x", "/ui/repos/r/layers", "/ui/sessions"} {
		r = get("GET", p)
		assert.Equal(t, http.StatusOK, r.Code, p)
		assert.Contains(t, r.Body.String(), `<script type="module" src="/ui/assets/app.js">`, p)
		assert.Contains(t, r.Header().Get("Content-Security-Policy"), "default-src 'self'", p)
	}
	r = get("GET", "/ui/assets/app.js")
	assert.Equal(t, http.StatusOK, r.Code)
	assert.Equal(t, "text/javascript; charset=utf-8", r.Header().Get("Content-Type"))
	assert.Equal(t, http.StatusNotFound, get("GET", "/ui/assets/nope.js").Code)
	assert.Equal(t, http.StatusMethodNotAllowed, get("POST", "/ui/").Code)
	assert.Equal(t, http.StatusTeapot, get("GET", "/v1/repos").Code, "everything else is the API's")
	assert.Equal(t, http.StatusTeapot, get("GET", "/uix").Code)
}

// TestCommitURL: the page carries the --commit-url template (escaped as
// an attribute) in a meta element; a template without {commit}, or not
// an absolute http(s) URL, is refused.
func TestCommitURL(t *testing.T) {
	for _, tc := range []struct {
		tpl string
		ok  bool
	}{
		{"", true},
		{"https://forge.example/{repo}/commit/{commit}", true},
		{"http://git.internal:8080/c/{commit}?r={repo}", true},
		{"https://forge.example/{repo}", false},
		{"/relative/{commit}", false},
		{"javascript:alert(1)//{commit}", false},
		{"ftp://forge.example/{commit}", false},
	} {
		err := CheckCommitURL(tc.tpl)
		assert.Equal(t, tc.ok, err == nil, "%q: %v", tc.tpl, err)
	}
	serve := func(cfg Config) string {
		rec := httptest.NewRecorder()
		MountWith(http.NotFoundHandler(), cfg).ServeHTTP(rec, httptest.NewRequest("GET", "/ui/changesets/x", nil))
		require.Equal(t, http.StatusOK, rec.Code)
		return rec.Body.String()
	}
	assert.Contains(t, serve(Config{}), `<meta name="sessiond-commit-url" content="">`)
	assert.Contains(t, serve(Config{CommitURL: `https://f.example/{repo}/commit/{commit}?a=1&b="2"`}),
		`<meta name="sessiond-commit-url" content="https://f.example/{repo}/commit/{commit}?a=1&amp;b=&#34;2&#34;">`)
}
