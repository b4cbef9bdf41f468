package chunk

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The title a heading line gives the heading path: the closing #s dropped
// (only after a space), code spans kept, links and images reduced to their
// text, emphasis and escapes removed. A line that is not a heading gives no
// path.
func TestMarkdownHeadingTitles(t *testing.T) {
	for _, c := range []struct {
		line string
		want []string // nil: not a heading
	}{
		{"# Title", []string{"Title"}},
		{"# Title #", []string{"Title"}},
		{"# Title ###", []string{"Title"}},
		{"# Title\t#", []string{"Title"}},
		{"# Title#", []string{"Title#"}},
		{"# C#", []string{"C#"}},
		{"# #", nil}, // an empty title is left out of the path
		{"##", nil},
		{"#", nil},
		{"#\tTabbed", []string{"Tabbed"}},
		{"###### Six", []string{"Six"}},
		{"####### Seven", nil},
		{"#hashtag", nil},
		{"   ## Indented three", []string{"Indented three"}},
		{"    ## Indented four", nil},
		{"# `a` and ``b`c``", []string{"a and b`c"}},
		{"# Unclosed `code", []string{"Unclosed code"}},
		{"# Ends with ``", []string{"Ends with"}},
		{"# [Link](http://x) text", []string{"Link text"}},
		{"# ![Alt *text*](p.png) after", []string{"Alt text after"}},
		{"# [not a link] (x)", []string{"[not a link] (x)"}},
		{"# [open](no close", []string{"[open](no close"}},
		{"# [x]", []string{"[x]"}},
		{"# a]b[c](d)", []string{"a]bc"}},
		{"# Bang! [a](b)", []string{"Bang! a"}},
		{"# \\*not emphasis\\* \\a", []string{"*not emphasis* \\a"}},
		{"# Ends with \\", []string{"Ends with \\"}},
		{"# *emph* and __strong__, snake_case and 2*3", []string{"emph and strong, snake_case and 2*3"}},
		{"# _a_*b*", []string{"ab"}},
		{"# x**y**z", []string{"x**y**z"}},
		{"# **bold**.", []string{"bold."}},
		{"# (*a*)", []string{"(a)"}},
	} {
		src := c.line + "\n\nBody text.\n"
		chunks := Split(src, Markdown, nil)
		if len(chunks) == 0 {
			t.Errorf("%q: no chunks", c.line)
			continue
		}
		if got := chunks[len(chunks)-1].HeadingPath; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: heading path %q, want %q", c.line, got, c.want)
		}
	}
}

// Which lines after a paragraph line make it a setext heading: a run of '='
// (level 1) or '-' (level 2) and nothing else, under a plain paragraph (not
// a list item, not indented code).
func TestMarkdownSetext(t *testing.T) {
	for _, c := range []struct {
		src  string
		want []string
	}{
		{"Title\n===\n\nBody.", []string{"Title"}},
		{"Title\n=\n\nBody.", []string{"Title"}},
		{"Title\n---\n\nBody.", []string{"Title"}},
		{"Two\nlines\n--\n\nBody.", []string{"Two lines"}},
		{"Title\n=-=\n\nBody.", nil},
		{"Title\n-5 degrees\n\nBody.", nil},
		{"Title\n==x\n\nBody.", nil},
		{"- item\n---\n\nBody.", nil},
		{"    code\n---\n\nBody.", nil},
		{"Title\n    ===\n\nBody.", nil},
	} {
		chunks := Split(c.src, Markdown, nil)
		if got := chunks[len(chunks)-1].HeadingPath; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: heading path %q, want %q", c.src, got, c.want)
		}
	}
}

// Fences, comments, thematic breaks and front matter: which lines are
// headings, and where blocks begin and end (a chunk never starts or ends on
// the whitespace around a block, indented or not).
func TestMarkdownBlocks(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      []string // each chunk: its heading path, then its text
	}{
		{"indented fence", "Intro.\n\n  ```\n  # not a heading\n  ```\n\n# H\n\nBody.",
			[]string{"[] Intro.\n\n  ```\n  # not a heading\n  ```", "[H] # H\n\nBody."}},
		{"unclosed fence ends at its last text", "# H\n\n```\ncode\n\n\n   \n",
			[]string{"[H] # H\n\n```\ncode"}},
		{"fence alone", "# H\n\n```", []string{"[H] # H\n\n```"}},
		{"tilde fence closed by a longer one", "~~~~\n# no\n~~~\n# no\n~~~~~\n# Yes\n\nBody.",
			[]string{"[] ~~~~\n# no\n~~~\n# no\n~~~~~", "[Yes] # Yes\n\nBody."}},
		{"a fence is not closed by text after it", "```\n# no\n``` x\n# no\n```\n# Yes",
			[]string{"[] ```\n# no\n``` x\n# no\n```", "[Yes] # Yes"}},
		{"inline code is no fence", "```x```\n# Yes", []string{"[] ```x```", "[Yes] # Yes"}},
		{"two backticks are no fence", "``\n# Yes", []string{"[] ``", "[Yes] # Yes"}},
		{"indented comment", "Intro.\n\n   <!-- c\n# no\n-->\n# Yes",
			[]string{"[] Intro.\n\n   <!-- c\n# no\n-->", "[Yes] # Yes"}},
		{"one-line comment", "<!-- c -->\n# Yes", []string{"[] <!-- c -->", "[Yes] # Yes"}},
		{"comment closed on its line only after its start", "<!-->\n# no\n-->\n# Yes",
			[]string{"[] <!-->\n# no\n-->", "[Yes] # Yes"}},
		{"comment indented four is text", "Intro.\n\n    <!--\n# Yes\n-->",
			[]string{"[] Intro.\n\n    <!--", "[Yes] # Yes\n-->"}},
		{"thematic break", "Para one.\n***\nPara two.", []string{"[] Para one.\n***\nPara two."}},
		{"a thematic break ends a paragraph", "Para.\n***\nTitle\n---\n\nBody.", []string{"[] Para.\n***", "[Title] Title\n---\n\nBody."}},
		{"a spaced break", "Para.\n_ _ _\nTitle\n---", []string{"[] Para.\n_ _ _", "[Title] Title\n---"}},
		{"mixed marks are no break", "Para.\n*-*\nTitle\n---", []string{"[Para. - Title] Para.\n*-*\nTitle\n---"}},
		{"two marks are no break", "Para.\n**\nTitle\n---", []string{"[Para. Title] Para.\n**\nTitle\n---"}},
		{"a break indented four is text", "Para.\n    ***\nTitle\n---", []string{"[Para. Title] Para.\n    ***\nTitle\n---"}},
		{"an indented break first", "  ***\nPara.", []string{"[] ***\nPara."}},
		{"an indented fence first", "  ```\n  code\n  ```", []string{"[] ```\n  code\n  ```"}},
		{"an indented comment first", "  <!-- c -->\n# Yes", []string{"[] <!-- c -->", "[Yes] # Yes"}},
		{"a break is not an underline after a list", "- a\n* * *\n# H", []string{"[] - a\n* * *", "[H] # H"}},
		{"front matter", "---\ntitle: x\n---\n# H\n\nBody.", []string{"[] ---\ntitle: x\n---", "[H] # H\n\nBody."}},
		{"front matter closed by dots", "---\na: 1\n...\n# H", []string{"[] ---\na: 1\n...", "[H] # H"}},
		{"unclosed front matter is text", "---\n# H", []string{"[] ---", "[H] # H"}},
		{"indented heading", "Intro.\n\n  ## Two\n\nBody.", []string{"[] Intro.", "[Two] ## Two\n\nBody."}},
		{"tab-indented heading is code", "Intro.\n\n\t# No\n\nBody.", []string{"[] Intro.\n\n\t# No\n\nBody."}},
		{"heading after spaces and a tab", "Intro.\n\n \t# No", []string{"[] Intro.\n\n \t# No"}},
	} {
		chunks := Split(c.src, Markdown, &Options{MaxTokens: 1000})
		var got []string
		for _, ch := range chunks {
			got = append(got, fmt.Sprintf("[%s] %s", strings.Join(ch.HeadingPath, "/"), ch.Text))
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: chunks\n%q\nwant\n%q", c.name, got, c.want)
		}
		if err := checkVerbatim(c.src, chunks, (&Options{MaxTokens: 1000}).settings()); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
