package chunk_test

import (
	"fmt"

	"github.com/ragmem/ragmem/chunk"
)

func ExampleSplit() {
	src := `# Install

Download the archive and unpack it. Dr. Smith keeps v1.2.3 on the U.S. mirror.

## Linux

` + "```sh" + `
# not a heading: a shell comment
make install
` + "```" + `

Then run ragmem --help. It prints every flag. The index lives in ~/.ragmem by default. Delete it to start over.
`
	for _, c := range chunk.Split(src, chunk.Markdown, &chunk.Options{MaxTokens: 20, Overlap: 8}) {
		fmt.Printf("#%d %q [%d:%d] %d tokens\n%s\n\n", c.Index, c.HeadingPath, c.Start, c.End, c.Tokens, c.Text)
	}
	// Output:
	// #0 ["Install"] [0:46] 10 tokens
	// # Install
	//
	// Download the archive and unpack it.
	//
	// #1 ["Install"] [47:89] 17 tokens
	// Dr. Smith keeps v1.2.3 on the U.S. mirror.
	//
	// #2 ["Install" "Linux"] [91:156] 19 tokens
	// ## Linux
	//
	// ```sh
	// # not a heading: a shell comment
	// make install
	// ```
	//
	// #3 ["Install" "Linux"] [158:203] 12 tokens
	// Then run ragmem --help. It prints every flag.
	//
	// #4 ["Install" "Linux"] [182:244] 15 tokens
	// It prints every flag. The index lives in ~/.ragmem by default.
	//
	// #5 ["Install" "Linux"] [220:269] 13 tokens
	// in ~/.ragmem by default. Delete it to start over.
}

func ExampleSentences() {
	text := `Dr. Smith paid 3.14 dollars for v1.2.3, e.g. the CLI. He said "Stop." Then he left... and came back! 日本語です。次。`
	for _, s := range chunk.Sentences(text) {
		fmt.Println(text[s.Start:s.End])
	}
	// Output:
	// Dr. Smith paid 3.14 dollars for v1.2.3, e.g. the CLI.
	// He said "Stop."
	// Then he left... and came back!
	// 日本語です。
	// 次。
}

func ExampleExtractHTML() {
	page := `<html><head><title>Notes &amp; tips</title><script>track()</script></head>
<body><nav><a href="/">Home</a></nav>
<h1>Tips</h1><p>Use <b>short</b> sentences.</p><ul><li>One idea<li>per line</ul>
<footer>© 2026</footer></body></html>`
	text, title := chunk.ExtractHTML(page)
	fmt.Printf("title: %s\n%s\n", title, text)
	// Output:
	// title: Notes & tips
	// Tips
	//
	// Use short sentences.
	//
	// One idea
	//
	// per line
}
