package main

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/ownerd"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/export"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/internal/perm"
	"github.com/ragmem/ragmem/internal/wal"
	"github.com/ragmem/ragmem/rag"
)

// keyEnv names the environment variable that holds an export key.
const keyEnv = ownerd.KeyEnv

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

// keyAndPath is the key --key-file or $RAGMEM_EXPORT_KEY gives (nil:
// none) and the absolute path of the file arg names.
func keyAndPath(keyFile, arg string) ([]byte, string, error) {
	key, err := exportKey(keyFile)
	if err != nil {
		return nil, "", err
	}
	path, err := filepath.Abs(arg)
	return key, path, err
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
			key, path, err := keyAndPath(keyFile, args[0])
			if err != nil {
				return err
			}
			req := ownerd.ExportRequest{Path: path, Key: key, NoCompress: noCompress}
			ctx := cmd.Context()
			var ans ownerd.ExportAnswer
			err = g.withStore(ctx, func(m rag.Memory) error {
				return m.(*ownerd.Store).Call(ctx, true, "the export", func(cur rag.Memory) (err error) {
					switch c := cur.(type) {
					case *rag.Engine:
						ans, err = ownerd.ExportTo(ctx, c, req)
					case *owner.Client:
						err = c.Do(ctx, http.MethodPost, ownerd.ExportPath, req, &ans, rag.DefaultWriteTimeout)
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
			key, path, err := keyAndPath(keyFile, args[0])
			if err != nil {
				return err
			}
			req := ownerd.ImportRequest{Path: path, Key: key, Mode: "empty"}
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
			snap, err := ownerd.ReadExport(ctx, path, key)
			if err != nil {
				return err
			}
			if snap.Spec != nil {
				g.NewStoreEmbedder = &index.EmbedderRecord{Identity: snap.Embedder, Spec: snap.Spec}
			}
			var ans ownerd.ImportAnswer
			err = g.withStore(ctx, func(m rag.Memory) error {
				return m.(*ownerd.Store).Call(ctx, false, "the import", func(cur rag.Memory) (err error) {
					switch c := cur.(type) {
					case *rag.Engine:
						ans, err = ownerd.ImportInto(ctx, c, snap, req.Mode, func(done, total int) {
							if g.Verbose {
								fmt.Fprintf(g.Stderr, "imported %d of %d records\n", done, total)
							}
						})
					case *owner.Client:
						snap = nil // the owner reads the file itself
						err = c.Do(ctx, http.MethodPost, ownerd.ImportPath, req, &ans, rag.DefaultWriteTimeout)
					default:
						err = fmt.Errorf("import: no import through %T", cur)
					}
					return err
				})
			})
			switch {
			case errors.Is(err, export.ErrNotEmpty) || err != nil && strings.Contains(err.Error(), ownerd.ErrNotEmptyText):
				return fmt.Errorf("%w; import into an empty data directory (--dir), or use --merge or --replace", err)
			case errors.Is(err, export.ErrEmbedderMismatch) || err != nil && strings.Contains(err.Error(), ownerd.ErrMismatchText):
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
