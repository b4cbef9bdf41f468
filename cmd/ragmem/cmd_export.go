package main

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/export"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/internal/perm"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/internal/wal"
	"github.com/ragmem/ragmem/rag"
)

// keyEnv names the environment variable that holds an export key.
const keyEnv = "RAGMEM_EXPORT_KEY"

const keyHelp = "The key is 32 bytes: a file holding them raw, as 64 hex digits or in base64 (make one with\n" +
	"`head -c 32 /dev/urandom | base64 > ragmem.key`), named by --key-file, or the hex or base64\n" +
	"text in $" + keyEnv + ". There is no flag that takes the key itself: a key on the command line\n" +
	"is visible to every user of the machine (ps) and stays in the shell's history."

// exportKey reads the key named by --key-file, else $RAGMEM_EXPORT_KEY; nil
// when neither is set.
func exportKey(keyFile string) ([]byte, error) {
	var text []byte
	from := "$" + keyEnv
	switch {
	case keyFile != "":
		if err := perm.CheckFile(keyFile); err != nil {
			return nil, fmt.Errorf("--key-file: %w", err)
		}
		b, _, err := wal.ReadRegular(keyFile, 4096)
		if err != nil {
			return nil, fmt.Errorf("--key-file: %w", err)
		}
		if len(b) == export.KeySize {
			return b, nil
		}
		text, from = b, "--key-file "+keyFile
	case os.Getenv(keyEnv) != "":
		text = []byte(os.Getenv(keyEnv))
	default:
		return nil, nil
	}
	s := strings.TrimSpace(string(text))
	if b, err := hex.DecodeString(s); err == nil && len(b) == export.KeySize {
		return b, nil
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) == export.KeySize {
		return b, nil
	}
	if b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "=")); err == nil && len(b) == export.KeySize {
		return b, nil
	}
	return nil, fmt.Errorf("%s: not a %d-byte key (raw, 64 hex digits or base64)", from, export.KeySize)
}

func newExportCmd(g *globals) *cobra.Command {
	var keyFile string
	var noCompress bool
	cmd := &cobra.Command{
		Use:   "export [flags] FILE",
		Short: "Write the whole memory to one portable file (a chromem-go export)",
		Long: "export writes every record of the store (chunks with their text, metadata, attributes and\n" +
			"vectors; preferences and memories), the embedder that made the vectors and the fusion\n" +
			"calibration to FILE, as a chromem-go database export: gob, gzip-compressed, and sealed with\n" +
			"AES-256-GCM when a key is given. The snapshot is consistent: each earlier write is in it\n" +
			"entirely or not at all. FILE is replaced atomically. `ragmem import FILE` reads it back;\n" +
			"any chromem-go program can open it with DB.ImportFromFile (collection \"ragmem\").\n\n" + keyHelp,
		Example: "  ragmem export backup.ragmem\n" +
			"  head -c 32 /dev/urandom | base64 > ragmem.key && ragmem export --key-file ragmem.key backup.ragmem",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := exportKey(keyFile)
			if err != nil {
				return err
			}
			path, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			req := exportRequest{Path: path, Key: key, NoCompress: noCompress}
			ctx := cmd.Context()
			var ans exportAnswer
			err = g.withStore(ctx, func(m rag.Memory) error {
				return m.(*ownedStore).call(ctx, true, "the export", func(cur rag.Memory) (err error) {
					switch c := cur.(type) {
					case *rag.Engine:
						ans, err = exportTo(ctx, c, req)
					case *owner.Client:
						err = c.Do(ctx, http.MethodPost, exportPath, req, &ans, rag.DefaultWriteTimeout)
					default:
						err = fmt.Errorf("export: no export through %T", cur)
					}
					return err
				})
			})
			if err != nil {
				return err
			}
			how := "gzip"
			if noCompress {
				how = "uncompressed"
			}
			if key != nil {
				how += ", AES-256-GCM"
			}
			fmt.Fprintf(g.stdout, "exported %d records (embedder %s) to %s (%s)\n", ans.Records, ans.Embedder, args[0], how)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&keyFile, "key-file", "", "encrypt with the 32-byte key in this file (default $"+keyEnv+"; none: not encrypted)")
	f.BoolVar(&noCompress, "no-compress", false, "write plain gob instead of gzip (gzip also detects damage)")
	return cmd
}

func newImportCmd(g *globals) *cobra.Command {
	var keyFile string
	var merge, replace bool
	cmd := &cobra.Command{
		Use:   "import [flags] FILE",
		Short: "Load a file written by `ragmem export` into the store",
		Long: "import reads FILE (written by `ragmem export`), checks it whole, and writes its records\n" +
			"into the store with their vectors as they are (no embedder call); the store's BM25 and\n" +
			"vector indexes are built from them. A new store takes the file's embedder unless one is\n" +
			"configured; a store of another embedder is refused. A store that holds records is refused\n" +
			"unless --merge (each source in the file replaces the store's source of that name; the\n" +
			"others stay) or --replace (the store ends up holding exactly the file's records).\n\n" + keyHelp,
		Example: "  ragmem --dir ~/restored import backup.ragmem\n" +
			"  RAGMEM_EXPORT_KEY=$(cat ragmem.key) ragmem import --merge backup.ragmem",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if merge && replace {
				return errors.New("--merge and --replace exclude each other")
			}
			key, err := exportKey(keyFile)
			if err != nil {
				return err
			}
			path, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			req := importRequest{Path: path, Key: key, Mode: "empty"}
			switch {
			case merge:
				req.Mode = "merge"
			case replace:
				req.Mode = "replace"
			}
			ctx := cmd.Context()
			// The file is read here first: a damaged file or a wrong key is
			// refused before any store is touched, and a store this process
			// creates takes the embedder of the file's vectors.
			snap, err := readExport(ctx, path, key)
			if err != nil {
				return err
			}
			if snap.Spec != nil {
				g.newStoreEmbedder = &index.EmbedderRecord{Identity: snap.Embedder, Spec: snap.Spec}
			}
			var ans importAnswer
			err = g.withStore(ctx, func(m rag.Memory) error {
				return m.(*ownedStore).call(ctx, false, "the import", func(cur rag.Memory) (err error) {
					switch c := cur.(type) {
					case *rag.Engine:
						ans, err = importInto(ctx, c, snap, req.Mode, func(done, total int) {
							if g.verbose {
								fmt.Fprintf(g.stderr, "imported %d of %d records\n", done, total)
							}
						})
					case *owner.Client:
						snap = nil // the owner reads the file itself
						err = c.Do(ctx, http.MethodPost, importPath, req, &ans, rag.DefaultWriteTimeout)
					default:
						err = fmt.Errorf("import: no import through %T", cur)
					}
					return err
				})
			})
			switch {
			case errors.Is(err, export.ErrNotEmpty) || err != nil && strings.Contains(err.Error(), errNotEmptyText):
				return fmt.Errorf("%w; import into an empty data directory (--dir), or use --merge or --replace", err)
			case errors.Is(err, export.ErrEmbedderMismatch) || err != nil && strings.Contains(err.Error(), errMismatchText):
				return fmt.Errorf("%w; import into a new data directory: it takes the file's embedder unless --embedder, $RAGMEM_EMBEDDER or the config file names another", err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "imported %d records (embedder %s) from %s\n", ans.Records, ans.Embedder, args[0])
			for _, t := range []string{index.DocKnowledge, index.DocPreference, index.DocMemory} {
				fmt.Fprintf(g.stdout, "  %-11s %d sources\n", t, ans.Sources[t])
			}
			if ans.Removed > 0 {
				fmt.Fprintf(g.stdout, "  removed     %d sources the file does not hold\n", ans.Removed)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&keyFile, "key-file", "", "the 32-byte key of an encrypted file (default $"+keyEnv+")")
	f.BoolVar(&merge, "merge", false, "import into a store that holds records: the file's sources replace those of the same name")
	f.BoolVar(&replace, "replace", false, "import into a store that holds records: afterwards it holds exactly the file's")
	return cmd
}

// The owner's routes for export and import (local listeners only): a
// client names a file by its absolute path and the owner, a process of the
// same user (the socket checks its peers), reads or writes it. The key
// travels over the socket, never on a command line.
const (
	exportPath = "/v1/owner/export"
	importPath = "/v1/owner/import"
)

// exportRequest asks for the store to be written to Path.
type exportRequest struct {
	Path       string `json:"path"`
	Key        []byte `json:"key,omitempty"` // AES-256-GCM key; none: not encrypted
	NoCompress bool   `json:"noCompress,omitempty"`
}

// exportAnswer says what an export wrote.
type exportAnswer struct {
	Records  int    `json:"records"`
	Embedder string `json:"embedder"`
}

// importRequest asks for the export at Path to be written into the store.
type importRequest struct {
	Path string `json:"path"`
	Key  []byte `json:"key,omitempty"`
	Mode string `json:"mode"` // empty, merge or replace
}

// importAnswer says what an import wrote.
type importAnswer struct {
	Records  int            `json:"records"`
	Embedder string         `json:"embedder"`
	Sources  map[string]int `json:"sources"`
	Removed  int            `json:"removed"`
}

// The messages of export's errors, which a client finds in the owner's
// answer to give the same advice as without an owner.
var (
	errNotEmptyText = export.ErrNotEmpty.Error()
	errMismatchText = export.ErrEmbedderMismatch.Error()
)

// exportTo writes a consistent snapshot of eng to req.Path.
func exportTo(ctx context.Context, eng *rag.Engine, req exportRequest) (exportAnswer, error) {
	if err := checkKey(req.Key); err != nil {
		return exportAnswer{}, err
	}
	if fi, err := os.Stat(filepath.Dir(req.Path)); err != nil || !fi.IsDir() {
		return exportAnswer{}, fmt.Errorf("export: %s: its directory does not exist", req.Path)
	}
	snap, err := eng.Export(ctx)
	if err != nil {
		return exportAnswer{}, err
	}
	if err := snap.WriteFile(ctx, req.Path, &export.WriteOptions{Key: req.Key, NoCompress: req.NoCompress}); err != nil {
		return exportAnswer{}, err
	}
	return exportAnswer{Records: len(snap.Records), Embedder: snap.Embedder}, nil
}

// readExport reads the export at path, with the advice a missing key needs.
func readExport(ctx context.Context, path string, key []byte) (*export.Snapshot, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	snap, err := export.ReadFile(ctx, path, &export.ReadOptions{Key: key})
	if err != nil && errors.Is(err, export.ErrFormat) && key == nil {
		return nil, fmt.Errorf("%w (if it is encrypted, give its key with --key-file or $%s)", err, keyEnv)
	}
	return snap, err
}

// importInto writes snap into eng in mode (empty, merge or replace).
func importInto(ctx context.Context, eng *rag.Engine, snap *export.Snapshot, mode string, progress func(done, total int)) (importAnswer, error) {
	var m export.Mode
	switch mode {
	case "empty", "":
		m = export.Empty
	case "merge":
		m = export.Merge
	case "replace":
		m = export.Replace
	default:
		return importAnswer{}, fmt.Errorf("import: unknown mode %q (want empty, merge or replace)", mode)
	}
	rep, err := eng.Import(ctx, snap, &export.ImportOptions{Mode: m, Progress: progress})
	if err != nil {
		return importAnswer{}, err
	}
	return importAnswer{Records: rep.Records, Embedder: snap.Embedder, Sources: rep.Sources, Removed: rep.Removed}, nil
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
func (r *ownerRun) serveExport(w http.ResponseWriter, req *http.Request) {
	var er exportRequest
	if !decodeOwnerRequest(w, req, &er) || !servePath(w, req, er.Path) {
		return
	}
	eng, err := r.srv.Engine(req)
	if err != nil {
		r.srv.Fail(w, req, err)
		return
	}
	ans, err := exportTo(req.Context(), eng, er)
	if err != nil {
		server.WriteError(w, req, http.StatusUnprocessableEntity, server.CodeBadRequest, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = writeJSON(w, ans)
}

// serveImport answers POST /v1/owner/import on the owner's socket.
func (r *ownerRun) serveImport(w http.ResponseWriter, req *http.Request) {
	var ir importRequest
	if !decodeOwnerRequest(w, req, &ir) || !servePath(w, req, ir.Path) {
		return
	}
	eng, err := r.srv.Engine(req)
	if err != nil {
		r.srv.Fail(w, req, err)
		return
	}
	snap, err := readExport(req.Context(), ir.Path, ir.Key)
	if err != nil {
		server.WriteError(w, req, http.StatusUnprocessableEntity, server.CodeBadRequest, err.Error())
		return
	}
	ans, err := importInto(req.Context(), eng, snap, ir.Mode, nil)
	if err != nil {
		server.WriteError(w, req, http.StatusUnprocessableEntity, server.CodeBadRequest, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = writeJSON(w, ans)
}
