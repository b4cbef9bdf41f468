package prefs

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ragmem/ragmem/chunk"
)

// Type is the kind of a preference statement.
type Type string

// The preference types.
const (
	Expertise Type = "expertise" // who the user is: profession, experience, level
	Style     Type = "style"     // how answers should be written
	Domain    Type = "domain"    // what the user works on or is interested in
	Custom    Type = "custom"    // anything else the user asks to be remembered
)

// ErrUnknownType is returned by ParseType for a name that is not a Type.
var ErrUnknownType = errors.New("prefs: unknown preference type")

// ParseType returns the Type named by s, ignoring case and surrounding
// space: "expertise", "style", "domain" or "custom".
func ParseType(s string) (Type, error) {
	switch t := Type(strings.ToLower(strings.TrimSpace(s))); t {
	case Expertise, Style, Domain, Custom:
		return t, nil
	}
	return "", fmt.Errorf("%w %q (want expertise, style, domain or custom)", ErrUnknownType, s)
}

// Intent is a preference statement found in a message.
type Intent struct {
	Type Type
	// Content is the normalised statement to store, in the third person or
	// as an instruction: "User is a software engineer", "User prefers
	// technical, concise explanations", "Explain like the user is 5 years
	// old". It is never empty, has no control characters and is at most
	// MaxIntentContent runes long.
	Content string
	// Match is the substring of the message that triggered detection.
	Match string
}

// MaxIntentContent caps Intent.Content, in runes; longer statements are cut
// at a word boundary.
const MaxIntentContent = 300

// maxScan is how much of a message DetectPreferenceIntent reads, in bytes.
// Preference statements are short and come early; the rest of a very long
// message is almost always pasted material.
const maxScan = 16 << 10

// DetectPreferenceIntent recognises an explicit preference statement in a
// chat message (Property 10) and returns the first one, or nil when there is
// none (DetectPreferenceIntents returns every one). It is safe for
// concurrent use and never panics.
//
// Matching is case-insensitive and accepts curly apostrophes. A statement
// must begin a clause (after greetings and fillers such as "Hi," "btw" or
// "For context,"), and its content runs to the end of that clause:
//
//   - Expertise: "I'm a/an …", "I am a/an …", "I've been a …", "I work as …",
//     "I'm working as …", "my job/role/profession is …", "my background is …",
//     "I have N years of experience in/with/as …", "I'm new to …",
//     "I'm experienced/proficient/familiar with …".
//   - Style: "explain (it to me) like I'm …", "ELI5", "explain it as if I
//     were …", "I prefer …", "I'd prefer …", "I like short/concise/detailed/…
//     answers/explanations", "please (always) be concise/brief/detailed",
//     "keep it short".
//   - Domain: "I work in/on/at …", "I'm working on a … project", "my field is
//     …", "I'm interested in …", "I specialise/specialize in …".
//   - Custom: "remember that I …", "note that I …", "keep in mind that I …",
//     and instructions to the assistant starting with "always" or "never"
//     followed by a verb ("Always answer in Spanish").
//
// It does not fire on questions ("Am I a good fit?", "I'm a good fit,
// right?"), on states and intentions ("I'm a bit confused", "I'm sorry",
// "I'm not sure", "I am going to…", "I'm trying to…", "I'm looking for…"), on
// hypotheticals ("If I were a doctor…", "Suppose I'm a…", "Imagine I'm…"),
// or on the words of others: text in double quotes or backticks, reported
// speech ("He said, I'm a…"), quoted lines ("> …"), fenced code and material
// pasted after an introduction such as "Translate this:". Only the first
// 16 KiB of a message are read.
func DetectPreferenceIntent(message string) *Intent {
	var first *Intent
	detect(message, func(in *Intent) bool {
		first = in
		return false
	})
	return first
}

// maxIntents bounds the statements DetectPreferenceIntents returns.
const maxIntents = 20

// DetectPreferenceIntents returns every preference statement in a chat
// message, in order, by the rules of DetectPreferenceIntent: one per clause
// ("I'm a data scientist, explain like I'm new to Go" holds two), the same
// statement once, at most 20. It returns nil when there is none. It is
// safe for concurrent use and never panics.
func DetectPreferenceIntents(message string) []Intent {
	var out []Intent
	seen := map[Intent]bool{}
	detect(message, func(in *Intent) bool {
		k := Intent{Type: in.Type, Content: in.Content}
		if !seen[k] {
			seen[k] = true
			out = append(out, *in)
		}
		return len(out) < maxIntents
	})
	return out
}

// detect calls found with each statement of message in order, as long as
// it returns true.
func detect(message string, found func(*Intent) bool) {
	if len(message) > maxScan {
		message = message[:maxScan]
	}
	n := normalize(message)
	if len(n.s) == 0 {
		return
	}
	inFence := false
	for lineStart := 0; lineStart < len(n.s); {
		lineEnd := strings.IndexByte(n.s[lineStart:], '\n')
		if lineEnd < 0 {
			lineEnd = len(n.s)
		} else {
			lineEnd += lineStart
		}
		start, end := lineStart, lineEnd
		lineStart = lineEnd + 1

		line := n.s[start:end]
		// Code fences: "```" anywhere on a line (an odd number of them opens
		// or closes a block; backticks within the line are masked by
		// quoteMask), or "~~~" at its start.
		fences := strings.Count(line, "```")
		if strings.HasPrefix(line, "~~~") {
			fences++
		}
		wasFence := inFence
		if fences%2 == 1 {
			inFence = !inFence
		}
		if wasFence || strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") || strings.HasPrefix(line, ">") {
			continue
		}
		// List markers: "- I'm a nurse", "2) I prefer…".
		if m := listMarker.FindStringIndex(line); m != nil {
			start += m[1]
			line = n.s[start:end]
		}
		stopAfter := false
		if cut, rest := pasteIntro(line); cut >= 0 {
			line = line[:cut]
			stopAfter = rest
		}
		if !detectLine(n, start, line, found) {
			return
		}
		if stopAfter {
			break
		}
	}
}

// detectLine looks for statements in one line of normalised text that
// starts at offset base of n.s, at most one per clause, and calls found
// with each; it returns false when found said to stop.
func detectLine(n *normText, base int, line string, found func(*Intent) bool) bool {
	masked := quoteMask(line)
	for _, sp := range chunk.Sentences(line) {
		if sp.Start < 0 || sp.End > len(line) || sp.Start >= sp.End {
			continue // defensive: never trust offsets blindly
		}
		sentence := line[sp.Start:sp.End]
		question := isQuestion(sentence)
		cls := clauses(sentence)
		// After a hypothetical clause ("If I were a doctor, …") the user's
		// statements about themselves in the same sentence are part of the
		// hypothesis; instructions to the assistant ("When you answer,
		// always cite sources") still count.
		hypothetical := false
		for ci, cl := range cls {
			pos := cl.start
			text := sentence[cl.start:cl.end]
			if ci > 0 && reportedSpeech.MatchString(sentence[cls[ci-1].start:cls[ci-1].end]) {
				continue
			}
			for step := 0; step < 8; step++ {
				if masked[sp.Start+pos] {
					break
				}
				w := nextWord(text, 0)
				if hypothetical && firstPerson[w] {
					break
				}
				if in := matchRules(n, base+sp.Start+pos, w, text, question && ci == len(cls)-1); in != nil {
					if !found(in) {
						return false
					}
					break // the clause's statement: on to the next clause
				}
				if hypotheticalWords[w] && hypotheticalStart.MatchString(text) {
					hypothetical = true
					break
				}
				if r, size := utf8.DecodeRuneInString(text); unicode.In(r, unicode.S) && size < len(text) {
					pos += size // emoji and other symbols: "🎉 I'm a …"
					text = text[size:]
					continue
				}
				if !leadInWords[w] && !strings.ContainsRune("*_~#, ", rune(text[0])) {
					break
				}
				m := leadIn.FindStringIndex(text)
				if m == nil || m[1] == 0 || m[1] >= len(text) {
					break
				}
				pos += m[1]
				text = text[m[1]:]
			}
		}
	}
	return true
}

// rule is one statement pattern. re is anchored at the start of a clause and
// has a named group "x" for the object of the statement when it has one.
type rule struct {
	typ Type
	re  *lazyRE // compiled on first use
	// build makes the Content from the submatches (by group name); it
	// returns "" to reject the match.
	build func(g map[string]string) string
	// inQuestion: the rule may fire in a question ("Can you ELI5 …?"). Rules
	// with a "req" group ("could you …") may fire in a question when it matched.
	inQuestion bool
}

// ruleStarters are the first words any rule can match; other clauses skip
// the regular expressions.
var ruleStarters = map[string]bool{
	"i": true, "i'm": true, "im": true, "i've": true, "i'd": true, "my": true, "explain": true,
	"describe": true, "break": true, "walk": true, "teach": true, "tell": true, "talk": true,
	"speak": true, "answer": true, "respond": true, "write": true, "please": true, "can": true,
	"could": true, "would": true, "will": true, "remember": true, "note": true, "keep": true,
	"bear": true, "don't": true, "do": true, "never": true, "always": true, "be": true,
	"stay": true, "remain": true, "try": true, "just": true, "make": true, "from": true,
	"going": true, "in": true,
}

// leadInWords and hypotheticalWords are the first words leadIn and
// hypotheticalStart can match, to skip the expressions for other clauses.
var leadInWords = wordSet(`hi hello hey hiya yo ok okay so well also and but oh ah btw by fyi for
	just actually honestly basically anyway anyways again now yes yeah yep no nope sure thanks
	thank personally professionally fwiw quick heads ps p note first because since as cause cuz
	then generally in like um uh hmm lol haha there or though although however therefore
	whereas dear`)

var firstPerson = wordSet(`i i'm im i'd i'll i've my`)

var hypotheticalWords = wordSet(`if suppose supposing imagine pretend assume assuming let's lets
	let say what even unless when whenever once in hypothetically theoretically i wondering would
	should maybe perhaps might roleplay role act as whether`)

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// matchRules tries the rules on a clause whose first word is w; at is the
// offset of the clause in n.s.
func matchRules(n *normText, at int, w, text string, question bool) *Intent {
	if !ruleStarters[w] && !strings.HasPrefix(w, "eli") {
		return nil
	}
	if attributedTail.MatchString(text) {
		return nil // someone else's words
	}
	for _, r := range rules {
		idx := r.re.FindStringSubmatchIndex(text)
		if idx == nil {
			continue
		}
		g := make(map[string]string, 8)
		for i, name := range r.re.SubexpNames() {
			if name != "" && idx[2*i] >= 0 {
				g[name] = text[idx[2*i]:idx[2*i+1]]
			}
		}
		if question && !r.inQuestion && g["req"] == "" {
			continue
		}
		if x, ok := g["x"]; ok && !hasAlnum(x) {
			continue // "I'm a ...": nothing to store
		}
		content := finish(r.build(g))
		if content == "" {
			continue
		}
		mEnd := strings.TrimRight(text[:idx[1]], " ,;:.!?")
		return &Intent{Type: r.typ, Content: content, Match: n.original(at, at+len(mEnd))}
	}
	return nil
}

// Regular-expression fragments shared by the rules.
const (
	reIm   = `i(?:'m|m|\s+am)`
	reAdv  = `(?:(?:just|only|actually|also|really|basically|currently|now|primarily|mainly|mostly|professionally|originally|still|already|technically|officially|essentially|definitely|certainly|literally)\s+)*`
	reReq  = `(?P<req>(?:can|could|would|will)\s+you\s+(?:please\s+)?)?`
	reNum  = `(?:\d{1,2}(?:\.\d)?\+?|a\s+few|a\s+couple(?:\s+of)?|several|many|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty)`
	reRest = `\s+(?P<x>.+)$`
	// Words describing the style of an answer.
	reStyleAdj    = `(?:short|shorter|concise|brief|briefer|succinct|terse|detailed|thorough|in-depth|in\s+depth|deep|long|longer|lengthy|simple|simpler|clear|plain|technical|non-technical|practical|hands-on|step-by-step|high-level|low-level|direct|straightforward|casual|formal|informal|friendly|visual|quick|comprehensive|precise|beginner-friendly|example-driven|code-heavy|bullet-point|structured|rigorous|academic|intuitive|blunt|honest|to-the-point|no-nonsense|minimal|complete|elaborate|exhaustive|layman's|eli5|analogy-based|math-heavy|jargon-free)`
	reIntensifier = `(?:more|less|very|really|super|fairly|rather|extremely|quite|pretty|much|relatively|a\s+bit|a\s+little|somewhat)`
	reAnswerNoun  = `(?:answers?|explanations?|responses?|replies|reply|examples|summaries|summary|code\s+examples|solutions|walkthroughs|overviews|instructions|descriptions|tutorials|guides)`
	// Imperative verbs that follow "always"/"never" in an instruction.
	reVerb = `(?:answer|respond|reply|write|use|include|add|give|provide|show|explain|cite|link|format|keep|make|start|begin|end|finish|assume|ask|call|address|refer|speak|talk|translate|list|summari[sz]e|mention|put|avoid|double-check|double\s+check|check|remind|tell|suggest|recommend|return|output|print|wrap|quote|consider|treat|follow|stick|stay|default|convert|comment|document|test|greet|number|bold|highlight|spell|capitali[sz]e|omit|skip|leave|apologi[sz]e|guess|invent|make\s+up|hallucinate|send|label|state|reference|offer|name|structure|organi[sz]e|break|split|rely|verify|validate|search|look|compare|define|clarify|mark|indent|annotate|review|run|agree|flatter|praise|lecture|moralize|moralise|repeat|truncate|shorten|simplify|elaborate|expand|remove|drop|insert|prepend|append|close|prefer|go|write|code|reason|think|show)`
)

var rules = []rule{
	// --- style: ELI5 and "explain like I'm …" (allowed in questions) ---
	{Style, lazyRegexp(`(?i)^` + reReq + `(?:please\s+)?eli(?P<n>\d{1,2})\b`), func(g map[string]string) string {
		return "Explain like the user is " + g["n"] + " years old"
	}, true},
	{Style, lazyRegexp(`(?i)^` + reReq + `(?:please\s+)?(?:explain|describe|break\s+down|walk\s+me\s+through|teach\s+me|tell\s+me|talk\s+to\s+me|speak\s+to\s+me|answer|respond|write)(?:\s+(?:it|this|that|things|everything|stuff|them|the\s+answer|all\s+this))?(?:\s+to\s+me)?(?:\s+(?:simply|slowly|again))?\s+(?:like|as\s+if|as\s+though|as\s+if\s+to|as\s+though\s+to)\s+(?:i(?:'m|m|\s+am|\s+was|\s+were|'d\s+be|\s+would\s+be)\s+)(?P<x>.+)$`), func(g map[string]string) string {
		x := explainee(g["x"])
		if x == "" {
			return ""
		}
		return "Explain like the user is " + imperativePronouns(x)
	}, true},

	// --- custom: "remember/note that I …" ---
	{Custom, lazyRegexp(`(?i)^` + reReq + `(?:please\s+)?(?:(?:always\s+)?remember|note|keep\s+in\s+mind|bear\s+in\s+mind|don't\s+forget|do\s+not\s+forget|never\s+forget|be\s+aware)(?:\s+that)?\s+(?P<subj>i(?:'m|m|\s+am|'ve|\s+have|'d|\s+would|'ll|\s+will)?|my)` + reRest), func(g map[string]string) string {
		return rememberContent(g["subj"], g["x"])
	}, false},

	// --- expertise ---
	{Expertise, lazyRegexp(`(?i)^` + reIm + `\s+` + reAdv + `(?:(?:completely|totally|fairly|pretty|very|quite|relatively|brand|super|still)\s+)*new\s+to` + reRest), func(g map[string]string) string {
		return "User is new to " + thirdPerson(g["x"])
	}, false},
	{Expertise, lazyRegexp(`(?i)^` + reIm + `\s+` + reAdv + `(?:(?P<deg>very|quite|fairly|pretty|highly|really|extremely)\s+)?(?P<a>experienced|proficient|fluent|skilled|familiar|comfortable|well-versed|versed|an\s+expert|expert|an\s+authority)\s+(?P<p>in|with|at|on)` + reRest), func(g map[string]string) string {
		a := strings.ToLower(g["a"])
		if g["deg"] != "" {
			a = strings.ToLower(g["deg"]) + " " + a
		}
		return "User is " + a + " " + strings.ToLower(g["p"]) + " " + thirdPerson(g["x"])
	}, false},
	{Expertise, lazyRegexp(`(?i)^` + reIm + `\s+` + reAdv + `working\s+as` + reRest), func(g map[string]string) string {
		if asComparison.MatchString(g["x"]) {
			return ""
		}
		return "User is working as " + thirdPerson(g["x"])
	}, false},
	{Domain, lazyRegexp(`(?i)^` + reIm + `\s+` + reAdv + `(?P<v>working\s+on|building|developing|creating|writing|leading|running|doing)\s+(?P<x>(?:an?|the|my|our|this|some|two|three|several|multiple)\b.*?\bprojects?\b.*)$`), func(g map[string]string) string {
		return "User is " + strings.ToLower(collapseSpace(g["v"])) + " " + thirdPerson(g["x"])
	}, false},
	{Domain, lazyRegexp(`(?i)^` + reIm + `\s+` + reAdv + `(?:(?:very|really|mostly|mainly|particularly|especially|primarily|deeply|also|quite|super|most|more|currently|now|increasingly|always|genuinely|keenly|mostly)\s+)*interested\s+in` + reRest), func(g map[string]string) string {
		return "User is interested in " + thirdPerson(g["x"])
	}, false},
	{Domain, lazyRegexp(`(?i)^(?:i\s+` + reAdv + `(?P<v>speciali[sz]e)|` + reIm + `\s+` + reAdv + `(?P<v2>speciali[sz]ed))\s+in` + reRest), func(g map[string]string) string {
		verb := "specializes"
		if strings.Contains(strings.ToLower(g["v"]+g["v2"]), "lis") {
			verb = "specialises"
		}
		return "User " + verb + " in " + thirdPerson(g["x"])
	}, false},
	{Expertise, lazyRegexp(`(?i)^` + reIm + `\s+` + reAdv + `(?P<art>an?)\s+(?P<x>.+)$`), func(g map[string]string) string {
		if !identity(g["x"]) {
			return ""
		}
		return "User is " + strings.ToLower(g["art"]) + " " + thirdPerson(g["x"])
	}, false},
	{Expertise, lazyRegexp(`(?i)^i(?:'ve|\s+have)\s+been\s+` + reAdv + `(?P<art>an?)\s+(?P<x>.+)$`), func(g map[string]string) string {
		if !identity(g["x"]) {
			return ""
		}
		return "User has been " + strings.ToLower(g["art"]) + " " + thirdPerson(g["x"])
	}, false},
	{Expertise, lazyRegexp(`(?i)^(?:i\s+` + reAdv + `work|` + reIm + `\s+` + reAdv + `employed)\s+as` + reRest), func(g map[string]string) string {
		if asComparison.MatchString(g["x"]) {
			return "" // "I work as fast as I can"
		}
		return "User works as " + thirdPerson(g["x"])
	}, false},
	{Expertise, lazyRegexp(`(?i)^i(?:\s+have(?:\s+got)?|'ve(?:\s+got)?)\s+(?:(?P<n>(?:(?:over|more\s+than|about|around|nearly|almost|roughly|close\s+to|at\s+least)\s+)?` + reNum + `)\s*(?P<y>years?|yrs?)\s+(?:of\s+)?|(?P<q>some|extensive|a\s+lot\s+of|lots\s+of|little|limited|basic|solid|deep|strong|significant|considerable|no|prior|previous)\s+)?(?P<k>(?:professional|industry|work|hands-on|practical|programming|coding|teaching|research|relevant|clinical|development|engineering)\s+)?experience(?:\s+(?P<p>in|with|as|doing|at|on|working\s+with|working\s+in|working\s+as|building|writing|using)\s+(?P<x>.+))?\s*$`), func(g map[string]string) string {
		s := "User has "
		switch {
		case g["n"] != "":
			y := strings.ToLower(g["y"])
			if strings.HasPrefix(y, "yr") {
				y = strings.Replace(y, "yr", "year", 1)
			}
			s += collapseSpace(g["n"]) + " " + y + " of "
		case g["q"] != "":
			s += strings.ToLower(collapseSpace(g["q"])) + " "
		case g["x"] == "":
			return "" // "I have experience": with what?
		}
		s += strings.ToLower(g["k"]) + "experience"
		if x := g["x"]; x != "" {
			s += " " + strings.ToLower(collapseSpace(g["p"])) + " " + thirdPerson(x)
		}
		return s
	}, false},
	{Expertise, lazyRegexp(`(?i)^my\s+(?:current\s+|day\s+|main\s+|actual\s+)?(?P<n>job\s+title|job|role|position|profession|occupation|title|line\s+of\s+work|day\s+job)\s+is` + reRest), func(g map[string]string) string {
		if notAttribute.MatchString(g["x"]) {
			return ""
		}
		return "User's " + strings.ToLower(collapseSpace(g["n"])) + " is " + thirdPerson(g["x"])
	}, false},
	{Expertise, lazyRegexp(`(?i)^my\s+(?P<k>(?:professional|educational|academic|technical|work)\s+)?background\s+is` + reRest), func(g map[string]string) string {
		if notAttribute.MatchString(g["x"]) {
			return ""
		}
		return "User's " + strings.ToLower(g["k"]) + "background is " + thirdPerson(g["x"])
	}, false},

	// --- domain ---
	{Domain, lazyRegexp(`(?i)^my\s+(?:main\s+|primary\s+|current\s+|professional\s+)?(?P<n>field\s+of\s+study|field\s+of\s+research|field|area\s+of\s+expertise|area\s+of\s+research|research\s+area|research\s+field|research\s+focus|domain|specialty|speciality|specialization|specialisation|major|expertise|industry|discipline|niche)\s+is` + reRest), func(g map[string]string) string {
		if notAttribute.MatchString(g["x"]) {
			return ""
		}
		return "User's " + strings.ToLower(collapseSpace(g["n"])) + " is " + thirdPerson(g["x"])
	}, false},
	{Domain, lazyRegexp(`(?i)^i\s+` + reAdv + `(?P<v>work|do\s+research|research)\s+(?P<p>in|on|at|within|for)` + reRest), func(g map[string]string) string {
		if !workObject(g["x"]) {
			return ""
		}
		v := "works"
		if strings.ToLower(collapseSpace(g["v"])) != "work" {
			v = "does research"
		}
		return "User " + v + " " + strings.ToLower(g["p"]) + " " + thirdPerson(g["x"])
	}, false},

	// --- style ---
	{Style, lazyRegexp(`(?i)^i(?:'d|\s+would)?(?:\s+(?:really|much|generally|usually|always|definitely|strongly|personally|mostly|do|also|rather|very\s+much))*\s+prefer` + reRest), func(g map[string]string) string {
		if declines.MatchString(g["x"]) {
			return ""
		}
		return "User prefers " + thirdPerson(g["x"])
	}, false},
	{Style, lazyRegexp(`(?i)^i(?:'d|\s+would)?(?:\s+(?:really|much|generally|usually|always|definitely|also|do|truly|very\s+much))*\s+(?:like|love|want|need|appreciate|enjoy|value|favou?r)\s+(?:(?:it\s+when\s+you\s+(?:give|write|provide|keep)(?:\s+me)?|to\s+(?:get|have|see|receive|read))\s+)?(?P<adj>(?:(?:` + reIntensifier + `|` + reStyleAdj + `)(?:\s*,\s*|\s+and\s+|\s+or\s+|\s+but\s+|\s+))*` + reStyleAdj + `)\s+(?P<n>` + reAnswerNoun + `)\b(?P<rest>.*)$`), func(g map[string]string) string {
		return "User prefers " + collapseSpace(g["adj"]) + " " + collapseSpace(g["n"]) + " " + thirdPerson(g["rest"])
	}, false},
	{Style, lazyRegexp(`(?i)^` + reReq + `(?:please\s+)?(?:(?:always|try\s+to|just)\s+)*(?:be|stay|remain)\s+(?:as\s+)?(?P<adj>(?:` + reIntensifier + `\s+)?(?:concise|brief|short|succinct|terse|detailed|thorough|technical|simple|clear|direct|formal|informal|casual|precise|comprehensive|blunt|to\s+the\s+point|straightforward)(?:\s+(?:and|&)\s+(?:` + reIntensifier + `\s+)?(?:concise|brief|short|succinct|terse|detailed|thorough|technical|simple|clear|direct|formal|informal|casual|precise|comprehensive|blunt|to\s+the\s+point|straightforward))?)\b`), func(g map[string]string) string {
		return "User prefers " + strings.ToLower(collapseSpace(g["adj"])) + " answers"
	}, false},
	{Style, lazyRegexp(`(?i)^` + reReq + `(?:please\s+)?(?:(?:always|try\s+to|just)\s+)*keep\s+(?:it|things|everything|it\s+all|(?:your|the)\s+(?:answers?|responses?|replies|explanations?)|answers|responses|replies|explanations)\s+(?P<adj>(?:(?:very|really|super|nice\s+and|short\s+and)\s+)?(?:short|brief|concise|simple|tight|succinct|high-level|technical|clear|light|casual|professional|formal|sweet|to\s+the\s+point)(?:\s+and\s+(?:short|brief|concise|simple|sweet|clear|to\s+the\s+point|technical))?)\b`), func(g map[string]string) string {
		return "User prefers " + strings.ToLower(collapseSpace(g["adj"])) + " answers"
	}, false},

	// --- custom: instructions with always/never ---
	{Custom, lazyRegexp(`(?i)^` + reReq + `(?:(?:please|make\s+sure\s+(?:to|you)|be\s+sure\s+to|remember\s+to|try\s+to|i\s+want\s+you\s+to|i'd\s+like\s+you\s+to|i\s+would\s+like\s+you\s+to|i\s+need\s+you\s+to|from\s+now\s+on|going\s+forward|in\s+the\s+future|in\s+future)\s+)*(?P<adv>always|never(?:\s+ever)?|don't\s+ever|do\s+not\s+ever)\s+(?P<v>` + reVerb + `)\b(?P<x>.*)$`), func(g map[string]string) string {
		adv := "Always"
		if !strings.EqualFold(g["adv"], "always") {
			adv = "Never"
		}
		return adv + " " + strings.ToLower(collapseSpace(g["v"])) + " " + imperativePronouns(g["x"])
	}, false},
}

var (
	// listMarker matches a bullet or number that starts a line.
	listMarker = lazyRegexp(`^(?:[-*•+]|\d{1,3}[.)])\s+`)
	// leadIn matches one greeting, filler or connective at the start of a
	// clause that may precede a statement, with the comma or other
	// punctuation after it ("Hello, don't forget that I …": a comma splits a
	// clause only before a clause starter, and not every rule's first word is
	// one), or markup and stray commas ("Got it. , don't forget that I …").
	leadIn = lazyRegexp(`(?i)^(?:[*_~#\s,]+|(?:hi|hello|hey|hiya|yo|ok|okay|so\s+you\s+know|so|well|also|and|but|oh|ah|btw|by\s+the\s+way|fyi|for\s+context|for\s+the\s+record|for\s+reference|for\s+your\s+information|just\s+so\s+you\s+know|just\s+fyi|actually|honestly|basically|anyway|anyways|again|now|yes|yeah|yep|no|nope|sure|thanks|thank\s+you|personally|professionally|fwiw|quick\s+note|heads\s+up|ps|p\.s\.|note|first|first\s+of\s+all|because|since|as|cause|cuz|then|just|generally|in\s+general|as\s+you\s+know|as\s+i\s+said|like\s+i\s+said|as\s+mentioned|um|uh|hmm|lol|haha|there|or|though|although|however|therefore|whereas|dear\s+\w+|hey\s+there|hi\s+there|hello\s+there)\b[\s!.,]*)`)
	// hypotheticalStart matches a clause that states a hypothesis or wish.
	hypotheticalStart = lazyRegexp(`(?i)^(?:if|suppose|supposing|imagine|pretend|assume|assuming|let's\s+say|lets\s+say|let\s+us\s+say|say|what\s+if|even\s+if|unless|when|whenever|once|in\s+case|hypothetically|theoretically|in\s+theory|if\s+only|i\s+wish|i\s+wonder|wondering|would|should|maybe|perhaps|might|let's\s+pretend|role-?play|act\s+as|as\s+if|as\s+though|whether|in\s+a\s+world)\b`)
	// reportedSpeech matches a clause that introduces someone else's words.
	reportedSpeech = lazyRegexp(`(?i)(?:(?:'s|'re|\bis|\bwas|\bwere|\bare|\bgoes|\bwent|\bwas\s+all|\bwere\s+all)\s+like\s*$|\b(?:said|says|say|told\s+(?:me|him|her|them|us)|tells\s+(?:me|him|her|them|us)|asked|asks|wrote|writes|thinks|thought|claims|claimed|replied|replies|answered|believes|believed|insists|insisted|shouted|yelled|texted|emailed|posted|tweeted|goes|went|quote|quoted|quoting)(?:\s+that)?\s*$)`)
	// notAttribute matches what follows "my job/field/background is" when it
	// describes a feeling or state rather than the job itself ("My job is
	// killing me", "my field is wide open").
	notAttribute = lazyRegexp(`(?i)^(?:so|too|very|really|pretty|quite|kind\s+of|sort\s+of|not|getting|killing|driving|making|stressing|eating|taking|boring|stressful|hard|tough|difficult|exhausting|tiring|great|good|bad|fine|ok|okay|awful|terrible|horrible|demanding|busy|crazy|insane|fun|nice|cool|amazing|safe|secure|done|over|gone|at\s+risk|on\s+the\s+line|wide|open|empty|full|irrelevant|unclear|complicated|changing|hell|a\s+mess|a\s+nightmare|a\s+joke|ending|going|gonna|in\s+danger|on\s+hold)\b`)
	// asComparison matches the object of "I work as …" when it is a
	// comparison ("as fast as I can") rather than a job.
	asComparison = lazyRegexp(`(?i)^(?:\w+ly|fast|hard|much|well|long|quick|slow|best|little|often|far|late|early|soon|many)\s+as\b`)
	// attributedTail matches a clause that ends by attributing its words to
	// someone else ("Always check the logs first, the manual says.").
	attributedTail = lazyRegexp(`(?i),\s*(?:[\w']+\s+){0,3}(?:says|said|writes|wrote|claims|claimed|insists|insisted|suggests|suggested|recommends|recommended|told\s+me|tells\s+me)\s*[.!]*\s*$`)
	// declines matches "I'd prefer not to say" and the like.
	declines = lazyRegexp(`(?i)^not\s+to\s+(?:say|answer|share|disclose|discuss|tell|talk|comment|give|reveal|go\s+into)`)
	// pasteVerb matches an introduction to pasted material before a colon.
	pasteVerb = lazyRegexp(`(?i)\b(?:translate|translation|summari[sz]e|summary|proofread|paraphrase|rephrase|reword|rewrite|re-write|correct|analy[sz]e|critique|respond\s+to|reply\s+to|what\s+do\s+you\s+think\s+(?:of|about)|the\s+following|this\s+(?:text|email|e-mail|message|article|passage|paragraph|review|post|comment|letter|essay|document|transcript|poem|story|quote|excerpt)|here\s+is\s+(?:the|an?|his|her|their)|here's\s+(?:the|an?|his|her|their)|wrote|writes|said|says|posted|texted|emailed|replied|asked|quote|excerpt|transcript)\b`)
)

// pasteIntro finds a colon on line that introduces pasted material
// ("Translate this: …", "Here's what she wrote:"). It returns the offset of
// the colon, or -1, and whether the colon ends the line, in which case the
// material continues on the following lines.
func pasteIntro(line string) (int, bool) {
	for i := 0; i < len(line); i++ {
		if line[i] != ':' {
			continue
		}
		if i+1 < len(line) && (line[i+1] == '/' || isDigit(line[i+1])) {
			continue // URL or time
		}
		if pasteVerb.MatchString(line[:i]) {
			return i, strings.TrimSpace(line[i+1:]) == ""
		}
	}
	return -1, false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isQuestion reports whether a sentence ends with a question mark, ignoring
// closing quotes and brackets.
func isQuestion(s string) bool {
	s = strings.TrimRightFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(`"')]}*_”»`, r)
	})
	return strings.HasSuffix(s, "?") || strings.HasSuffix(s, "？") || strings.HasSuffix(s, "?!") || strings.HasSuffix(s, "!?")
}

// quoteMask marks the bytes of line inside double quotes or backticks.
func quoteMask(line string) []bool {
	m := make([]bool, len(line)+1)
	straight, code, curly := false, false, 0
	for i, r := range line {
		switch r {
		case '`':
			code = !code
			m[i] = true
			continue
		case '"':
			if !code {
				straight = !straight
			}
			m[i] = true
			continue
		case '“', '„', '«', '「', '『':
			if !code {
				curly++
			}
		case '”', '»', '」', '』':
			if !code && curly > 0 {
				curly--
				fill(m, i, r, true)
				continue
			}
		}
		fill(m, i, r, straight || code || curly > 0)
	}
	return m
}

// fill sets the mask for every byte of rune r at line[i].
func fill(m []bool, i int, r rune, v bool) {
	k := utf8.RuneLen(r)
	if k < 1 {
		k = 1
	}
	for j := 0; j < k && i+j < len(m); j++ {
		m[i+j] = v
	}
}

// span is a byte range.
type span struct{ start, end int }

// clauseStarters are words that, after a comma or "and"/"or", begin a new
// clause rather than continue a list ("technical, concise explanations").
var clauseStarters = map[string]bool{
	"i": true, "i'm": true, "im": true, "i've": true, "i'd": true, "i'll": true, "my": true,
	"you": true, "you're": true, "your": true, "please": true, "can": true, "could": true,
	"would": true, "will": true, "what": true, "how": true, "why": true, "when": true,
	"where": true, "which": true, "who": true, "is": true, "are": true, "do": true, "does": true,
	"did": true, "so": true, "but": true, "and": true, "because": true, "since": true,
	"though": true, "although": true, "thanks": true, "thank": true, "also": true, "btw": true,
	"always": true, "never": true, "remember": true, "note": true, "keep": true, "be": true,
	"bear": true, "don't": true, "speak": true,
	"explain": true, "eli5": true, "it": true, "it's": true, "this": true, "that": true,
	"there": true, "we": true, "if": true, "unless": true, "as": true, "then": true, "now": true,
	"just": true, "he": true, "she": true, "they": true, "hi": true, "hello": true, "hey": true,
	"ok": true, "okay": true, "well": true, "actually": true, "anyway": true, "however": true,
	"suppose": true, "imagine": true, "let's": true, "otherwise": true, "by": true, "for": true,
	"fyi": true, "honestly": true, "basically": true,
}

// conjunctionCuts are words that always begin a new clause; "and", "or",
// "but" and "so" begin one only before a clause starter ("short but detailed
// answers" stays whole).
var conjunctionCuts = map[string]bool{
	"because": true, "although": true, "though": true, "whereas": true, "cause": true,
	"cuz": true, "however": true, "therefore": true,
}

// clauses splits a sentence into clauses: at ; and : (not in times or URLs),
// dashes, brackets, commas followed by a clause starter, "because" and the
// like, and "and"/"or"/"but"/"so" followed by a clause starter. Spans are trimmed of spaces.
func clauses(s string) []span {
	var out []span
	start := 0
	emit := func(end, next int) {
		a, b := start, end
		for a < b && s[a] == ' ' {
			a++
		}
		for b > a && s[b-1] == ' ' {
			b--
		}
		if a < b {
			out = append(out, span{a, b})
		}
		start = next
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if cutsClause(s, i, r) {
			emit(i, i+size)
		}
		i += size
	}
	emit(len(s), len(s))
	return out
}

// cutsClause reports whether rune r at s[i] ends a clause (see clauses).
func cutsClause(s string, i int, r rune) bool {
	switch r {
	case ';', '(', ')', '[', ']', '—', '–':
		return true
	case ':':
		return !(i+1 < len(s) && (s[i+1] == '/' || (isDigit(s[i+1]) && i > 0 && isDigit(s[i-1]))))
	case '-':
		return i > 0 && s[i-1] == ' ' && i+1 < len(s) && s[i+1] == ' '
	case ',':
		return !(i > 0 && isDigit(s[i-1]) && i+1 < len(s) && isDigit(s[i+1])) && clauseStarters[nextWord(s, i+1)]
	case ' ':
		w := nextWord(s, i+1)
		return conjunctionCuts[w] || ((w == "and" || w == "or" || w == "but" || w == "so") && clauseStarters[nextWord(s, i+1+len(w))])
	}
	return false
}

// nextWord returns the lower-cased word (letters, digits, apostrophes)
// starting at the first non-space byte at or after s[i].
func nextWord(s string, i int) string {
	for i < len(s) && s[i] == ' ' {
		i++
	}
	j := i
	for j < len(s) {
		r, size := utf8.DecodeRuneInString(s[j:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' {
			break
		}
		j += size
	}
	return strings.ToLower(s[i:j])
}

// notIdentity lists first words after "I'm a/an" that describe a state or
// quantity rather than who the user is ("I'm a bit confused").
var notIdentity = map[string]bool{
	"bit": true, "little": true, "tad": true, "lot": true, "few": true, "couple": true,
	"bunch": true, "touch": true, "smidge": true, "wee": true, "mess": true, "moment": true,
	"minute": true, "second": true, "hour": true, "day": true, "week": true, "month": true,
	"year": true, "while": true, "hurry": true, "rush": true, "loss": true, "pickle": true,
	"bind": true, "jam": true, "fan": true, "idiot": true, "moron": true, "fool": true,
	"dummy": true, "tiny": true, "teeny": true, "part": true, "way": true, "step": true,
	"sucker": true, "nervous": true, "wreck": true,
}

// identity reports whether the words after "I'm a/an" can describe who the
// user is: it must start with a word that is not a state or quantity.
func identity(x string) bool {
	w := nextWord(x, 0)
	if w == "" || notIdentity[w] {
		return false
	}
	if w == "big" || w == "huge" || w == "massive" || w == "great" || w == "total" || w == "complete" || w == "long" {
		w2 := nextWord(x, len(w))
		if notIdentity[w2] || w2 == "" {
			return false
		}
	}
	return true
}

// notWorkObject lists first words after "I work in/on/at" that are about time
// or pronouns rather than a field ("I work in the morning", "I work on it").
var notWorkObject = map[string]bool{
	"it": true, "this": true, "that": true, "them": true, "these": true, "those": true,
	"weekends": true, "mornings": true, "evenings": true, "nights": true, "night": true,
	"shifts": true, "monday": true, "tuesday": true, "wednesday": true, "thursday": true,
	"friday": true, "saturday": true, "sunday": true, "mondays": true, "tuesdays": true,
	"wednesdays": true, "thursdays": true, "fridays": true, "saturdays": true, "sundays": true,
	"progress": true, "silence": true, "bed": true, "parallel": true, "batches": true,
	"bursts": true, "sprints": true, "here": true, "there": true, "him": true, "her": true,
	"something": true, "anything": true, "everything": true, "nothing": true, "things": true,
	"stuff": true, "me": true, "you": true, "myself": true, "now": true, "tomorrow": true,
	"today": true, "tonight": true, "time": true, "minutes": true, "hours": true, "days": true,
}

// workObject reports whether the object of "I work in/on/at" names a field,
// place or product rather than a time or a pronoun.
func workObject(x string) bool {
	w := nextWord(x, 0)
	if w == "" || notWorkObject[w] {
		return false
	}
	switch w {
	case "the", "a", "an", "my":
		w2 := nextWord(x, len(w))
		switch w2 {
		case "morning", "mornings", "evening", "evenings", "afternoon", "afternoons", "night",
			"nights", "weekend", "weekends", "day", "days", "meantime", "moment", "few", "couple",
			"minute", "second", "while", "bit", "hour", "week", "month", "spare", "free", "office":
			return false
		}
	}
	return true
}

// explainee trims the object of "explain like I'm …" to its subject
// description, dropping a following question ("… 5 how does RAG work"), and
// turns a bare age into "N years old".
func explainee(x string) string {
	words := strings.Fields(x)
	for i, w := range words {
		if i == 0 {
			continue
		}
		switch strings.ToLower(strings.Trim(w, ",.;:!?")) {
		case "how", "what", "why", "when", "where", "which", "who", "whether", "about", "please", "and", "but", "so":
			words = words[:i]
		}
		if len(words) == i {
			break
		}
	}
	x = strings.TrimRight(strings.Join(words, " "), " ,.;:!?")
	if bareAge.MatchString(x) {
		x += " years old"
	}
	return x
}

var bareAge = lazyRegexp(`(?i)^(?:\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)$`)

// rememberContent turns "remember that I/my …" into a third-person fact.
func rememberContent(subj, x string) string {
	s := strings.ToLower(collapseSpace(subj))
	switch s {
	case "my":
		return "User's " + thirdPerson(x)
	case "i'm", "im", "i am":
		if stateAfterIm.MatchString(x) {
			return ""
		}
		return "User is " + thirdPerson(x)
	case "i've", "i have":
		return "User has " + thirdPerson(x)
	case "i'd", "i would":
		return "User would " + thirdPerson(x)
	case "i'll", "i will":
		return "User will " + thirdPerson(x)
	}
	// Bare "I": conjugate the verb, skipping adverbs ("I always drink tea"),
	// and keep what punctuation follows it ("I do.").
	words := strings.Fields(x)
	for i, w := range words {
		core := strings.TrimRight(w, ",.;:!?")
		lw := strings.ToLower(core)
		if adverbs[lw] {
			continue
		}
		if i+1 < len(words) && lw == "do" && strings.EqualFold(words[i+1], "not") {
			words[i] = "does"
		} else {
			words[i] = conjugate3(core) + w[len(core):]
		}
		break
	}
	return "User " + thirdPerson(strings.Join(words, " "))
}

var stateAfterIm = lazyRegexp(`(?i)^(?:not\s+sure|sorry|confused|lost|a\s+(?:bit|little|tad)|going\s+to|gonna|trying|looking|about\s+to|just\s+wondering|wondering|curious|late|busy|tired|back|done|here|ready|on\s+my\s+way|afraid|glad|happy|sad|stuck|fine|ok|okay)\b`)

var adverbs = map[string]bool{
	"always": true, "never": true, "usually": true, "often": true, "sometimes": true,
	"really": true, "only": true, "just": true, "also": true, "still": true, "mostly": true,
	"generally": true, "rarely": true, "currently": true, "now": true, "typically": true,
	"mainly": true, "primarily": true, "normally": true, "actually": true,
}

// conjugate3 puts an English verb in the third person singular ("live" ->
// "lives", "have" -> "has", "can" -> "can").
func conjugate3(w string) string {
	lw := strings.ToLower(w)
	switch lw {
	case "have":
		return "has"
	case "do":
		return "does"
	case "go":
		return "goes"
	case "am", "are":
		return "is"
	case "was", "were":
		return "was"
	case "don't":
		return "doesn't"
	case "haven't":
		return "hasn't"
	case "aren't":
		return "isn't"
	case "need":
		return "needs"
	case "can", "can't", "cannot", "could", "couldn't", "will", "won't", "would", "wouldn't",
		"should", "shouldn't", "must", "mustn't", "may", "might", "shall", "didn't", "did",
		"had", "hadn't", "used", "wasn't", "weren't":
		return w
	}
	if strings.HasSuffix(lw, "ed") || !isASCIIWord(lw) {
		return w
	}
	switch {
	case strings.HasSuffix(lw, "s"), strings.HasSuffix(lw, "sh"), strings.HasSuffix(lw, "ch"),
		strings.HasSuffix(lw, "x"), strings.HasSuffix(lw, "z"), strings.HasSuffix(lw, "o"):
		return w + "es"
	case len(lw) > 1 && strings.HasSuffix(lw, "y") && !strings.ContainsRune("aeiou", rune(lw[len(lw)-2])):
		return w[:len(w)-1] + "ies"
	}
	return w + "s"
}

// isASCIIWord reports whether s is a lower-case English word: letters a to
// z, and hyphens within ("re-use", "double-check").
func isASCIIWord(s string) bool {
	return s != "" && s[0] != '-' && s[len(s)-1] != '-' && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz-") == ""
}

// thirdPerson rewrites first-person words for a statement about the user
// ("my team" -> "their team"). Second-person words stay: the profile is read
// by the assistant, for whom "you" is itself.
func thirdPerson(s string) string {
	return rewritePronouns(s, map[string]string{
		"i": "they", "i'm": "they're", "i've": "they've", "i'd": "they'd", "i'll": "they'll",
		"me": "them", "my": "their", "mine": "theirs", "myself": "themselves",
	}, "they are", "they were")
}

// imperativePronouns rewrites first-person words for an instruction to the
// assistant ("call me Sam" -> "call the user Sam").
func imperativePronouns(s string) string {
	return rewritePronouns(s, map[string]string{
		"i": "the user", "i'm": "the user is", "i've": "the user has", "i'd": "the user would",
		"i'll": "the user will", "me": "the user", "my": "the user's", "mine": "the user's",
		"myself": "the user",
	}, "the user is", "the user was")
}

func rewritePronouns(s string, m map[string]string, iAm, iWas string) string {
	words := strings.Split(s, " ")
	for i := 0; i < len(words); i++ {
		w := words[i]
		core := strings.TrimRight(w, ",.;:!?")
		tail := w[len(core):]
		lc := strings.ToLower(core)
		if lc == "i" && i+1 < len(words) && tail == "" {
			switch strings.ToLower(words[i+1]) {
			case "am":
				words[i], words[i+1] = iAm, ""
				continue
			case "was":
				words[i], words[i+1] = iWas, ""
				continue
			}
		}
		if r, ok := m[lc]; ok {
			words[i] = r + tail
		}
	}
	return collapseSpace(strings.Join(words, " "))
}

func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// finish cleans a Content: no control characters, single spaces, no
// trailing punctuation, dashes or courtesy words, at most MaxIntentContent runes
// (cut at a word boundary).
func finish(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return ' '
		}
		return r
	}, s)
	s = collapseSpace(s)
	for {
		before := s
		s = strings.TrimRightFunc(s, func(r rune) bool {
			return unicode.IsSpace(r) || strings.ContainsRune(`.,;:!?…"'*_)]}”’»。！？、，；：｡‼⁇⁈⁉-–—`, r)
		})
		s = trailingCourtesy.ReplaceAllString(s, "")
		if s == before {
			break
		}
	}
	if utf8.RuneCountInString(s) > MaxIntentContent {
		cut, runes := len(s), 0
		for i := range s {
			if runes == MaxIntentContent {
				cut = i
				break
			}
			runes++
		}
		// Cut at the last space unless that would drop most of the text
		// (one very long word): then cut inside the word. A cut before a
		// space is at a word boundary already.
		if s[cut] != ' ' {
			if sp := strings.LastIndexByte(s[:cut], ' '); sp > cut/2 {
				cut = sp
			}
		}
		s = strings.TrimRight(s[:cut], " .,;:!?-")
	}
	return s
}

var trailingCourtesy = lazyRegexp(`(?i)(?:\s+|^)(?:please|pls|plz|thanks|thank\s+you|thx|ty|lol|:\)|:-\))$`)

// hasAlnum reports whether s has a letter or a digit.
func hasAlnum(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// normText is a message normalised for matching, with a map back to the
// original bytes. Normalisation: invalid UTF-8 and control characters become
// spaces, line and paragraph separators become '\n', format characters
// (zero-width spaces, bidi controls, soft hyphens) are removed, curly and
// modifier apostrophes become "'", and runs of spaces collapse to one.
type normText struct {
	s          string
	start, end []int // original byte range of the rune that produced s[i]
	orig       string
}

func normalize(msg string) *normText {
	n := &normText{orig: msg}
	b := make([]byte, 0, len(msg))
	n.start = make([]int, 0, len(msg))
	n.end = make([]int, 0, len(msg))
	var buf [utf8.UTFMax]byte
	emit := func(r rune, os, oe int) {
		k := utf8.EncodeRune(buf[:], r)
		for j := 0; j < k; j++ {
			b = append(b, buf[j])
			n.start = append(n.start, os)
			n.end = append(n.end, oe)
		}
	}
	last := func() byte {
		if len(b) == 0 {
			return '\n'
		}
		return b[len(b)-1]
	}
	for i := 0; i < len(msg); {
		r, size := utf8.DecodeRuneInString(msg[i:])
		os, oe := i, i+size
		i += size
		r, keep := normRune(r, size)
		if !keep {
			continue
		}
		switch r {
		case ' ':
			if c := last(); c == ' ' || c == '\n' {
				continue
			}
		case '\n':
			if last() == ' ' {
				b = b[:len(b)-1]
				n.start = n.start[:len(n.start)-1]
				n.end = n.end[:len(n.end)-1]
			}
			if last() == '\n' {
				continue
			}
		}
		emit(r, os, oe)
	}
	n.s = string(b)
	return n
}

// normRune returns what rune r (size bytes of the message) becomes in the
// normalised text, and false for a rune that is removed: see normText.
func normRune(r rune, size int) (rune, bool) {
	switch {
	case r >= ' ' && r < utf8.RuneSelf && r != 0x7f:
		// printable ASCII: kept as is
	case r == utf8.RuneError && size == 1:
		r = ' '
	case r == '\n' || r == '\r' || r == '\v' || r == '\f' || r == '\u0085' || r == '\u2028' || r == '\u2029':
		r = '\n'
	case r == '’' || r == '‘' || r == 'ʼ' || r == '′' || r == '＇':
		r = '\''
	case r == '\u00AD' || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Mn, r) && r >= 0xFE00 && r <= 0xFE0F:
		return r, false // format characters and variation selectors
	case unicode.IsSpace(r) || unicode.IsControl(r):
		r = ' '
	}
	return r, true
}

// original returns the bytes of the original message that produced
// normalised bytes [a, b).
func (n *normText) original(a, b int) string {
	if a < 0 || b > len(n.s) || a >= b {
		return ""
	}
	return n.orig[n.start[a]:n.end[b-1]]
}
