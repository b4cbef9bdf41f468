package prefs

import (
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

var detectSeed = flag.Int64("prefs.seed", 0, "seed for randomized detection tests (0: use the clock)")

type positive struct {
	msg     string
	typ     Type
	content string
}

var positives = []positive{
	// expertise
	{"I'm a software engineer", Expertise, "User is a software engineer"},
	{"I am a data scientist.", Expertise, "User is a data scientist"},
	{"i'm an absolute beginner", Expertise, "User is an absolute beginner"},
	{"I’m a nurse, can you explain insulin?", Expertise, "User is a nurse"},
	{"Hi! I'm a high school teacher.", Expertise, "User is a high school teacher"},
	{"For context, I'm an ML engineer with 3 years experience", Expertise, "User is an ML engineer with 3 years experience"},
	{"I work as a product manager at a fintech startup.", Expertise, "User works as a product manager at a fintech startup"},
	{"I work as developer as well as designer", Expertise, "User works as developer as well as designer"},
	{"I'm working as a freelance translator", Expertise, "User is working as a freelance translator"},
	{"My job is teaching high school math.", Expertise, "User's job is teaching high school math"},
	{"My background is in physics.", Expertise, "User's background is in physics"},
	{"I have 5 years of experience in Go.", Expertise, "User has 5 years of experience in Go"},
	{"I've got over 10 years of professional experience with Kubernetes", Expertise, "User has over 10 years of professional experience with Kubernetes"},
	{"I'm new to programming", Expertise, "User is new to programming"},
	{"I've been a lawyer for 20 years", Expertise, "User has been a lawyer for 20 years"},
	{"btw im a junior dev", Expertise, "User is a junior dev"},
	{"I'm very familiar with PostgreSQL internals", Expertise, "User is very familiar with PostgreSQL internals"},
	{"Thanks! By the way, I'm a radiologist.", Expertise, "User is a radiologist"},
	{"Quick question. I'm a designer, so keep it visual.", Expertise, "User is a designer"},
	{"I AM A SOFTWARE ENGINEER", Expertise, "User is a SOFTWARE ENGINEER"},
	{"Some context about me:\n- I'm a nurse\n- I prefer short answers", Expertise, "User is a nurse"},
	{"I'm a software engineer with 5 years of experience, so keep it technical.", Expertise, "User is a software engineer with 5 years of experience"},
	{"I’m a Ph.D. student in chemistry", Expertise, "User is a Ph.D. student in chemistry"},
	{"Dr. Smith here. I'm a cardiologist.", Expertise, "User is a cardiologist"},
	{"I'm a \t software\u200b engineer\x00", Expertise, "User is a software engineer"},
	{"I'm a teacher and my students are 10 years old.", Expertise, "User is a teacher"},
	{"🎉 I'm a data engineer!", Expertise, "User is a data engineer"},
	{"私は学生です。I'm a 翻訳者。", Expertise, "User is a 翻訳者"},
	{"I have experience in Go", Expertise, "User has experience in Go"},
	{"i have 10+ yrs experience as a sysadmin", Expertise, "User has 10+ years of experience as a sysadmin"},
	// style
	{"explain like I'm 5", Style, "Explain like the user is 5 years old"},
	{"ELI5: how do vaccines work?", Style, "Explain like the user is 5 years old"},
	{"Can you ELI5 transformers?", Style, "Explain like the user is 5 years old"},
	{"Explain it to me as if I were a high school student.", Style, "Explain like the user is a high school student"},
	{"Can you explain it to me like I'm a complete beginner how RAG works?", Style, "Explain like the user is a complete beginner"},
	{"explain like I’m five", Style, "Explain like the user is five years old"},
	{"I prefer technical explanations", Style, "User prefers technical explanations"},
	{"I prefer technical, concise explanations.", Style, "User prefers technical, concise explanations"},
	{"I'd prefer answers with code examples.", Style, "User prefers answers with code examples"},
	{"I like short answers.", Style, "User prefers short answers"},
	{"I really like detailed, step-by-step explanations", Style, "User prefers detailed, step-by-step explanations"},
	{"Please always be concise.", Style, "User prefers concise answers"},
	{"please be more detailed", Style, "User prefers more detailed answers"},
	{"Keep it short.", Style, "User prefers short answers"},
	{"Keep your answers brief and to the point please", Style, "User prefers brief and to the point answers"},
	{"I like short but complete answers", Style, "User prefers short but complete answers"},
	{"Could you be more concise?", Style, "User prefers more concise answers"},
	{"Tell me like I'm 10", Style, "Explain like the user is 10 years old"},
	{"I like it when you give me short answers", Style, "User prefers short answers"},
	// domain
	{"I work in healthcare.", Domain, "User works in healthcare"},
	{"I work on distributed databases at a cloud company", Domain, "User works on distributed databases at a cloud company"},
	{"I'm working on a React Native project for my company.", Domain, "User is working on a React Native project for their company"},
	{"My field is computational biology.", Domain, "User's field is computational biology"},
	{"I'm really interested in distributed systems and consensus.", Domain, "User is interested in distributed systems and consensus"},
	{"I specialise in tax law.", Domain, "User specialises in tax law"},
	{"I specialize in pediatric oncology", Domain, "User specializes in pediatric oncology"},
	{"Hello there, my area of expertise is compilers", Domain, "User's area of expertise is compilers"},
	// custom
	{"Remember that I live in Berlin.", Custom, "User lives in Berlin"},
	{"Note that I'm colorblind.", Custom, "User is colorblind"},
	{"Please remember my name is Sam.", Custom, "User's name is Sam"},
	{"Keep in mind that I use Windows", Custom, "User uses Windows"},
	{"Remember that I don't eat meat", Custom, "User doesn't eat meat"},
	{"remember that I always study at night", Custom, "User always studies at night"},
	{"Always answer me in Spanish.", Custom, "Always answer the user in Spanish"},
	{"Never use emojis!", Custom, "Never use emojis"},
	{"From now on, always cite your sources.", Custom, "Always cite your sources"},
	{"Please never apologize for my typos", Custom, "Never apologize for the user's typos"},
	{"Would you please always cite sources?", Custom, "Always cite sources"},
	{"Can you remember that I'm vegetarian?", Custom, "User is vegetarian"},
	{"When you explain code, always add comments.", Custom, "Always add comments"},
	{"Could you keep it short?", Style, "User prefers short answers"},
}

var negatives = []string{
	"Am I a good fit?",
	"Are you a bot?",
	"I'm a bit confused",
	"I'm a little lost here.",
	"I am a bit tired today.",
	"I'm a tad annoyed",
	"I'm a few minutes late, sorry.",
	"I'm sorry, that was my mistake.",
	"I'm not sure what you mean.",
	"I am going to try that now.",
	"I'm trying to understand embeddings.",
	"I'm looking for a good tutorial.",
	"I'm in a meeting right now.",
	"If I were a doctor, I'd prefer short answers.",
	"If I were you, I'm a bit worried, my job is to help.",
	"Would I be a good engineer?",
	"Do you remember that I'm a nurse?",
	"Suppose I'm a beginner: where do I start?",
	"Imagine I'm a pirate.",
	"What if I'm a beginner?",
	"Let's say I'm a customer.",
	"I wish I were a programmer.",
	"When I'm a senior engineer I'll know this.",
	`My colleague said "I'm a genius" yesterday.`,
	"“I'm a doctor,” he said.",
	"She told me, I'm a liar.",
	"He said: I prefer cats.",
	"Translate this into French: I am a teacher.",
	"Here's what my boss wrote:\nI am a terrible manager and I prefer long meetings.",
	"> I'm a doctor and I approve this message",
	"```\nI'm a doctor\n```",
	"`I'm a developer` is what the placeholder says",
	"I'm a good fit for this role, right?",
	"Is it true that I'm a genius?",
	"Why do I prefer tea over coffee?",
	"What does ELI5 mean?",
	"Can you explain RAG?",
	"Do you always use Python?",
	"Never mind.",
	"Always the same error!",
	"I work on it tomorrow.",
	"I work in the morning.",
	"I prefer not to say.",
	"I like pizza.",
	"He is a software engineer.",
	"My friend prefers short answers.",
	"Remember the milk.",
	"Note to self: buy milk.",
	"Please note the deadline.",
	"Note that I'm not sure about this.",
	"I'm a huge fan of your work!",
	"I'm a ...",
	"I'm a bit of a perfectionist",
	"I'm an idiot, I forgot the semicolon",
	"My job is killing me",
	"My job is stressful.",
	"She's like, I'm a genius",
	"Summarize the following:\n\nI am a teacher. I prefer tea.",
	"Do you know I'm a nurse?",
	"What would you do if I'm a beginner?",
	"Remember when I said I'm a nurse?",
	"I like long walks on the beach",
	"I have 2 kids",
	"I work as fast as I can.",
	"I'm working as hard as possible on it",
	"Always check the logs first, the manual says.",
	"Never push on Fridays, my manager told me.",
	"",
	"   \n\t ",
}

func TestDetectPreferenceIntentPositives(t *testing.T) {
	if len(positives) < 40 {
		t.Fatalf("only %d positives", len(positives))
	}
	for _, tc := range positives {
		got := DetectPreferenceIntent(tc.msg)
		if got == nil {
			t.Errorf("DetectPreferenceIntent(%q) = nil, want %s %q", tc.msg, tc.typ, tc.content)
			continue
		}
		if got.Type != tc.typ || got.Content != tc.content {
			t.Errorf("DetectPreferenceIntent(%q) = %s %q, want %s %q", tc.msg, got.Type, got.Content, tc.typ, tc.content)
		}
		checkIntent(t, tc.msg, got)
	}
}

func TestDetectPreferenceIntentNegatives(t *testing.T) {
	if len(negatives) < 25 {
		t.Fatalf("only %d negatives", len(negatives))
	}
	for _, msg := range negatives {
		if got := DetectPreferenceIntent(msg); got != nil {
			t.Errorf("DetectPreferenceIntent(%q) = %s %q (match %q), want nil", msg, got.Type, got.Content, got.Match)
		}
	}
}

// checkIntent checks the invariants every Intent must satisfy.
func checkIntent(t *testing.T, msg string, in *Intent) {
	t.Helper()
	if _, err := ParseType(string(in.Type)); err != nil {
		t.Errorf("%q: invalid type %q", msg, in.Type)
	}
	if strings.TrimSpace(in.Content) == "" || in.Content != strings.TrimSpace(in.Content) {
		t.Errorf("%q: content %q empty or untrimmed", msg, in.Content)
	}
	if !utf8.ValidString(in.Content) {
		t.Errorf("%q: content %q is not valid UTF-8", msg, in.Content)
	}
	if n := utf8.RuneCountInString(in.Content); n > MaxIntentContent {
		t.Errorf("%q: content has %d runes", msg, n)
	}
	for _, r := range in.Content {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			t.Errorf("%q: content %q has control or format character %U", msg, in.Content, r)
		}
	}
	if in.Match == "" || !strings.Contains(msg, in.Match) {
		t.Errorf("%q: match %q is not a substring of the message", msg, in.Match)
	}
}

func TestDetectPreferenceIntentMatch(t *testing.T) {
	cases := []struct{ msg, match string }{
		{"Hi! I’m a nurse, can you explain insulin?", "I’m a nurse"},
		{"ELI5: how do vaccines work?", "ELI5"},
		{"So, I prefer short answers. Thanks!", "I prefer short answers"},
		{"I'm a \u200bsoftware engineer", "I'm a \u200bsoftware engineer"},
	}
	for _, tc := range cases {
		got := DetectPreferenceIntent(tc.msg)
		if got == nil || got.Match != tc.match {
			t.Errorf("DetectPreferenceIntent(%q) = %+v, want match %q", tc.msg, got, tc.match)
		}
	}
}

func TestDetectPreferenceIntentFirstStatementWins(t *testing.T) {
	got := DetectPreferenceIntent("I prefer short answers. I'm a nurse.")
	if got == nil || got.Type != Style || got.Content != "User prefers short answers" {
		t.Fatalf("got %+v, want the first statement", got)
	}
	// A negative sentence before a statement does not hide it.
	got = DetectPreferenceIntent("I'm a bit confused. I'm a physicist though.")
	if got == nil || got.Content != "User is a physicist" {
		t.Fatalf("got %+v", got)
	}
}

func TestDetectPreferenceIntentContentCap(t *testing.T) {
	long := "I'm a " + strings.Repeat("very ", 200) + "patient engineer"
	got := DetectPreferenceIntent(long)
	if got == nil {
		t.Fatal("no intent")
	}
	checkIntent(t, long, got)
	if n := utf8.RuneCountInString(got.Content); n > MaxIntentContent || n < MaxIntentContent-10 {
		t.Fatalf("content has %d runes, want close to %d", n, MaxIntentContent)
	}
	// Cut at a word boundary: every word is whole.
	for _, w := range strings.Fields(strings.TrimPrefix(got.Content, "User is a ")) {
		if w != "very" {
			t.Fatalf("partial word %q in %q", w, got.Content)
		}
	}
	// One huge word is cut inside the word rather than dropped.
	long = "I'm a " + strings.Repeat("x", 2000)
	got = DetectPreferenceIntent(long)
	if got == nil || utf8.RuneCountInString(got.Content) != MaxIntentContent {
		t.Fatalf("got %+v", got)
	}
	// Multi-byte text is cut on rune boundaries.
	long = "I'm a " + strings.Repeat("très ", 200)
	got = DetectPreferenceIntent(long)
	if got == nil || !utf8.ValidString(got.Content) || utf8.RuneCountInString(got.Content) > MaxIntentContent {
		t.Fatalf("got %+v", got)
	}
}

func TestDetectPreferenceIntentLongMessage(t *testing.T) {
	// A statement after 16 KiB of other text is not read; one before is.
	filler := strings.Repeat("This sentence is filler text. ", 600)
	if got := DetectPreferenceIntent(filler + "I'm a nurse."); got != nil {
		t.Fatalf("statement past the scan limit detected: %+v", got)
	}
	if got := DetectPreferenceIntent("I'm a nurse. " + filler); got == nil || got.Content != "User is a nurse" {
		t.Fatalf("got %+v", got)
	}
	// Adversarial shapes give sane results; their speed is measured by
	// BenchmarkDetectAdversarial, not timed here.
	for _, msg := range adversarialMessages {
		if in := DetectPreferenceIntent(msg); in != nil && (in.Content == "" || !strings.Contains(msg, in.Match)) {
			t.Errorf("%d-byte message starting %q: %+v", len(msg), msg[:20], in)
		}
	}
}

// adversarialMessages are shapes that would be slow for a scan that is not
// bounded and linear in the clause length.
var adversarialMessages = []string{
	strings.Repeat("I'm a bit, ", 1<<20),
	"I like " + strings.Repeat("short, ", 3000),
	"always use " + strings.Repeat("x ", 8000),
	strings.Repeat("hi so well ", 1500) + "I'm a nurse",
	strings.Repeat("a, I ", 3000),
	"explain like I'm " + strings.Repeat("a ", 8000),
	strings.Repeat("\"", 16000),
	strings.Repeat("🎉", 4000),
}

func BenchmarkDetectAdversarial(b *testing.B) {
	for _, msg := range adversarialMessages {
		b.Run(fmt.Sprintf("%.12q/%dB", msg, len(msg)), func(b *testing.B) {
			for b.Loop() {
				DetectPreferenceIntent(msg)
			}
		})
	}
}

// TestDetectPreferenceIntentComposed embeds table statements in random
// surroundings: greetings before, questions and chatter after. The statement
// must still be found, with the same content. The seed is printed.
func TestDetectPreferenceIntentComposed(t *testing.T) {
	seed := *detectSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -prefs.seed=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	before := []string{"", "Hi! ", "Hello. ", "Okay. ", "Thanks for the help earlier. ", "Quick note. ", "Good morning!\n", "I'm a bit confused. "}
	after := []string{"", " What is RAG?", " Thanks!", "\nCan you help me with embeddings?", " I'm not sure where to start.", " Anyway, let's continue."}
	for i := 0; i < 500; i++ {
		p := positives[rng.Intn(len(positives))]
		stmt := p.msg
		// Only single statements that end a sentence compose cleanly.
		if !strings.HasSuffix(stmt, ".") || strings.Contains(stmt, "\n") {
			continue
		}
		msg := before[rng.Intn(len(before))] + stmt + after[rng.Intn(len(after))]
		got := DetectPreferenceIntent(msg)
		if got == nil || got.Type != p.typ || got.Content != p.content {
			t.Fatalf("seed %d: DetectPreferenceIntent(%q) = %+v, want %s %q", seed, msg, got, p.typ, p.content)
		}
		checkIntent(t, msg, got)
	}
	for i := 0; i < 300; i++ {
		neg := negatives[rng.Intn(len(negatives))]
		pre := before[rng.Intn(len(before))]
		if pre != "" && (strings.HasPrefix(neg, ">") || strings.HasPrefix(neg, "```")) {
			pre += "\n" // these are line-level constructs
		}
		msg := pre + neg + after[rng.Intn(len(after))]
		if got := DetectPreferenceIntent(msg); got != nil {
			t.Fatalf("seed %d: DetectPreferenceIntent(%q) = %+v, want nil", seed, msg, got)
		}
	}
}

// TestDetectPreferenceIntentProfessions: "I'm a " or "I work as a " followed
// by a profession of one or more words (docs/spec.md, P10).
func TestDetectPreferenceIntentProfessions(t *testing.T) {
	for _, prefix := range []string{"I'm a ", "I work as a "} {
		for _, suffix := range []string{"pilot", "software engineer", "Go developer", "xyz", "data-scientist", "3D artist", "nurse practitioner in Ohio"} {
			msg := prefix + suffix
			got := DetectPreferenceIntent(msg)
			if got == nil || got.Type != Expertise || !strings.HasSuffix(got.Content, suffix) {
				t.Errorf("DetectPreferenceIntent(%q) = %+v", msg, got)
			}
		}
	}
}

func TestParseType(t *testing.T) {
	for in, want := range map[string]Type{
		"expertise": Expertise, "Style": Style, " DOMAIN ": Domain, "custom": Custom,
	} {
		got, err := ParseType(in)
		if err != nil || got != want {
			t.Errorf("ParseType(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "preference", "expert", "styles", "custom\x00"} {
		if got, err := ParseType(in); !errors.Is(err, ErrUnknownType) || got != "" {
			t.Errorf("ParseType(%q) = %q, %v; want ErrUnknownType", in, got, err)
		}
	}
}

func TestNormalizeMapsBack(t *testing.T) {
	msg := "A\u2019b\u200b  c\r\n\xff d\u2028e"
	n := normalize(msg)
	if n.s != "A'b c\nd\ne" {
		t.Fatalf("normalized %q", n.s)
	}
	// Every normalised byte maps back to the rune that produced it.
	if got := n.original(0, len(n.s)); got != msg {
		t.Fatalf("original = %q", got)
	}
	if got := n.original(1, 2); got != "\u2019" {
		t.Fatalf("original(1,2) = %q", got)
	}
}

func BenchmarkDetectPreferenceIntent(b *testing.B) {
	msgs := []string{
		"Hi! I'm a software engineer, so keep it technical. How does BM25 work?",
		"Can you explain how vector databases index embeddings? I'm not sure I follow the HNSW part.",
		strings.Repeat("This is a long pasted paragraph without any statement. ", 40),
	}
	for b.Loop() {
		for _, m := range msgs {
			DetectPreferenceIntent(m)
		}
	}
}

func FuzzDetectPreferenceIntent(f *testing.F) {
	for _, p := range positives {
		f.Add(p.msg)
	}
	for _, m := range negatives {
		f.Add(m)
	}
	f.Add("I'm a data scientist, explain like I'm new to Go. Always answer in Spanish.")
	f.Fuzz(func(t *testing.T, msg string) {
		in := DetectPreferenceIntent(msg)
		all := DetectPreferenceIntents(msg)
		if (in == nil) != (len(all) == 0) || (in != nil && all[0] != *in) {
			t.Fatalf("%q: the first of every statement %+v is not the statement %+v", msg, all, in)
		}
		if len(all) > maxIntents {
			t.Fatalf("%q: %d statements", msg, len(all))
		}
		for i := range all {
			checkIntent(t, msg, &all[i])
		}
	})
}

// TestDetectEveryStatement: a message with several statements yields each
// of them, in order, once.
func TestDetectEveryStatement(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want []string
	}{
		{"I'm a data scientist, explain like I'm new to Go", []string{"expertise: User is a data scientist", "style: Explain like the user is new to Go"}},
		{"I'm a nurse and I prefer short answers", []string{"expertise: User is a nurse", "style: User prefers short answers"}},
		{"Hi! I work in biotech. Always answer in Spanish. Remember that I use vim.",
			[]string{"domain: User works in biotech", "custom: Always answer in Spanish", "custom: User uses vim"}},
		{"I'm a nurse. I'm a nurse.", []string{"expertise: User is a nurse"}},
		{"I'm a bit confused. If I were a doctor, I'd prefer details.", nil},
		{"> I'm a pilot\nI prefer short answers", []string{"style: User prefers short answers"}},
	} {
		var got []string
		for _, in := range DetectPreferenceIntents(tc.msg) {
			got = append(got, string(in.Type)+": "+in.Content)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("DetectPreferenceIntents(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
	many := strings.Repeat("I'm a nurse. I prefer short answers. I work in biotech. Always answer in Spanish. ", 3)
	for i := range 30 {
		many += fmt.Sprintf("Remember that I own %d cats. ", i)
	}
	if n := len(DetectPreferenceIntents(many)); n != maxIntents {
		t.Errorf("%d statements, want the bound %d", n, maxIntents)
	}
}

func ExampleDetectPreferenceIntent() {
	for _, msg := range []string{
		"Hi! I'm a software engineer, so keep it technical.",
		"Explain like I'm 5: what is a vector database?",
		"I prefer technical, concise explanations.",
		"From now on, always answer me in Spanish.",
		"I'm a bit confused by this error.",
		"If I were a doctor, I'd prefer short answers.",
	} {
		if in := DetectPreferenceIntent(msg); in != nil {
			fmt.Printf("%-9s %s\n", in.Type, in.Content)
		} else {
			fmt.Println("none")
		}
	}
	// Output:
	// expertise User is a software engineer
	// style     Explain like the user is 5 years old
	// style     User prefers technical, concise explanations
	// custom    Always answer the user in Spanish
	// none
	// none
}
