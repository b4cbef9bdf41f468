package chunk

import (
	"reflect"
	"testing"
)

func sentenceTexts(text string) []string {
	var out []string
	for _, s := range Sentences(text) {
		out = append(out, text[s.Start:s.End])
	}
	return out
}

func TestSentences(t *testing.T) {
	cases := []struct {
		name string
		text string
		want []string
	}{
		{"empty", "", nil},
		{"blank", " \n\t ", nil},
		{"one unterminated", "  hello world  ", []string{"hello world"}},
		{"simple", "One. Two! Three? Four", []string{"One.", "Two!", "Three?", "Four"}},
		{"newline after terminator", "First line.\nSecond line.", []string{"First line.", "Second line."}},
		{"paragraph without terminator is not a boundary", "Title\n\nBody text.", []string{"Title\n\nBody text."}},
		{"e.g. and i.e.", "Use a tool, e.g. grep, i.e. a searcher. Done.", []string{"Use a tool, e.g. grep, i.e. a searcher.", "Done."}},
		{"titles", "Dr. Smith met Mr. Jones and Mrs. Lee. Prof. Brown came too.", []string{"Dr. Smith met Mr. Jones and Mrs. Lee.", "Prof. Brown came too."}},
		{"U.S. and U.K.", "The U.S. Army and the U.K. Navy met. They talked.", []string{"The U.S. Army and the U.K. Navy met.", "They talked."}},
		{"etc. mid-sentence", "Bring pens, paper, etc. and a laptop.", []string{"Bring pens, paper, etc. and a laptop."}},
		{"etc. ends a sentence before a capital", "We sell apples, pears, etc. The shop opens at nine.", []string{"We sell apples, pears, etc.", "The shop opens at nine."}},
		{"vs.", "It was Go vs. Rust. Go won.", []string{"It was Go vs. Rust.", "Go won."}},
		{"Fig.", "See Fig. 3 for details. Then read on.", []string{"See Fig. 3 for details.", "Then read on."}},
		{"No. before a number", "Item No. 5 is here. No. That is wrong.", []string{"Item No. 5 is here.", "No.", "That is wrong."}},
		{"Inc.", "Acme Inc. is big. Acme Inc. It grows.", []string{"Acme Inc. is big.", "Acme Inc.", "It grows."}},
		{"decimal", "Pi is 3.14 roughly. Yes.", []string{"Pi is 3.14 roughly.", "Yes."}},
		{"decimal at end", "Pi is about 3.14. Next.", []string{"Pi is about 3.14.", "Next."}},
		{"version", "Install v1.2.3 now. It works with go1.26.", []string{"Install v1.2.3 now.", "It works with go1.26."}},
		{"version at end", "We shipped v1.2.3. Upgrade soon.", []string{"We shipped v1.2.3.", "Upgrade soon."}},
		{"URL", "Visit https://example.com/a.html?x=1. Then stop.", []string{"Visit https://example.com/a.html?x=1.", "Then stop."}},
		{"URL inside", "Open example.com/docs in a browser. Read it.", []string{"Open example.com/docs in a browser.", "Read it."}},
		{"email", "Mail bob.smith@example.co.uk today. Thanks.", []string{"Mail bob.smith@example.co.uk today.", "Thanks."}},
		{"email at end", "Write to bob@example.com. He answers.", []string{"Write to bob@example.com.", "He answers."}},
		{"ellipsis lower", "Wait... what happened? Nothing.", []string{"Wait... what happened?", "Nothing."}},
		{"ellipsis upper", "I wonder... Maybe not.", []string{"I wonder...", "Maybe not."}},
		{"unicode ellipsis", "He paused… Then he left. And… so on.", []string{"He paused…", "Then he left.", "And… so on."}},
		{"closing quote", `He said "Stop." Then he left.`, []string{`He said "Stop."`, "Then he left."}},
		{"closing quote lower", `"Stop!" he said. Then he left.`, []string{`"Stop!" he said.`, "Then he left."}},
		{"curly quotes", "She wrote “Done.” We cheered.", []string{"She wrote “Done.”", "We cheered."}},
		{"closing bracket", "It works (mostly.) Really!", []string{"It works (mostly.)", "Really!"}},
		{"opening quote next", `It ended. "Next," he said.`, []string{"It ended.", `"Next," he said.`}},
		{"terminator runs", "Really?! Yes!!! Ok.", []string{"Really?!", "Yes!!!", "Ok."}},
		{"CJK", "今日は晴れです。明日は雨！本当？はい", []string{"今日は晴れです。", "明日は雨！", "本当？", "はい"}},
		{"CJK quote inside a sentence", "彼は「行く。」と言った。次。", []string{"彼は「行く。」と言った。", "次。"}},
		{"CJK quote ends a sentence", "「行く。」 次。（注。）", []string{"「行く。」", "次。", "（注。）"}},
		{"CJK and Latin", "This is English. これは日本語です。OK.", []string{"This is English.", "これは日本語です。", "OK."}},
		{"initials", "J. R. R. Tolkien wrote books. They sold.", []string{"J. R. R. Tolkien wrote books.", "They sold."}},
		{"pronoun I", "So did I. Then we left.", []string{"So did I.", "Then we left."}},
		{"list markers", "1. Install it.\n2. Run it.", []string{"1. Install it.", "2. Run it."}},
		{"number ends sentence", "I counted to 3. Then I stopped.", []string{"I counted to 3.", "Then I stopped."}},
		{"markdown emphasis", "**Note.** Read this. *Done.* Yes.", []string{"**Note.**", "Read this.", "*Done.*", "Yes."}},
		{"no space after period", "Hello.World is a name. Ok.", []string{"Hello.World is a name.", "Ok."}},
		{"trailing whitespace", "One.  Two.  \n", []string{"One.", "Two."}},
		{"a.m. and p.m.", "Open 9 a.m. to 5 p.m. daily. Closed Sunday.", []string{"Open 9 a.m. to 5 p.m. daily.", "Closed Sunday."}},
		{"nbsp and ideographic space", "One.\u00a0Two.\u3000Three.", []string{"One.", "Two.", "Three."}},
		{"invalid utf8", "Bad \xff byte. Next \xfe.", []string{"Bad \xff byte.", "Next \xfe."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := sentenceTexts(c.text)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Sentences(%q)\n got %q\nwant %q", c.text, got, c.want)
			}
			if err := checkSentences(c.text); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestSentencesSpansAreOffsets(t *testing.T) {
	text := "  Alpha beta.   Gamma!\n\nDelta"
	want := []Span{{2, 13}, {16, 22}, {24, 29}}
	if got := Sentences(text); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// The edges the mutation run found unchecked: two dots are an ellipsis,
// list markers "a.", "0." and "9." (also indented), and a title after an
// opening bracket.
func TestSentencesEdges(t *testing.T) {
	cases := []struct {
		name string
		text string
		want []string
	}{
		{"two dots before a lower-case word", "Wait.. what is this?", []string{"Wait.. what is this?"}},
		{"letter list marker", "Fruit:\na. Apples are red.", []string{"Fruit:\na. Apples are red."}},
		{"indented number list marker", "Steps:\n  1. Open the file.", []string{"Steps:\n  1. Open the file."}},
		{"tab-indented list marker", "Steps:\n\t2. Save it.", []string{"Steps:\n\t2. Save it."}},
		{"list marker 0", "Steps:\n0. Read this.", []string{"Steps:\n0. Read this."}},
		{"list marker 9", "Steps:\n9. Close it.", []string{"Steps:\n9. Close it."}},
		{"a number that is no list marker", "I counted 9. Then I left.", []string{"I counted 9.", "Then I left."}},
		{"title after a bracket", "He met (Dr. Smith) today. Then he left.", []string{"He met (Dr. Smith) today.", "Then he left."}},
	}
	for _, c := range cases {
		if got := sentenceTexts(c.text); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
