package ownerd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/ragmem/ragmem/internal/export"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// KeyEnv names the environment variable that holds an export key.
const KeyEnv = "RAGMEM_EXPORT_KEY"

// The owner's routes for export and import (local listeners only): a
// client names a file by its absolute path and the owner, a process of the
// same user (the socket checks its peers), reads or writes it. The key
// travels over the socket, never on a command line.
const (
	ExportPath = "/v1/owner/export"
	ImportPath = "/v1/owner/import"
)

// ExportRequest asks for the store to be written to Path.
type ExportRequest struct {
	Path       string `json:"path"`
	Key        []byte `json:"key,omitempty"` // AES-256-GCM key; none: not encrypted
	NoCompress bool   `json:"noCompress,omitempty"`
}

// ExportAnswer says what an export wrote.
type ExportAnswer struct {
	Records  int    `json:"records"`
	Embedder string `json:"embedder"`
}

// ImportRequest asks for the export at Path to be written into the store.
type ImportRequest struct {
	Path string `json:"path"`
	Key  []byte `json:"key,omitempty"`
	Mode string `json:"mode"` // empty, merge or replace
}

// ImportAnswer says what an import wrote.
type ImportAnswer struct {
	Records  int            `json:"records"`
	Embedder string         `json:"embedder"`
	Sources  map[string]int `json:"sources"`
	Removed  int            `json:"removed"`
}

// The messages of export's errors, which a client finds in the owner's
// answer to give the same advice as without an owner.
var (
	ErrNotEmptyText = export.ErrNotEmpty.Error()
	ErrMismatchText = export.ErrEmbedderMismatch.Error()
)

// ExportTo writes a consistent snapshot of eng to req.Path.
func ExportTo(ctx context.Context, eng *rag.Engine, req ExportRequest) (ExportAnswer, error) {
	if err := checkKey(req.Key); err != nil {
		return ExportAnswer{}, err
	}
	if fi, err := os.Stat(filepath.Dir(req.Path)); err != nil || !fi.IsDir() {
		return ExportAnswer{}, fmt.Errorf("export: %s: its directory does not exist", req.Path)
	}
	snap, err := eng.Export(ctx)
	if err != nil {
		return ExportAnswer{}, err
	}
	if err := snap.WriteFile(ctx, req.Path, &export.WriteOptions{Key: req.Key, NoCompress: req.NoCompress}); err != nil {
		return ExportAnswer{}, err
	}
	return ExportAnswer{Records: len(snap.Records), Embedder: snap.Embedder}, nil
}

// ReadExport reads the export at path, with the advice a missing key needs.
func ReadExport(ctx context.Context, path string, key []byte) (*export.Snapshot, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	snap, err := export.ReadFile(ctx, path, &export.ReadOptions{Key: key})
	if err != nil && errors.Is(err, export.ErrFormat) && key == nil {
		return nil, fmt.Errorf("%w (if it is encrypted, give its key with --key-file or $%s)", err, KeyEnv)
	}
	return snap, err
}

// ImportInto writes snap into eng in mode (empty, merge or replace).
func ImportInto(ctx context.Context, eng *rag.Engine, snap *export.Snapshot, mode string, progress func(done, total int)) (ImportAnswer, error) {
	var m export.Mode
	switch mode {
	case "empty", "":
		m = export.Empty
	case "merge":
		m = export.Merge
	case "replace":
		m = export.Replace
	default:
		return ImportAnswer{}, fmt.Errorf("import: unknown mode %q (want empty, merge or replace)", mode)
	}
	rep, err := eng.Import(ctx, snap, &export.ImportOptions{Mode: m, Progress: progress})
	if err != nil {
		return ImportAnswer{}, err
	}
	return ImportAnswer{Records: rep.Records, Embedder: snap.Embedder, Sources: rep.Sources, Removed: rep.Removed}, nil
}

// checkKey refuses a key of the wrong size (a client's request may carry any).
func checkKey(key []byte) error {
	if key != nil && len(key) != export.KeySize {
		return fmt.Errorf("export: the key is %d bytes; it must be %d", len(key), export.KeySize)
	}
	return nil
}

// decodeOwnerRequest reads a small JSON request of the owner's routes.
func decodeOwnerRequest(w http.ResponseWriter, req *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		server.WriteError(w, req, http.StatusBadRequest, server.CodeBadRequest, "bad request: "+err.Error())
		return false
	}
	return true
}

// servePath checks a path a client named: absolute and clean.
func servePath(w http.ResponseWriter, req *http.Request, p string) bool {
	if p == "" || !filepath.IsAbs(p) || filepath.Clean(p) != p {
		server.WriteError(w, req, http.StatusBadRequest, server.CodeBadRequest, fmt.Sprintf("bad request: the path must be absolute and clean, not %q", p))
		return false
	}
	return true
}

// serveExport answers POST /v1/owner/export on the owner's socket.
func (r *Run) serveExport(w http.ResponseWriter, req *http.Request) {
	var er ExportRequest
	if !decodeOwnerRequest(w, req, &er) || !servePath(w, req, er.Path) {
		return
	}
	eng, err := r.srv.Engine(req)
	if err != nil {
		r.srv.Fail(w, req, err)
		return
	}
	ans, err := ExportTo(req.Context(), eng, er)
	if err != nil {
		server.WriteError(w, req, http.StatusUnprocessableEntity, server.CodeBadRequest, err.Error())
		return
	}
	writeJSON(w, ans)
}

// serveImport answers POST /v1/owner/import on the owner's socket.
func (r *Run) serveImport(w http.ResponseWriter, req *http.Request) {
	var ir ImportRequest
	if !decodeOwnerRequest(w, req, &ir) || !servePath(w, req, ir.Path) {
		return
	}
	eng, err := r.srv.Engine(req)
	if err != nil {
		r.srv.Fail(w, req, err)
		return
	}
	snap, err := ReadExport(req.Context(), ir.Path, ir.Key)
	if err != nil {
		server.WriteError(w, req, http.StatusUnprocessableEntity, server.CodeBadRequest, err.Error())
		return
	}
	ans, err := ImportInto(req.Context(), eng, snap, ir.Mode, nil)
	if err != nil {
		server.WriteError(w, req, http.StatusUnprocessableEntity, server.CodeBadRequest, err.Error())
		return
	}
	writeJSON(w, ans)
}

// writeJSON writes v as indented JSON, as the commands print it.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
