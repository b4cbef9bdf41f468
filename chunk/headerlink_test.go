package chunk

import (
	"strings"
	"testing"
)

// TestHeaderlinkNotInHeadings: HTML chunked as it is (a document reader's
// output) drops the permalink anchors of Sphinx and MkDocs headings.
func TestHeaderlinkNotInHeadings(t *testing.T) {
	src := `<h1>Installing<a class="headerlink" href="#installing">¶</a></h1><p>Run pip install project.</p>` +
		`<h2>From source<a class="reference headerlink" href="#s">&para;</a></h2><p>Clone the repository.</p>`
	text, _ := ExtractHTML(src)
	if strings.Contains(text, "¶") {
		t.Errorf("text %q", text)
	}
	chunks := Split(src, HTML, nil)
	if len(chunks) == 0 {
		t.Fatal("no chunks")
	}
	for _, c := range chunks {
		for _, h := range c.HeadingPath {
			if strings.Contains(h, "¶") {
				t.Errorf("heading %q", h)
			}
		}
	}
}
