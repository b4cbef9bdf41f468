package docread

import (
	"context"
	"testing"

	"github.com/ragmem/ragmem/internal/extract"
)

// BenchmarkRead reads the guide fixtures in process (extract.Document) and
// in a child process (Read): the difference is what isolation costs a
// file.
//
//	go test -run XXX -bench BenchmarkRead ./internal/docread
func BenchmarkRead(b *testing.B) {
	for _, name := range []string{"guide.pdf", "guide.docx", "guide.epub"} {
		data := fixture(b, name)
		b.Run("in-process/"+name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, _, err := extract.Document(name, data, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("isolated/"+name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := Read(context.Background(), name, data, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
