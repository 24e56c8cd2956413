package server

import (
	"embed"
	"io/fs"
	"net/http"
)

// consoleFiles are the web console's assets: a dependency-free page, its
// style sheet and its two scripts (render.js draws events, console.js
// runs the page), embedded in the binary (no Node, no build step, nothing
// fetched from elsewhere; markdown is rendered by the server, markdown.go).
//
//go:embed console/index.html console/console.css console/render.js console/timeline.js console/sandbox.js console/console.js
var consoleFiles embed.FS

// consolePrefix is where the console's assets are served; the page itself
// is at /.
const consolePrefix = "/console/"

// consoleHandler serves the console: GET / is the page, GET /console/...
// its assets. The page holds no data: it reads everything through the API
// (with the token the user enters, when the server requires one).
func consoleHandler() (page, assets http.Handler) {
	sub, err := fs.Sub(consoleFiles, "console")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	secure := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hd := w.Header()
			hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
			hd.Set("X-Content-Type-Options", "nosniff")
			hd.Set("Cache-Control", "no-cache")
			h.ServeHTTP(w, r)
		})
	}
	page = secure(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, sub, "index.html")
	}))
	return page, secure(http.StripPrefix(consolePrefix, files))
}
