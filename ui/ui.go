package ui

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// Prefix is where the page lives.
const Prefix = "/ui/"

// Config is what the page is given besides the API.
type Config struct {
	// CommitURL is a template of a repository's commit view, such as
	// https://forge.example/{repo}/commit/{commit}: the page links every
	// commit it names there. Empty: commits are not linked.
	CommitURL string
}

// commitMeta is the element of index.html that carries Config.CommitURL
// to the page (links.js reads it).
const commitMeta = `<meta name="sessiond-commit-url" content="">`

// CheckCommitURL checks a commit URL template: an absolute http or https
// URL with {commit} in it ({repo} is optional).
func CheckCommitURL(tpl string) error {
	if tpl == "" {
		return nil
	}
	if !strings.Contains(tpl, "{commit}") {
		return errors.New("want a URL with {commit} in it (and {repo} where the repository's name goes)")
	}
	u, err := url.Parse(strings.NewReplacer("{repo}", "r", "{commit}", "0").Replace(tpl))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("want an absolute http or https URL, such as https://forge.example/{repo}/commit/{commit}")
	}
	return nil
}

// Handler serves the page: files under /ui/assets/ as they are, every
// other path under /ui/ as index.html (the modules read the path) with
// cfg filled in, and GET / as a redirect to /ui/.
func Handler(cfg Config) http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has assets/
	}
	files := http.StripPrefix(Prefix+"assets/", http.FileServerFS(sub))
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
	if !bytes.Contains(index, []byte(commitMeta)) {
		panic("index.html lacks " + commitMeta)
	}
	index = bytes.Replace(index, []byte(commitMeta),
		[]byte(`<meta name="sessiond-commit-url" content="`+html.EscapeString(cfg.CommitURL)+`">`), 1)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		p := r.URL.Path
		switch {
		case p == "/" || p == strings.TrimSuffix(Prefix, "/"):
			http.Redirect(w, r, Prefix, http.StatusFound)
		case strings.HasPrefix(p, Prefix+"assets/"):
			w.Header().Set("Cache-Control", "no-cache")
			if path.Ext(p) == ".js" {
				w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			}
			files.ServeHTTP(w, r)
		case strings.HasPrefix(p, Prefix):
			h := w.Header()
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Cache-Control", "no-cache")
			// The page loads only its own files and talks only to this
			// origin.
			h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'")
			h.Set("X-Content-Type-Options", "nosniff")
			_, _ = w.Write(index)
		default:
			http.NotFound(w, r)
		}
	})
}

// Mount returns a handler that serves the page at / and /ui/ and passes
// every other request to next (the API).
func Mount(next http.Handler) http.Handler { return MountWith(next, Config{}) }

// MountWith is Mount with the page's Config.
func MountWith(next http.Handler, cfg Config) http.Handler {
	page := Handler(cfg)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "/" || p == "/ui" || strings.HasPrefix(p, Prefix) {
			page.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
