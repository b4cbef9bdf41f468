package settings

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/internal/perm"
	"github.com/ragmem/ragmem/rag"
)

// dirPolicy is what a command needs of the data directory.
type dirPolicy int

const (
	// dirNone: the command does not use it (config, bench, eval, ...).
	dirNone dirPolicy = iota
	// dirCreate: the command creates it when it does not exist, and says
	// so (index, import, serve, mcp).
	dirCreate
	// dirExists: a data directory named by --dir, $RAGMEM_DIR or the
	// config file must exist (a mistyped one is an error, not a new
	// store); the default one is created when the command writes.
	dirExists
	// dirStore: the command reads the store: the data directory must
	// exist and, with the local backend, hold a store. Nothing is created.
	dirStore
)

// DirPolicies gives each command's policy by its path; a command not
// listed is dirNone. TestEveryCommandHasADirPolicy keeps the list whole.
var DirPolicies = map[string]dirPolicy{
	"ragmem index": dirCreate, "ragmem import": dirCreate, "ragmem serve": dirCreate, "ragmem mcp": dirCreate,

	"ragmem search": dirStore, "ragmem context": dirStore, "ragmem sources": dirStore, "ragmem stats": dirStore,
	"ragmem rm": dirStore, "ragmem export": dirStore, "ragmem migrate": dirStore,
	"ragmem prefs list": dirStore, "ragmem prefs rm": dirStore, "ragmem prefs clear": dirStore,
	"ragmem jobs list": dirStore, "ragmem jobs retry": dirStore, "ragmem jobs drop": dirStore,
	"ragmem memory match": dirStore, "ragmem attrs set": dirStore, "ragmem namespaces": dirStore,

	// The agent memories are files (under the data directory unless
	// --memories says otherwise); most memory commands do not need the
	// store.
	"ragmem memory list": dirExists, "ragmem memory show": dirExists, "ragmem memory search": dirExists,
	"ragmem memory stats": dirExists, "ragmem memory supersede": dirExists, "ragmem memory cite": dirExists,
	"ragmem memory add": dirExists, "ragmem memory extract": dirExists,

	"ragmem prefs add":    dirExists,
	"ragmem token rotate": dirExists, "ragmem token show": dirExists, "ragmem token list": dirExists,
	"ragmem status": dirExists,
	// check says itself (exit status 2) that a directory holds no store.
	"ragmem check": dirExists,
}

// DirNoPolicy lists the commands that do not use the data directory, or
// choose their own (demo: a temporary one unless --dir is given).
var DirNoPolicy = map[string]bool{
	"ragmem bench": true, "ragmem eval": true, "ragmem demo": true, "ragmem prefs detect": true,
	"ragmem config show": true, "ragmem config path": true, "ragmem config init": true,
	"ragmem model pull": true, "ragmem model list": true, "ragmem version": true,
}

// ErrNoDataDir: the data directory named does not exist.
var ErrNoDataDir = errors.New("no such data directory")

// ErrNoStore: the data directory holds no store yet.
var ErrNoStore = errors.New("no store")

// dataDirSource says where the data directory was named: "--dir",
// "$RAGMEM_DIR", the config file, or "" for the default.
func (s *Settings) dataDirSource() string {
	if src := s.Sources["dir"]; src != "" && src != SrcDefault {
		return src
	}
	if s.Dir != "" {
		return "--dir"
	}
	return ""
}

// CheckDataDir applies cmd's dirPolicy before it runs.
func (s *Settings) CheckDataDir(cmd *cobra.Command) error {
	pol := DirPolicies[cmd.CommandPath()]
	if pol == dirNone {
		return nil
	}
	dir, err := s.DataDir()
	if err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return fmt.Errorf("data directory %s is not a directory", dir)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("data directory: %w", err)
	}
	missing := err != nil
	// The data directory is the user's before anything else is said of
	// it: one that others may write is refused even when it holds no store
	// (internal/perm; the store's own open checks it again).
	if missing {
		err = perm.BeforeCreate(dir)
	} else {
		_, err = perm.Dir(dir)
	}
	if err != nil {
		return err
	}
	where := s.dataDirSource()
	named := where != ""
	switch pol {
	case dirCreate:
		if missing {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return fmt.Errorf("create data directory: %w", err)
			}
			fmt.Fprintf(s.Stderr, "ragmem: created the data directory %s\n", dir)
		}
	case dirExists:
		if missing && named {
			return fmt.Errorf("%w %s (from %s): check the path; ragmem index, import, serve and mcp create it", ErrNoDataDir, dir, where)
		}
	case dirStore:
		if missing && named {
			return fmt.Errorf("%w %s (from %s): check the path; ragmem index, import, serve and mcp create it", ErrNoDataDir, dir, where)
		}
		if !s.LocalBackend() {
			// The store is the remote backend's; the data directory holds
			// only this machine's owner files, made on first use.
			if missing {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					return fmt.Errorf("create data directory: %w", err)
				}
			}
			return nil
		}
		if missing || (!rag.StoreExists(dir) && !ownerAnnounced(dir)) {
			return fmt.Errorf("%w in %s: nothing was indexed there yet (ragmem index creates it)", ErrNoStore, dir)
		}
	}
	return nil
}

// ownerAnnounced reports whether a process announces itself as the owner of
// dir: its store, of whatever backend, is the one the command reads.
func ownerAnnounced(dir string) bool {
	_, err := owner.ReadInfo(dir)
	return err == nil
}
