package weaviate

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/index/indextest"
	"github.com/ragmem/ragmem/internal/wvtest"
)

var nsSeq atomic.Int64

// uniqueNS returns a namespace no other test of this run uses, so that a
// shared server ($RAGMEM_WEAVIATE_URL) can serve every test.
func uniqueNS(t testing.TB, base string) string {
	return fmt.Sprintf("t%d_%s_%d", nsSeq.Add(1), base, testPID)
}

func TestConformance(t *testing.T) {
	url := wvtest.URL(t)
	run := nsSeq.Add(1)
	indextest.Run(t, func(t *testing.T, key string) driver.Backend {
		b, err := Open(context.Background(), url, &Options{Namespace: fmt.Sprintf("conf%d_%d_%s", testPID, run, key)})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return b
	})
}
