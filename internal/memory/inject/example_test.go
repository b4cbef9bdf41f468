package inject_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/internal/memory/inject"
	"github.com/ragmem/ragmem/internal/memory/layers"
	"github.com/ragmem/ragmem/rag"
)

// Before each step an agent loop asks for its memory: the memory files
// matched for the task, the rules whose condition holds and related
// episodes, in one untrusted-data message to send before the user's
// message, never inside the system prompt.
func ExampleInjector() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "inject")
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	eng, err := rag.Open(ctx, filepath.Join(dir, "data"), &rag.Options{Logger: quiet})
	if err != nil {
		panic(err)
	}
	defer eng.Close()
	mem, err := memory.Open(ctx, filepath.Join(dir, "memories"), &memory.Options{Index: eng.Store(), Logger: quiet})
	if err != nil {
		panic(err)
	}
	mem.Add(ctx, memory.NewMemory{
		Frontmatter: memory.Frontmatter{Title: "Uploads time out behind the proxy", WhenToUse: []string{"upload|timeout"}, Importance: memory.High, DiscoveredBy: "tester"},
		Content:     "# Uploads time out\n\nnginx cuts requests after 60 s; large uploads need proxy_read_timeout 300s.",
	})
	lay, err := layers.Open(ctx, filepath.Join(dir, "layers"), &layers.Options{Index: eng.Store(), Logger: quiet})
	if err != nil {
		panic(err)
	}
	defer lay.Close()
	lay.AddRule(ctx, layers.Rule{Condition: "upload", Action: "Test with a 1 GB file."})

	inj := inject.New(&inject.Options{Store: mem, Manager: lay, Logger: quiet})
	mc := inj.GetMemoryContext(ctx, inject.Query{Task: "Fix the upload of large files", Agent: "developer"})
	fmt.Println(mc.Message.Role, len(mc.Memories), "memory,", len(mc.Rules), "rule")
	fmt.Print(mc.Text)
	// Output:
	// assistant 1 memory, 1 rule
	// ## Background Knowledge from Previous Runs
	//
	// The following information was learned from prior runs and may be relevant:
	// When your answer relies on one of these memories, cite its id, like [memory:some-slug].
	//
	// ### Uploads time out behind the proxy [memory:uploads-time-out-behind-the-proxy]
	// *Importance: HIGH*
	// *Discovered by: tester*
	//
	// # Uploads time out
	//
	// nginx cuts requests after 60 s; large uploads need proxy_read_timeout 300s.
	//
	// ## Rules Learned from Previous Runs
	//
	// - When upload: Test with a 1 GB file.
}
