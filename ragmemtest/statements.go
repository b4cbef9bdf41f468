package ragmemtest

import (
	"strings"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"

	"github.com/ragmem/ragmem/prefs"
)

// Statement is a generated chat message that states a preference, with what
// preference detection must find in it.
type Statement struct {
	Message string
	Type    prefs.Type // the type detection must report
	Content string     // the content detection must extract
	// Match is the words of the message that state the preference, as
	// written: what detection must report as Intent.Match.
	Match string

	spec [5]int // lead, form, object, tail, casing: what the message was built from
}

var (
	stmtLeads = []string{"", "Hi! ", "Hello, ", "Hey there, ", "btw ", "By the way, ", "FYI, ", "For context, ",
		"Just so you know, ", "Okay so ", "Honestly, ", "Quick note: ", "👋 ", "- ", "Thanks! ", "Good morning. ",
		"I have a question about caching. ", "Sorry for the long message. ", "So, ", "Also, ", "(Side note) ",
		"Long day; ", "One thing — ", "Good question - ", "Ticket 42: ", "Hello \n",
		"Here's the article https://example.com/post - ", "Summarize the notes from 10:30 later. ", "So -\n",
		"Thanks for tips 1 and 2,\n", "Got it. , ", "Thanks for tips 1 and 2, "}
	stmtTails = []string{"", ".", "!", " and I need help with my project.", ", so keep that in mind.", " :)",
		". What is a vector index?", " - thanks!", ".\n\nCan you help me with a query?", ", can you help me with a query?",
		" :3", " \nCan you help me with a query?"}
	professions = []string{"software engineer", "data scientist", "nurse", "teacher", "product manager", "physicist",
		"backend developer", "student", "lawyer", "graphic designer", "site reliability engineer", "chef",
		"accountant", "electrician", "historian", "UX researcher", "civil engineer", "pharmacist",
		"big data engineer", "front- and back-end developer"}
	fields = []string{"healthcare", "machine learning", "embedded systems", "cybersecurity", "finance",
		"genomics", "game development", "logistics", "climate science", "web accessibility"}
	tools  = []string{"Go", "Kubernetes", "PostgreSQL", "Rust", "React", "Terraform", "pandas", "Linux"}
	levels = []string{"5", "a beginner", "a child", "ten", "new to this", "a high school student", "an intern"}
	styles = []string{"short answers", "code examples", "technical explanations", "bullet points",
		"answers with examples", "detailed explanations", "concise replies", "step-by-step instructions"}
	styleAdjs = []string{"concise", "brief", "detailed", "direct", "technical", "simple"}
	// facts are what a user asks the assistant to remember, from the
	// subject on ("I …", "I've …", "my …"), with what detection must store.
	facts = [][2]string{{"I live in Berlin", "User lives in Berlin"}, {"I use Windows at work", "User uses Windows at work"},
		{"I have two cats", "User has two cats"}, {"I work night shifts", "User works night shifts"}, {"I am colour-blind", "User is colour-blind"},
		{"I code mostly in Python", "User codes mostly in Python"}, {"I watch my weight", "User watches their weight"},
		{"I do not eat meat", "User does not eat meat"}, {"I always drink tea at night", "User always drinks tea at night"},
		{"I fix bugs on weekends", "User fixes bugs on weekends"}, {"I study Japanese", "User studies Japanese"},
		{"I play in a band", "User plays in a band"}, {"I deploy with my team", "User deploys with their team"},
		{"I ask a lot of questions", "User asks a lot of questions"}, {"I organize my notes by date", "User organizes their notes by date"},
		{"I think I am too slow", "User thinks they are too slow"},
		{"I start work at 9:30", "User starts work at 9:30"}, {"I keep notes at https://notes.example.com/me every day", "User keeps notes at https://notes.example.com/me every day"},
		{"I finish work at 10:05", "User finishes work at 10:05"}, {"I can not swim", "User can not swim"}, {"I do", "User does"},
		{"I wake up at 7:00", "User wakes up at 7:00"}, {"I re-use my notes", "User re-uses their notes"},
		{"I ❤️ Go", "User ❤ Go"}, {"my wife codes more than I", "User's wife codes more than they"},
		{"I've moved to Lyon", "User has moved to Lyon"}, {"I'd rather not use Windows", "User would rather not use Windows"},
		{"I'll be on leave in May", "User will be on leave in May"}}
	languages = []string{"Spanish", "French", "German", "Portuguese", "plain English"}
	avoid     = []string{"jargon", "emojis", "passive voice", "tables", "exclamation marks", "rm -rf"}
)

func article(w string) string {
	if strings.ContainsRune("aeiouAEIOU", rune(w[0])) && !strings.HasPrefix(w, "UX") {
		return "an"
	}
	if strings.HasPrefix(w, "UX") {
		return "a"
	}
	return "a"
}

func pick(list []string, i int) string { return list[mod(i, len(list))] }

// mod is i modulo n, never negative: gopter's shrinkers can try values
// below a range's minimum, and a builder must not panic on them.
func mod(i, n int) int { return (i%n + n) % n }

// stmtForms build a statement from an object index: the message body, its
// type and the content detection must extract from it.
var stmtForms = []func(o int) (string, prefs.Type, string){
	func(o int) (string, prefs.Type, string) {
		p := pick(professions, o)
		return "I'm " + article(p) + " " + p, prefs.Expertise, "User is " + article(p) + " " + p
	},
	func(o int) (string, prefs.Type, string) {
		p := pick(professions, o)
		return "I am " + article(p) + " " + p, prefs.Expertise, "User is " + article(p) + " " + p
	},
	func(o int) (string, prefs.Type, string) {
		p := pick(professions, o)
		return "I'm actually " + article(p) + " " + p + " by training", prefs.Expertise, "User is " + article(p) + " " + p + " by training"
	},
	func(o int) (string, prefs.Type, string) {
		p := pick(professions, o)
		return "I work as " + article(p) + " " + p, prefs.Expertise, "User works as " + article(p) + " " + p
	},
	func(o int) (string, prefs.Type, string) {
		p := pick(professions, o)
		return "I'm currently working as " + article(p) + " " + p, prefs.Expertise, "User is working as " + article(p) + " " + p
	},
	func(o int) (string, prefs.Type, string) {
		p, n := pick(professions, o), pick([]string{"3", "ten", "twenty"}, o)
		return "I've been " + article(p) + " " + p + " for " + n + " years", prefs.Expertise, "User has been " + article(p) + " " + p + " for " + n + " years"
	},
	func(o int) (string, prefs.Type, string) {
		p := pick(professions, o)
		return "My job title is " + p, prefs.Expertise, "User's job title is " + p
	},
	func(o int) (string, prefs.Type, string) {
		p, n := pick(professions, o), pick([]string{"5", "over 10", "a few"}, o)
		return "I have " + n + " years of experience as " + article(p) + " " + p, prefs.Expertise,
			"User has " + n + " years of experience as " + article(p) + " " + p
	},
	func(o int) (string, prefs.Type, string) {
		f := pick(fields, o)
		return "I'm new to " + f, prefs.Expertise, "User is new to " + f
	},
	func(o int) (string, prefs.Type, string) {
		t, how := pick(tools, o), pick([]string{"experienced with", "proficient in", "familiar with", "very comfortable with"}, o)
		return "I'm " + how + " " + t, prefs.Expertise, "User is " + how + " " + t
	},
	func(o int) (string, prefs.Type, string) {
		l := pick(levels, o)
		return "Explain like I'm " + l, prefs.Style, "Explain like the user is " + explained(l)
	},
	func(o int) (string, prefs.Type, string) {
		l := pick(levels, o)
		return "Can you explain it to me like I'm " + l + "?", prefs.Style, "Explain like the user is " + explained(l)
	},
	func(o int) (string, prefs.Type, string) {
		return "ELI5 how " + pick(fields, o) + " works", prefs.Style, "Explain like the user is 5 years old"
	},
	func(o int) (string, prefs.Type, string) {
		l := pick(levels, o)
		return "Explain like I'm " + l + " how " + pick(fields, o+3) + " works", prefs.Style, "Explain like the user is " + explained(l)
	},
	func(o int) (string, prefs.Type, string) {
		s := pick(styles, o)
		return "I prefer " + s, prefs.Style, "User prefers " + s
	},
	func(o int) (string, prefs.Type, string) {
		s := pick(styles, o)
		return "I'd much prefer " + s, prefs.Style, "User prefers " + s
	},
	func(o int) (string, prefs.Type, string) {
		a := pick(styleAdjs, o)
		return "I really like " + a + " answers", prefs.Style, "User prefers " + a + " answers"
	},
	func(o int) (string, prefs.Type, string) {
		a := pick(styleAdjs, o)
		return "Please be " + a, prefs.Style, "User prefers " + a + " answers"
	},
	func(o int) (string, prefs.Type, string) {
		a := pick([]string{"short", "brief", "simple", "concise"}, o)
		return "Keep your answers " + a, prefs.Style, "User prefers " + a + " answers"
	},
	func(o int) (string, prefs.Type, string) {
		f := pick(fields, o)
		return "I work in " + f, prefs.Domain, "User works in " + f
	},
	func(o int) (string, prefs.Type, string) {
		f := pick(fields, o)
		return "I'm working on a " + f + " project", prefs.Domain, "User is working on a " + f + " project"
	},
	func(o int) (string, prefs.Type, string) {
		f := pick(fields, o)
		return "My field is " + f, prefs.Domain, "User's field is " + f
	},
	func(o int) (string, prefs.Type, string) {
		f := pick(fields, o)
		return "I'm mostly interested in " + f, prefs.Domain, "User is interested in " + f
	},
	func(o int) (string, prefs.Type, string) {
		f, v := pick(fields, o), pick([]string{"specialize", "specialise"}, o)
		return "I " + v + " in " + f, prefs.Domain, "User " + v + "s in " + f
	},
	func(o int) (string, prefs.Type, string) {
		f := facts[mod(o, len(facts))]
		return "Remember that " + f[0], prefs.Custom, f[1]
	},
	func(o int) (string, prefs.Type, string) {
		l := pick(languages, o)
		return "Always answer in " + l, prefs.Custom, "Always answer in " + l
	},
	func(o int) (string, prefs.Type, string) {
		a := pick(avoid, o)
		return "Never use " + a, prefs.Custom, "Never use " + a
	},
	func(o int) (string, prefs.Type, string) {
		p := pick(professions, o)
		return "Please note that I'm " + article(p) + " " + p, prefs.Custom, "User is " + article(p) + " " + p
	},
}

// explained is how "explain like I'm <level>" reads in the third person: a
// bare age gains "years old".
func explained(level string) string {
	switch level {
	case "5", "ten":
		return level + " years old"
	}
	return level
}

func buildStatement(lead, form, object, tail, casing int) Statement {
	form = mod(form, len(stmtForms))
	body, typ, content := stmtForms[form](object)
	s := phrase(lead, body, typ, content, tail, casing)
	s.spec[1], s.spec[2] = form, object
	return s
}

// phrase puts a statement's body between a lead and a tail, in one of the
// casings, with what detection must find in it.
func phrase(lead int, body string, typ prefs.Type, content string, tail, casing int) Statement {
	lead, tail, casing = mod(lead, len(stmtLeads)), mod(tail, len(stmtTails)), mod(casing, 4)
	if strings.HasSuffix(body, "?") && tail != 0 {
		tail = 0 // the body is a question already
	}
	l := stmtLeads[lead]
	if l != "" && !strings.HasSuffix(l, ". ") && !strings.HasSuffix(l, "! ") && l != "- " {
		body = strings.ToLower(body[:1]) + body[1:]
		if strings.HasPrefix(body, "i ") || strings.HasPrefix(body, "i'") {
			body = "I" + body[1:]
		}
	}
	// What states the preference: the body without a question mark, or
	// the word ELI5 alone.
	match := strings.TrimSuffix(body, "?")
	if w, _, _ := strings.Cut(body, " "); strings.EqualFold(w, "eli5") {
		match = w
	}
	msg := l + body + stmtTails[tail]
	switch casing {
	case 1:
		// The user's own words stay in lower case in the content too.
		msg, match = strings.ToLower(msg), strings.ToLower(match)
		first, rest, _ := strings.Cut(content, " ")
		content = first + " " + strings.ToLower(rest)
	case 2:
		msg, match = strings.ReplaceAll(msg, "'", "’"), strings.ReplaceAll(match, "'", "’")
	}
	return Statement{Message: msg, Type: typ, Content: content, Match: match, spec: [5]int{lead, 0, 0, tail, casing}}
}

// rememberPhrasings ask the assistant to remember a fact about the user.
var rememberPhrasings = []string{"Remember that ", "Please remember that ", "Keep in mind that ",
	"Note that ", "Never forget that ", "Don't forget that ", "Do not forget that ", "Bear in mind that "}

func buildRemembered(lead, phrasing, fact, tail, casing int) Statement {
	phrasing, fact = mod(phrasing, len(rememberPhrasings)), mod(fact, len(facts))
	f := facts[fact]
	s := phrase(lead, rememberPhrasings[phrasing]+f[0], prefs.Custom, f[1], tail, casing)
	s.spec[1], s.spec[2] = phrasing, fact
	return s
}

// GenRemembered generates messages that ask the assistant to remember a
// fact about the user ("Remember that I do not eat meat", "Keep in mind
// that my wife codes more than I"), which detection must store in the
// third person ("User does not eat meat", "User's wife codes more than
// they"). It shrinks as GenStatement does; PlainRemembered lists every fact
// in every phrasing.
func GenRemembered() gopter.Gen {
	return gopter.DeriveGen(
		buildRemembered,
		func(s Statement) (int, int, int, int, int) {
			return s.spec[0], s.spec[1], s.spec[2], s.spec[3], s.spec[4]
		},
		gen.IntRange(0, len(stmtLeads)-1), gen.IntRange(0, len(rememberPhrasings)-1), gen.IntRange(0, len(facts)-1),
		gen.IntRange(0, len(stmtTails)-1), gen.IntRange(0, 3),
	)
}

// GenStatement generates messages that state a preference in one of many
// phrasings (who the user is, how answers should be written, what they
// work on, what to remember or always do), with greetings and fillers
// before, a following clause or question after, in lower case or with
// curly apostrophes. It shrinks towards the plainest phrasing.
func GenStatement() gopter.Gen {
	return gopter.DeriveGen(
		buildStatement,
		func(s Statement) (int, int, int, int, int) {
			return s.spec[0], s.spec[1], s.spec[2], s.spec[3], s.spec[4]
		},
		gen.IntRange(0, len(stmtLeads)-1), gen.IntRange(0, len(stmtForms)-1), gen.IntRange(0, 99),
		gen.IntRange(0, len(stmtTails)-1), gen.IntRange(0, 3),
	)
}

// Ordinary is a generated chat message that states no preference.
type Ordinary struct {
	Message string
	spec    [3]int
}

// ordinaryForms are messages a user sends that say nothing about their
// preferences: questions (about themselves too), other people's jobs,
// passing states and plans, hypotheticals, reported and quoted speech,
// requests about pasted text, and plain statements about things.
var ordinaryForms = []func(o int) string{
	func(o int) string { return "How do I install " + pick(tools, o) + " on Linux?" },
	func(o int) string {
		return "What is the difference between a " + pick(Vocabulary, o) + " and a " + pick(Vocabulary, o+7) + "?"
	},
	func(o int) string {
		return "Am I " + article(pick(professions, o)) + " " + pick(professions, o) + " if I only do it part time?"
	},
	func(o int) string {
		return "My sister is " + article(pick(professions, o)) + " " + pick(professions, o) + "."
	},
	func(o int) string {
		return "He works as " + article(pick(professions, o)) + " " + pick(professions, o) + " in Lyon."
	},
	func(o int) string { return "My colleague prefers " + pick(styles, o) + ", but I am not sure." },
	func(o int) string { return "I'm a bit confused about " + pick(fields, o) + "." },
	func(o int) string { return "I'm not sure what " + pick(Vocabulary, o) + " means here." },
	func(o int) string { return "I'm sorry, I meant the " + pick(Vocabulary, o) + " setting." },
	func(o int) string { return "I'm going to deploy the " + pick(Vocabulary, o) + " service tomorrow." },
	func(o int) string { return "I'm trying to speed up the " + pick(Vocabulary, o) + " cache." },
	func(o int) string { return "I'm looking for a good book on " + pick(fields, o) + "." },
	func(o int) string {
		return "If I were " + article(pick(professions, o)) + " " + pick(professions, o) + ", what would I study first?"
	},
	func(o int) string {
		return "Imagine I'm " + article(pick(professions, o)) + " " + pick(professions, o) + " with no budget."
	},
	func(o int) string {
		return "He said, \"I'm " + article(pick(professions, o)) + " " + pick(professions, o) + ".\""
	},
	func(o int) string { return "> I prefer " + pick(styles, o) },
	func(o int) string {
		return "Translate this: I'm " + article(pick(professions, o)) + " " + pick(professions, o) + "."
	},
	func(o int) string { return "Summarize the following: I work in " + pick(fields, o) + " and love it." },
	func(o int) string {
		return "The " + pick(Vocabulary, o) + " returns an error when the " + pick(Vocabulary, o+3) + " is empty."
	},
	func(o int) string { return "It works on my machine but not on the " + pick(Vocabulary, o) + " server." },
	func(o int) string { return "I think the " + pick(Vocabulary, o) + " is broken after the last release." },
	func(o int) string { return "I need to finish the " + pick(Vocabulary, o) + " report today." },
	func(o int) string { return "I have a question about " + pick(fields, o) + "." },
	func(o int) string { return "Thanks, that fixed the " + pick(Vocabulary, o) + " problem!" },
	func(o int) string { return "Can you summarise this article about " + pick(fields, o) + "?" },
	func(o int) string { return "Why does the " + pick(tools, o) + " build fail with exit code 2?" },
	func(o int) string { return "We moved the " + pick(Vocabulary, o) + " to a new cluster last week." },
	func(o int) string { return "I'm a little worried about the " + pick(Vocabulary, o) + " latency." },
	func(o int) string { return "I'm so tired of this " + pick(Vocabulary, o) + " bug." },
	func(o int) string { return "I work on it every evening." },
	func(o int) string { return "My job is killing me this week." },
	func(o int) string {
		return "Write a function that sorts a list of " + pick(Vocabulary, o) + " records."
	},
	func(o int) string { return "Is " + pick(tools, o) + " better than " + pick(tools, o+1) + " for this?" },
	func(o int) string { return "The report says `I prefer " + pick(styles, o) + "` in the survey." },
	func(o int) string { return "Do you know if the " + pick(Vocabulary, o) + " index is rebuilt on open?" },
	// Near misses: they start like a statement about the user.
	func(o int) string { return "I'm a huge fan of " + pick(tools, o) + "." },
	func(o int) string { return "I'm a little late to the " + pick(Vocabulary, o) + " discussion, sorry." },
	func(o int) string { return "I am a bit lost with the new " + pick(Vocabulary, o) + " API." },
	func(o int) string { return "I prefer not to say." },
	func(o int) string { return "Never mind, I found the " + pick(Vocabulary, o) + " setting." },
	func(o int) string { return "Keep in mind the " + pick(Vocabulary, o) + " server restarts at midnight." },
	func(o int) string { return "Remember the last " + pick(Vocabulary, o) + " query we ran?" },
	func(o int) string { return "I'm working on it." },
	func(o int) string { return "My field is empty in the " + pick(Vocabulary, o) + " form." },
	func(o int) string { return "Please be aware the " + pick(Vocabulary, o) + " build is slow." },
	func(o int) string { return "I work as fast as I can on the " + pick(Vocabulary, o) + " bug." },
	func(o int) string { return "Always check the " + pick(Vocabulary, o) + " logs first, the manual says." },
	func(o int) string { return "The user said they prefer " + pick(styles, o) + "." },
	func(o int) string { return "I'm in a meeting until three." },
	func(o int) string { return "Note that the " + pick(Vocabulary, o) + " API changed in v2." },
	func(o int) string { return "I'm happy with the " + pick(Vocabulary, o) + " result." },
	func(o int) string { return "I always forget the syntax for " + pick(tools, o) + " loops." },
	// Sentences that start or end with a colon, dash or comma next to a digit.
	func(o int) string {
		return "Port 8080 is taken. :8080 refuses connections from the " + pick(Vocabulary, o) + "."
	},
	func(o int) string {
		return "It was 5 degrees yesterday. -3 today, says the " + pick(Vocabulary, o) + " report."
	},
	func(o int) string {
		return "The " + pick(Vocabulary, o) + " tests failed in steps 3 and 4,\nthe rest passed."
	},
}

// PlainStatements returns every statement form of GenStatement with every
// object of its lists, without lead, tail or change of case, and then the
// first form after each of its leads: a property checks them all before its
// random cases, so that every object and every lead is tried in every run,
// whatever the seed.
func PlainStatements() []Statement {
	var out []Statement
	seen := map[string]bool{}
	for f := range stmtForms {
		for o := range 100 {
			if s := buildStatement(0, f, o, 0, 0); !seen[s.Message] {
				seen[s.Message] = true
				out = append(out, s)
			}
		}
	}
	for l := 1; l < len(stmtLeads); l++ {
		out = append(out, buildStatement(l, 0, 0, 0, 0))
	}
	return out
}

// PlainRemembered returns every fact of GenRemembered in every phrasing,
// without lead, tail or change of case.
func PlainRemembered() []Statement {
	var out []Statement
	for p := range rememberPhrasings {
		for f := range facts {
			out = append(out, buildRemembered(0, p, f, 0, 0))
		}
	}
	return out
}

func buildOrdinary(lead, form, object int) Ordinary {
	leads := []string{"", "Hi! ", "Hey, ", "Quick question: ", "Okay so ", "Thanks. "}
	lead, form = mod(lead, len(leads)), mod(form, len(ordinaryForms))
	msg := ordinaryForms[form](object)
	if l := leads[lead]; l != "" && !strings.HasSuffix(l, ". ") && !strings.HasSuffix(l, "! ") && !strings.HasPrefix(msg, "I") && !strings.HasPrefix(msg, ">") {
		msg = strings.ToLower(msg[:1]) + msg[1:]
	}
	if strings.HasPrefix(msg, ">") && lead != 0 {
		msg = "\n" + msg // a quotation starts a line
	}
	return Ordinary{Message: leads[lead] + msg, spec: [3]int{lead, form, object}}
}

// GenOrdinary generates messages that state no preference: questions,
// other people's jobs and preferences, passing states and plans,
// hypotheticals, quoted and reported speech, requests about pasted text and
// plain statements about things. Detection should not fire on them.
func GenOrdinary() gopter.Gen {
	return gopter.DeriveGen(
		buildOrdinary,
		func(o Ordinary) (int, int, int) { return o.spec[0], o.spec[1], o.spec[2] },
		gen.IntRange(0, 5), gen.IntRange(0, len(ordinaryForms)-1), gen.IntRange(0, 99),
	)
}

// requestQuestions ask the assistant, as a question, to do something from
// now on: detection takes them as the preference they request.
var requestQuestions = []func(o int) (string, prefs.Type, string){
	func(o int) (string, prefs.Type, string) {
		l := pick(languages, o)
		return "Could you always answer in " + l + "?", prefs.Custom, "Always answer in " + l
	},
	func(o int) (string, prefs.Type, string) {
		a := pick(styleAdjs, o)
		return "Can you please be " + a + "?", prefs.Style, "User prefers " + a + " answers"
	},
	func(o int) (string, prefs.Type, string) {
		a := pick([]string{"short", "brief", "simple", "concise"}, o)
		return "Could you keep your answers " + a + "?", prefs.Style, "User prefers " + a + " answers"
	},
	func(o int) (string, prefs.Type, string) {
		f := facts[mod(o, len(facts))]
		return "Can you remember that " + f[0] + "?", prefs.Custom, f[1]
	},
}

// askedTails turn a statement into a question about it.
var askedTails = []string{"?", ", right?", " or not?"}

// askable are the statement forms that state something about the user
// (not "explain like I'm …", which may be asked).
var askable = func() []int {
	var out []int
	for i, f := range stmtForms {
		if _, _, c := f(0); !strings.HasPrefix(c, "Explain like") {
			out = append(out, i)
		}
	}
	return out
}()

// Asked is a generated question: a statement put as a question, which
// states nothing (Type is ""), or a request put as a question ("Could you
// always answer in French?"), which detection must find.
type Asked struct {
	Statement
	aspec [6]int
}

func buildAsked(request bool, form, object, lead, tail, casing int) Asked {
	var s Statement
	if request {
		form = mod(form, len(requestQuestions))
		body, typ, content := requestQuestions[form](object)
		s = phrase(lead, body, typ, content, 0, casing)
	} else {
		form = mod(form, len(askable))
		body, _, _ := stmtForms[askable[form]](object)
		tail = mod(tail, len(askedTails))
		body = strings.TrimSuffix(body, "?")
		s = phrase(lead, body+askedTails[tail], "", "", 0, casing)
		s.Content, s.Match = "", ""
	}
	b := 0
	if request {
		b = 1
	}
	return Asked{Statement: s, aspec: [6]int{b, form, object, s.spec[0], tail, s.spec[4]}}
}

// GenAsked generates questions: half of them statements about the user put
// as questions ("I'm a nurse, right?", "I prefer short answers?"), which
// detection must not take for preferences, and half requests asked as
// questions ("Could you keep your answers short?", "Can you remember that I
// work night shifts?"), which it must find with their content.
func GenAsked() gopter.Gen {
	return gopter.DeriveGen(
		buildAsked,
		func(a Asked) (bool, int, int, int, int, int) {
			return a.aspec[0] == 1, a.aspec[1], a.aspec[2], a.aspec[3], a.aspec[4], a.aspec[5]
		},
		gen.Bool(), gen.IntRange(0, len(stmtForms)-1), gen.IntRange(0, 99), gen.IntRange(0, len(stmtLeads)-1),
		gen.IntRange(0, len(askedTails)-1), gen.IntRange(0, 3),
	)
}

// MaxLeadIns is how many greetings and fillers detection reads before a
// statement in the same clause ("um uh well … I'm a nurse"): it does bounded
// work per clause, and a statement after more is not read.
const MaxLeadIns = 7

// fillers are one-word lead-ins that do not start a clause after a comma.
var fillers = []string{"um", "uh", "hmm", "lol", "yo", "oh", "ah", "yeah", "yep"}

// LeadIns is a generated statement after a number of one-word fillers
// ("um, uh, oh I'm a nurse").
type LeadIns struct {
	Statement
	Fillers int // how many fillers come before the statement
	lspec   [4]int
	picks   []int
}

func buildLeadIns(picks []int, comma bool, form, object int) LeadIns {
	s := buildStatement(0, form, object, 0, 0)
	sep := " "
	if comma {
		sep = ", "
	}
	words := make([]string, len(picks))
	for i, p := range picks {
		words[i] = fillers[mod(p, len(fillers))]
	}
	if len(words) > 0 {
		words[0] = strings.ToUpper(words[0][:1]) + words[0][1:]
		body := s.Message
		if !strings.HasPrefix(body, "I ") && !strings.HasPrefix(body, "I'") {
			body = strings.ToLower(body[:1]) + body[1:]
			s.Match = strings.ToLower(s.Match[:1]) + s.Match[1:]
		}
		// The last filler is followed by a space: a comma before a clause
		// starter ("I'm") would begin a clause of its own.
		s.Message = strings.Join(words, sep) + " " + body
	}
	c := 0
	if comma {
		c = 1
	}
	return LeadIns{Statement: s, Fillers: len(words), lspec: [4]int{c, s.spec[1], s.spec[2]}, picks: picks}
}

// GenLeadIns generates statements after 0 to 12 one-word fillers ("um",
// "oh", "yeah"), separated by spaces or commas: detection finds the
// statement after at most MaxLeadIns of them, and not after more.
func GenLeadIns() gopter.Gen {
	return gopter.DeriveGen(
		buildLeadIns,
		func(l LeadIns) ([]int, bool, int, int) { return l.picks, l.lspec[0] == 1, l.lspec[1], l.lspec[2] },
		ListOf(gen.IntRange(0, len(fillers)-1), 0, 12), gen.Bool(), gen.IntRange(0, len(stmtForms)-1), gen.IntRange(0, 99),
	)
}

// LongStatement is a generated "I'm a …" statement whose content ("User is
// a …") is about prefs.MaxIntentContent runes long, made of words of one
// length in letters of one to three bytes.
type LongStatement struct {
	Message string
	Full    string // the content before any cut
	Match   string
	lspec   [2]int
}

func buildLong(runes, wordLen int) LongStatement {
	const head = "User is a "
	letters := []rune("aé語bc")
	wordLen = max(1, wordLen)
	n := max(1, runes-len(head))
	obj := make([]rune, 0, n)
	for i := 0; len(obj) < n; i++ {
		if i > 0 && i%(wordLen+1) == wordLen && len(obj) < n-1 {
			obj = append(obj, ' ')
			continue
		}
		obj = append(obj, letters[i%len(letters)])
	}
	o := string(obj)
	return LongStatement{Message: "I'm a " + o, Full: head + o, Match: "I'm a " + o, lspec: [2]int{runes, wordLen}}
}

// GenLongStatement generates statements whose content is 250 to 400 runes
// long, often exactly at prefs.MaxIntentContent or one rune either side,
// with words of 1 to 200 runes (one word longer than the whole cap too).
func GenLongStatement() gopter.Gen {
	return gopter.DeriveGen(
		buildLong,
		func(l LongStatement) (int, int) { return l.lspec[0], l.lspec[1] },
		gen.Frequency(map[int]gopter.Gen{
			3: gen.IntRange(prefs.MaxIntentContent-1, prefs.MaxIntentContent+1),
			2: gen.IntRange(250, 400),
		}),
		gen.Frequency(map[int]gopter.Gen{4: gen.IntRange(1, 12), 1: gen.IntRange(13, 400)}),
	)
}
