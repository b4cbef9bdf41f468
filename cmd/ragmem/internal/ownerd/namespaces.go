package ownerd

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"

	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// DeleteSources is never retried once sent unless it is a dry run: a
// removal that may have been applied is reported as such.
func (s *Store) DeleteSources(ctx context.Context, req rag.DeleteSourcesRequest) (out *rag.DeleteSourcesJSON, err error) {
	err = s.Call(ctx, req.DryRun, "the removal", func(m rag.Memory) (err error) { out, err = m.DeleteSources(ctx, req); return err })
	return out, err
}

// SetSourceAttrs may be retried: setting the same attributes twice is
// setting them once.
func (s *Store) SetSourceAttrs(ctx context.Context, u string, req rag.SetAttrsRequest) (out *rag.SetAttrsJSON, err error) {
	err = s.Call(ctx, true, "", func(m rag.Memory) (err error) { out, err = m.SetSourceAttrs(ctx, u, req); return err })
	return out, err
}

// attachNamespace makes the store of this process's own server for the
// command's namespace the current one (the default namespace's engine is
// run.eng). s.mu is held.
func (s *Store) attachNamespace(ctx context.Context, run *Run) error {
	s.run = run
	if s.set.Namespace == "" {
		s.cur, s.nsEng = run.eng, run.eng
		return nil
	}
	eng, release, err := run.srv.AcquireNamespace(ctx, s.set.Namespace)
	if err != nil {
		s.run = nil
		return err
	}
	s.cur, s.nsEng, s.nsRelease = eng, eng, release
	return nil
}

// releaseNamespace lets go of the namespace's engine before this process
// stops owning. s.mu is held.
func (s *Store) releaseNamespace() {
	if s.nsRelease != nil {
		s.nsRelease()
	}
	s.nsEng, s.nsRelease = nil, nil
}

// NamespacesPath is the owner's route that lists the namespaces with their
// counts.
const NamespacesPath = "/v1/owner/namespaces"

// NamespaceInfo is one namespace as `ragmem namespaces` lists it.
type NamespaceInfo struct {
	Name        string `json:"name"` // "" for the default namespace
	Dir         string `json:"dir"`
	Sources     int    `json:"sources"` // knowledge sources
	Chunks      int    `json:"chunks"`
	Memories    int    `json:"memories"`
	Preferences int    `json:"preferences"`
}

// ListNamespaces lists the default namespace and every namespace with a
// store under dir/namespaces, with their counts, opening each through the
// owner's server (srv).
func ListNamespaces(ctx context.Context, srv *server.Server, dir string) ([]NamespaceInfo, error) {
	names := []string{""}
	ents, err := os.ReadDir(filepath.Join(dir, "namespaces"))
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for _, e := range ents {
		if e.IsDir() && server.CheckNamespace(e.Name()) == nil && rag.StoreExists(filepath.Join(dir, "namespaces", e.Name())) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names[1:])
	out := make([]NamespaceInfo, 0, len(names))
	for _, ns := range names {
		eng, release, err := srv.AcquireNamespace(ctx, ns)
		if err != nil {
			return nil, fmt.Errorf("namespace %q: %w", ns, err)
		}
		st, err := eng.Stats(ctx)
		release()
		if err != nil {
			return nil, fmt.Errorf("namespace %q: %w", ns, err)
		}
		out = append(out, NamespaceInfo{Name: ns, Dir: server.NamespaceDir(dir, ns), Sources: st.DocumentCount, Chunks: st.ChunkCount, Memories: st.MemoryCount, Preferences: st.PreferenceCount})
	}
	return out, nil
}

// serveNamespaces answers GET /v1/owner/namespaces (the owner's socket
// only).
func (r *Run) serveNamespaces(w http.ResponseWriter, req *http.Request) {
	list, err := ListNamespaces(req.Context(), r.srv, r.dir)
	if err != nil {
		r.srv.Fail(w, req, err)
		return
	}
	writeJSON(w, list)
}

// NamespaceMemories returns the agent memories of namespace ns over eng's
// index (eng is that namespace's engine): the same memory.Store the
// owner's API serves for a request with the namespace header.
func (r *Run) NamespaceMemories(ctx context.Context, ns string, eng *rag.Engine) (*memory.Store, error) {
	if ns == "" {
		return r.MemoryStore(ctx)
	}
	return r.stores.Get(ctx, filepath.Join(server.NamespaceDir(r.dir, ns), "memories"), eng.Store())
}
