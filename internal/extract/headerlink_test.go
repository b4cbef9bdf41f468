package extract

import (
	"strings"
	"testing"
)

// TestHeaderlinksDropped: the permalink anchors Sphinx and MkDocs put in
// every heading (<a class="headerlink">¶</a>) are not part of the text.
func TestHeaderlinksDropped(t *testing.T) {
	page := `<!DOCTYPE html><html><head><title>Installing — Project documentation</title></head><body>
<div class="body" role="main"><section id="installing">
<h1>Installing<a class="headerlink" href="#installing" title="Permalink to this heading">¶</a></h1>
<p>Run pip install project to get the package onto your machine with all its dependencies included.</p>
<h2 id="src">From source<a class="headerlink" href="#src" title="Permanent link">&para;</a></h2>
<p>Clone the repository and run the setup script; this installs the development version of the package.</p>
</section></div></body></html>`
	p, err := HTML(page, "https://docs.example/install.html", nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.Text, "¶") || strings.Contains(p.HTML, "¶") || !strings.Contains(p.Text, "From source") {
		t.Errorf("text %q\nhtml %q", p.Text, p.HTML)
	}
}
