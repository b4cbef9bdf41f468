//go:build ignore

// Boilerplate measures how much of what ragmem stores from a folder of HTML
// documentation pages is page furniture: navigation, menus, footers and
// help pop-ups rather than content.
//
//	go run scripts/boilerplate.go [-path store|chunk|extract] [-v] DIR...
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
//   - is a menu title: ten words or fewer, all of them words of the page's
//     <title> (article and site name: a bar that repeats "The Rust
//     Programming Language").
//
// -path store indexes the files into a temporary store exactly as `ragmem
// index` does (index.Document{Format: chunk.HTML}: the one HTML path) and
// reads the stored chunks back; -path chunk is the HTML path `ragmem index`
// took before it was unified (chunk.HTML's own cleaner on the raw page, the
// title from chunk.ExtractHTML); -path extract is extract.HTML then
// chunk.HTML without a store. All use the chunker's defaults. The result line gives the
// chunks, the boilerplate chunks by kind and their share, and the titles
// that lost their start (a title that is not a suffix-trimmed form of the
// page's <title>).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/extract"
	"github.com/ragmem/ragmem/internal/index/engine"
)

var (
	helpRe   = regexp.MustCompile(`(?i)keyboard shortcuts|press\s+\S{1,8}\s+(or\s+\S{1,8}\s+)?to\s+(navigate|search|show|hide|close)|search tricks|prefix searches with a type`)
	menuRe   = regexp.MustCompile(`(?i)print this book|git repository|suggest an edit|toggle table of contents|change theme|\b(light|rust|coal|navy|ayu)\s+(light|rust|coal|navy|ayu)\b`)
	footerRe = regexp.MustCompile(`(?i)©|copyright\b|all rights reserved`)
	titleRe  = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
)

func main() {
	path := flag.String("path", "store", "store, chunk or extract: the HTML path measured")
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
	if *path == "store" {
		var texts, titles []string
		texts, titles, failed, mangled = storeChunks(files)
		for i, text := range texts {
			chunks++
			measure(text, titles[i], &help, &menu, &footer, &menuTitle, *verbose)
		}
		report(*path, len(files), failed, chunks, help, menu, footer, menuTitle, mangled)
		return
	}
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
		case "chunk":
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
			fmt.Fprintln(os.Stderr, "-path is store, chunk or extract")
			os.Exit(2)
		}
		if pageTitle != "" && !strings.HasPrefix(pageTitle, strings.TrimSpace(title)) {
			mangled++
			if *verbose {
				fmt.Printf("TITLE %s: %q from %q\n", f, title, pageTitle)
			}
		}
		for _, c := range chunk.Split(content, chunk.HTML, nil) {
			chunks++
			measure(c.Text, pageTitle, &help, &menu, &footer, &menuTitle, *verbose)
		}
	}
	report(*path, len(files), failed, chunks, help, menu, footer, menuTitle, mangled)
}

// measure classifies one chunk of a page whose <title> is pageTitle by the
// rule in the package comment.
func measure(text, pageTitle string, help, menu, footer, menuTitle *int, verbose bool) {
	text = strings.Join(strings.Fields(text), " ")
	kind := ""
	switch {
	case helpRe.MatchString(text):
		kind = "help"
		*help++
	case menuRe.MatchString(text):
		kind = "menu"
		*menu++
	case footerRe.MatchString(text):
		kind = "footer"
		*footer++
	case isMenuTitle(text, pageTitle, ""):
		kind = "menu-title"
		*menuTitle++
	}
	if kind != "" && verbose {
		fmt.Printf("%s: %.120q\n", kind, text)
	}
}

func report(path string, files, failed, chunks, help, menu, footer, menuTitle, mangled int) {
	junk := help + menu + footer + menuTitle
	share := 0.0
	if chunks > 0 {
		share = 100 * float64(junk) / float64(chunks)
	}
	fmt.Printf("path=%s files=%d failed=%d chunks=%d boilerplate=%d (help %d, menu %d, footer %d, menu-title %d) share=%.2f%% mangled-titles=%d\n",
		path, files, failed, chunks, junk, help, menu, footer, menuTitle, share, mangled)
}

// storeChunks indexes the files into a temporary store as `ragmem index`
// does (lexical embedder) and returns the stored chunks' texts with their
// pages' <title>s, and how many titles lost their start.
func storeChunks(files []string) (texts, pageTitles []string, failed, mangled int) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "ragmem-boilerplate-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ix, err := engine.Open(ctx, dir, &engine.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	defer ix.Close()
	raw := map[string]string{}
	for lo := 0; lo < len(files); lo += 64 {
		var docs []index.Document
		for _, f := range files[lo:min(lo+64, len(files))] {
			data, err := os.ReadFile(f)
			if err != nil {
				failed++
				continue
			}
			u := "file://" + f
			if m := titleRe.FindSubmatch(data); m != nil {
				raw[u] = strings.Join(strings.Fields(htmlUnescape(string(m[1]))), " ")
			}
			docs = append(docs, index.Document{SourceURL: u, Content: string(data), Format: chunk.HTML})
		}
		rs, err := ix.AddMany(ctx, docs)
		if err != nil {
			panic(err)
		}
		for _, r := range rs {
			if r.Err != nil {
				failed++
			}
		}
	}
	recs, err := ix.Records(ctx, index.Filter{})
	if err != nil {
		panic(err)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		texts = append(texts, r.Content)
		pageTitles = append(pageTitles, raw[r.SourceURL])
		if !seen[r.SourceURL] {
			seen[r.SourceURL] = true
			if t := raw[r.SourceURL]; t != "" && !strings.HasPrefix(t, r.Title) {
				mangled++
			}
		}
	}
	return texts, pageTitles, failed, mangled
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
