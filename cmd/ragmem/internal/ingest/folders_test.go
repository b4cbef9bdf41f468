package ingest

import (
	"path/filepath"
	"testing"
)

// FuzzDecodeFolders: any bytes are refused or give settings this program
// would have written.
func FuzzDecodeFolders(f *testing.F) {
	f.Add([]byte(`{"v":1,"folders":{"/home/u/notes":{"exclude":["drafts/","*.log"]}}}`))
	f.Add([]byte(`{"v":1,"folders":{}}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`{"v":1,"folders":{"/x":{"exclude":[""]}}}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, b []byte) {
		set, err := decodeFolders(b)
		if err != nil {
			return
		}
		if set.Version != 1 || set.Folders == nil {
			t.Fatalf("accepted %+v", set)
		}
		for dir, s := range set.Folders {
			if !filepath.IsAbs(dir) || len(s.Exclude) > maxExcludes {
				t.Fatalf("accepted folder %q with %d patterns", dir, len(s.Exclude))
			}
			for _, p := range s.Exclude {
				if p == "" || len(p) > maxPatternBytes {
					t.Fatalf("accepted pattern %q", p)
				}
			}
		}
	})
}
