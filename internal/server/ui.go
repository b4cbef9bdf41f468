package server

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed ui/index.html ui/app.js ui/style.css
var uiFiles embed.FS

//go:embed openapi.json
var openapiJSON []byte

// uiCSP allows the page nothing but its own script, style and API.
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func uiHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", uiCSP)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}

func (s *Server) uiRoutes() {
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
	s.mustHandle("GET /{$}", uiHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(index)
	})).ServeHTTP, false)
	s.mustHandle("GET /ui/", uiHeaders(http.StripPrefix("/ui/", http.FileServerFS(sub))).ServeHTTP, false)
	s.mustHandle("GET /ui/login", s.login, false)
	s.mustHandle("POST /ui/session", s.newSession, false)
	s.mustHandle("DELETE /ui/session", s.endSession, false)
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openapiJSON)
}
