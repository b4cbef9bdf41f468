//go:build ignore

// Boilerplate measures how much of what ragmem stores from a folder of HTML
// documentation pages is page furniture: navigation, menus, footers and
// help pop-ups rather than content.
//
//	go run scripts/boilerplate.go [-path index|extract] [-v] DIR...
//
// It chunks every .html file under the folders the way one of the two HTML
// paths does and counts the chunks that are boilerplate by this rule: a
// chunk is boilerplate when its text, white space collapsed,
//
//   - holds keyboard-shortcut or search help ("Keyboard shortcuts",
//     "Press ← or → to navigate", "Press ? to show this help", "Search
//     tricks", "Prefix searches with a type"), or
//   - holds menu items ("Print this book", "Git repository", "Suggest an
//     edit", "Toggle table of contents", "Change theme", or two or more of
//     the theme names Light, Rust, Coal, Navy, Ayu in a row), or
//   - holds footer text ("©", "Copyright", "All rights reserved"), or
//   - is a menu title: ten words or fewer, all of them the page's own title
//     or site name (a bar that repeats "The Rust Programming Language").
//
// -path index is what `ragmem index` and Document{Format: chunk.HTML} do
// on this branch's base; -path extract is the main-content extraction of
// POST /v1/pages (extract.HTML, then chunk.HTML), which the unified HTML
// path uses. Both use the chunker's defaults. The result line gives the
// chunks, the boilerplate chunks by kind and their share, and the titles
// that lost their start (a title that is not a suffix-trimmed form of the
// page's <title>).
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/extract"
)

var (
	helpRe   = regexp.MustCompile(`(?i)keyboard shortcuts|press\s+\S{1,8}\s+(or\s+\S{1,8}\s+)?to\s+(navigate|search|show|hide|close)|search tricks|prefix searches with a type`)
	menuRe   = regexp.MustCompile(`(?i)print this book|git repository|suggest an edit|toggle table of contents|change theme|\b(light|rust|coal|navy|ayu)\s+(light|rust|coal|navy|ayu)\b`)
	footerRe = regexp.MustCompile(`(?i)©|copyright\b|all rights reserved`)
	titleRe  = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
)

func main() {
	path := flag.String("path", "extract", "index or extract: the HTML path measured")
	verbose := flag.Bool("v", false, "print every boilerplate chunk")
	flag.Parse()
	var files []string
	for _, dir := range flag.Args() {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".html") {
				files = append(files, p)
			}
			return nil
		})
	}
	var chunks, help, menu, footer, menuTitle, failed, mangled int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			failed++
			continue
		}
		src := string(data)
		pageTitle := ""
		if m := titleRe.FindStringSubmatch(src); m != nil {
			pageTitle = strings.Join(strings.Fields(htmlUnescape(m[1])), " ")
		}
		var title, content string
		switch *path {
		case "index":
			_, title = chunk.ExtractHTML(src)
			content = src
		case "extract":
			p, err := extract.HTML(src, "", nil)
			if err != nil {
				failed++
				continue
			}
			title, content = p.Title, p.HTML
		default:
			fmt.Fprintln(os.Stderr, "-path is index or extract")
			os.Exit(2)
		}
		if pageTitle != "" && !strings.HasPrefix(pageTitle, strings.TrimSpace(title)) {
			mangled++
			if *verbose {
				fmt.Printf("TITLE %s: %q from %q\n", f, title, pageTitle)
			}
		}
		site := ""
		if i := strings.LastIndex(pageTitle, " - "); i >= 0 {
			site = pageTitle[i+3:]
		}
		for _, c := range chunk.Split(content, chunk.HTML, nil) {
			chunks++
			text := strings.Join(strings.Fields(c.Text), " ")
			kind := ""
			switch {
			case helpRe.MatchString(text):
				kind, help = "help", help+1
			case menuRe.MatchString(text):
				kind, menu = "menu", menu+1
			case footerRe.MatchString(text):
				kind, footer = "footer", footer+1
			case isMenuTitle(text, title, site):
				kind, menuTitle = "menu-title", menuTitle+1
			}
			if kind != "" && *verbose {
				fmt.Printf("%s %s: %.120q\n", kind, f, text)
			}
		}
	}
	junk := help + menu + footer + menuTitle
	share := 0.0
	if chunks > 0 {
		share = 100 * float64(junk) / float64(chunks)
	}
	fmt.Printf("path=%s files=%d failed=%d chunks=%d boilerplate=%d (help %d, menu %d, footer %d, menu-title %d) share=%.2f%% mangled-titles=%d\n",
		*path, len(files), failed, chunks, junk, help, menu, footer, menuTitle, share, mangled)
}

// isMenuTitle: ten words or fewer, made only of the page title's or the
// site name's words.
func isMenuTitle(text, title, site string) bool {
	words := strings.Fields(strings.ToLower(text))
	if len(words) == 0 || len(words) > 10 {
		return false
	}
	known := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(title + " " + site)) {
		known[w] = true
	}
	if len(known) == 0 {
		return false
	}
	for _, w := range words {
		if !known[w] {
			return false
		}
	}
	return true
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#39;", "'", "&#x27;", "'").Replace(s)
}
