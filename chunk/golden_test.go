package chunk

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

type goldenChunk struct {
	Index       int      `json:"index"`
	HeadingPath []string `json:"headingPath"`
	Start       int      `json:"start"`
	End         int      `json:"end"`
	Tokens      int      `json:"tokens"`
	Text        string   `json:"text"`
}

// golden compares got (as indented JSON) with testdata/golden/name, or
// rewrites the file with -update.
func golden(t *testing.T, name string, got any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(got); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./chunk -run Golden -update to create it)", err)
	}
	if !bytes.Equal(data, want) {
		t.Errorf("%s differs from the golden file (rerun with -update if the change is intended)\n got:\n%s", path, data)
	}
}

func TestGolden(t *testing.T) {
	inputs := []string{"guide.md", "page.html", "notes.txt"}
	configs := []struct {
		suffix string
		opts   *Options
	}{
		{"default", nil},
		{"small", &Options{MaxTokens: 80, Overlap: 15}},
	}
	for _, in := range inputs {
		src, err := os.ReadFile(filepath.Join("testdata", "golden", in))
		if err != nil {
			t.Fatal(err)
		}
		f, ok := FormatForPath(in)
		if !ok {
			t.Fatalf("no format for %s", in)
		}
		for _, cfg := range configs {
			t.Run(in+"/"+cfg.suffix, func(t *testing.T) {
				chunks := Split(string(src), f, cfg.opts)
				if err := checkSplit(string(src), f, cfg.opts); err != nil {
					t.Fatal(err)
				}
				out := make([]goldenChunk, len(chunks))
				for i, c := range chunks {
					out[i] = goldenChunk{c.Index, c.HeadingPath, c.Start, c.End, c.Tokens, c.Text}
				}
				golden(t, in+"."+cfg.suffix+".json", out)
			})
		}
		if f == HTML {
			text, title := ExtractHTML(string(src))
			golden(t, in+".extract.json", struct {
				Title string `json:"title"`
				Text  string `json:"text"`
			}{title, text})
		}
	}
}
