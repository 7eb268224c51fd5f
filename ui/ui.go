package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// Prefix is where the page lives.
const Prefix = "/ui/"

// Handler serves the page: files under /ui/assets/ as they are, every
// other path under /ui/ as index.html (the modules read the path), and
// GET / as a redirect to /ui/.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has assets/
	}
	files := http.StripPrefix(Prefix+"assets/", http.FileServerFS(sub))
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
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
func Mount(next http.Handler) http.Handler {
	page := Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "/" || p == "/ui" || strings.HasPrefix(p, Prefix) {
			page.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
