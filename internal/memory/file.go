package memory

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/ragmem/ragmem/internal/clean"
	"github.com/ragmem/ragmem/internal/memory/internal/files"
	"github.com/ragmem/ragmem/internal/memory/internal/pattern"
)

// Errors of the memory package. The other agent-memory packages
// (memory/layers, memory/extraction) return them too.
var (
	// ErrInvalid marks invalid input: a bad memory file, frontmatter field,
	// pattern, slug or request.
	ErrInvalid = files.ErrInvalid
	// ErrNotFound is returned for a memory that does not exist.
	ErrNotFound = files.ErrNotFound
	// ErrTooLarge is returned for content or files over their limits.
	ErrTooLarge = files.ErrTooLarge
	// ErrLocked is returned when another process holds a lock too long.
	ErrLocked = files.ErrLocked
	// ErrNotRegular is returned for a memory file that is a symbolic link,
	// a named pipe, a device or anything but a regular file: memory files
	// are never followed or read through such a path.
	ErrNotRegular = files.ErrNotRegular
)

// Limits of the file format.
const (
	// MaxTitleLen bounds a title, in bytes.
	MaxTitleLen = 200
	// MaxPatterns bounds the whenToUse patterns of one entry.
	MaxPatterns = 50
	// maxPatternLen bounds one whenToUse pattern, in bytes.
	maxPatternLen = pattern.MaxLen
	// maxTags bounds the tags (and related memories) of one entry.
	maxTags = 50
	// maxFrontmatterBytes bounds the YAML of one entry.
	maxFrontmatterBytes = 64 << 10
)

// Frontmatter is the YAML header of a memory entry (docs/memory.md,
// "Memory files").
type Frontmatter struct {
	// Title is unique and descriptive; the file name is its slug. Required.
	Title string `json:"title"`
	// WhenToUse lists when the memory should be injected (OR): pipe
	// alternatives ("auth|login"), wildcards ("implement*auth"), regular
	// expressions ("implement.*auth"), substrings, or natural language
	// ("When implementing security features"). In the file it is one string
	// or a list. Required.
	WhenToUse []string `json:"whenToUse"`
	// Tags are categories; tags shared with the agent's specialty add to
	// the score.
	Tags []string `json:"tags,omitempty"`
	// Importance defaults to medium when the file does not say.
	Importance Importance `json:"importance"`
	// DiscoveredAt is when the memory was learned (ISO 8601).
	DiscoveredAt time.Time `json:"discoveredAt,omitzero"`
	// DiscoveredBy is the agent that learned it.
	DiscoveredBy string `json:"discoveredBy,omitempty"`
	// DiscoveredIn is the task that led to it.
	DiscoveredIn string `json:"discoveredIn,omitempty"`
	// Source is where it came from (a file, a URL, "extraction").
	Source string `json:"source,omitempty"`
	// RelatedMemories names other memories by slug or file name.
	RelatedMemories []string `json:"relatedMemories,omitempty"`

	// The fields below are optional; files without them load as before.

	// OccurredAt is when what the memory says happened (or became true),
	// as opposed to DiscoveredAt, when it was stored. Default: unset, read
	// as DiscoveredAt.
	OccurredAt time.Time `json:"occurredAt,omitzero"`
	// Negative marks a memory that says what not to do ("don't do X"); it
	// is injected as a warning. Default false; Store.Add sets it for a
	// title that starts with "Don't", "Do not", "Never" or "Avoid".
	Negative bool `json:"negative,omitempty"`
	// Supersedes names older memories (slugs) that this one replaces: they
	// stay on disk and searchable, marked superseded from this memory's
	// time on.
	Supersedes []string `json:"supersedes,omitempty"`
	// Conflicts names memories this one may contradict: proposed, not
	// applied (no model was there to decide); see Store.Supersede. In a
	// Memory from the store, only the conflicts no supersession resolved.
	Conflicts []string `json:"conflicts,omitempty"`
	// Merged marks an entry that restates the memory in other words
	// (consolidation): it strengthens the memory and is searchable, and the
	// memory's shown body stays that of its latest entry that is not merged.
	Merged bool `json:"merged,omitempty"`
	// Provenance says how a merge or a supersession was decided ("similarity
	// 0.93", "model gpt-4o-mini: ...", "user").
	Provenance string `json:"provenance,omitempty"`
	// Author says who wrote the entry: AuthorUser (the CLI's memory add, an
	// explicit API or MCP call, a file written or edited by hand: an entry
	// without the field) or AuthorExtraction (a chat model's extraction
	// from an agent's run). Extraction supersedes or merges into what the
	// user wrote only when its caller asks (NewMemory.SupersedeUser).
	Author string `json:"author,omitempty"`

	// extractedHash seals an extracted entry (extractedHash in the file:
	// entryDigest of its title and body, written with it): an entry marked
	// extracted whose seal does not match was written or edited by hand,
	// and is the user's.
	extractedHash string
}

// entryDigest is the seal of an extracted entry: a hash of its title and
// body, white space aside.
func entryDigest(title, body string) string {
	h := sha256.Sum256([]byte(strings.Join(strings.Fields(title), " ") + "\x00" + strings.Join(strings.Fields(body), " ")))
	return hex.EncodeToString(h[:12])
}

// Authors of a memory entry (Frontmatter.Author).
const (
	AuthorUser       = "user"
	AuthorExtraction = "extraction"
)

// Entry is one entry of a memory file: the file's first memory, or one
// appended after a "---" separator.
type Entry struct {
	Frontmatter
	// Body is the Markdown text after the frontmatter, without the
	// surrounding blank lines.
	Body string `json:"body"`
	// Line is the 1-based line of the entry's opening "---".
	Line int `json:"line"`
}

// ParseError reports an invalid memory file with the file and line.
type ParseError struct {
	File string // file name ("" when parsing bytes)
	Line int    // 1-based; 0 when the whole file is concerned
	Msg  string
}

func (e *ParseError) Error() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.File != "":
		return e.File + ": " + e.Msg
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *ParseError) Unwrap() error { return ErrInvalid }

func perr(line int, format string, args ...any) *ParseError {
	return &ParseError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// line is one line of a file: its text without the line end, and its
// 1-based number.
type line struct {
	text string
	no   int
}

func splitLines(data []byte) []line {
	s := string(data)
	s = strings.TrimPrefix(s, "\uFEFF")
	var out []line
	no := 1
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		var l string
		if i < 0 {
			l, s = s, ""
		} else {
			l, s = s[:i], s[i+1:]
		}
		out = append(out, line{text: strings.TrimSuffix(l, "\r"), no: no})
		no++
	}
	return out
}

func isDelim(l string) bool { return l == "---" }
func isBlank(l string) bool { return strings.TrimSpace(l) == "" }

// ParseFile parses a memory file: one or more entries, each a YAML
// frontmatter between "---" lines followed by a Markdown body. An appended
// entry starts after a separator: a blank line, a "---" line, optional blank
// lines, and the "---" that opens its frontmatter (what Store.Add writes:
// "\n\n---\n\n---\n..."). Any problem makes the whole file invalid; the
// error is a *ParseError with the line. ParseFile never panics.
func ParseFile(data []byte) ([]Entry, error) {
	if !utf8.Valid(data) {
		return nil, perr(firstInvalidLine(data), "the file is not valid UTF-8")
	}
	lines := splitLines(data)
	i := 0
	if len(lines) == 0 || !isDelim(lines[0].text) {
		return nil, perr(1, "a memory file must start with YAML frontmatter: a line '---', the fields, and a closing '---'")
	}
	var out []Entry
	for i < len(lines) {
		open := lines[i]
		// The frontmatter runs to the next "---".
		j := i + 1
		for j < len(lines) && !isDelim(lines[j].text) {
			j++
		}
		if j >= len(lines) {
			return nil, perr(open.no, "the frontmatter opened here is never closed with '---'")
		}
		yml := joinLines(lines[i+1 : j])
		fm, err := parseFrontmatter(yml, open.no)
		if err != nil {
			return nil, err
		}
		// The body runs to the next separator.
		k := j + 1
		next := len(lines)
		for p := k; p < len(lines); p++ {
			if isDelim(lines[p].text) && p > k && isBlank(lines[p-1].text) {
				q := p + 1
				for q < len(lines) && isBlank(lines[q].text) {
					q++
				}
				if q < len(lines) && isDelim(lines[q].text) {
					next = p
					break
				}
			}
		}
		body := strings.Trim(joinLines(lines[k:next]), "\n")
		body = strings.TrimRightFunc(body, unicode.IsSpace)
		if fm.Author == AuthorExtraction && fm.extractedHash != entryDigest(fm.Title, body) {
			fm.Author = AuthorUser // marked extracted, but written or edited by hand
		}
		if fm.Author != AuthorExtraction {
			fm.extractedHash = "" // a seal means nothing on the user's entry
		}
		out = append(out, Entry{Frontmatter: fm, Body: body, Line: open.no})
		if next == len(lines) {
			break
		}
		i = next + 1
		for i < len(lines) && isBlank(lines[i].text) {
			i++
		}
	}
	return out, nil
}

func joinLines(ls []line) string {
	var b strings.Builder
	for n, l := range ls {
		if n > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l.text)
	}
	return b.String()
}

func firstInvalidLine(data []byte) int {
	no := 1
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		if r == utf8.RuneError && n <= 1 {
			return no
		}
		if r == '\n' {
			no++
		}
		data = data[n:]
	}
	return no
}

var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+)`) })

// parseFrontmatter decodes and validates one frontmatter; opener is the
// line number of its opening "---", so that line n of the YAML is line
// opener+n of the file.
func parseFrontmatter(src string, opener int) (fm Frontmatter, err error) {
	if len(src) > maxFrontmatterBytes {
		return fm, perr(opener, "the frontmatter is larger than %d bytes", maxFrontmatterBytes)
	}
	root, err := decodeFrontmatterYAML(src, opener)
	if err != nil {
		return fm, err
	}
	at := func(n *yaml.Node) int { return opener + max(n.Line, 1) }
	seen := map[string]bool{}
	fm.Importance = Medium
	for p := 0; p+1 < len(root.Content); p += 2 {
		kn, vn := deref(root.Content[p]), deref(root.Content[p+1])
		if kn.Kind != yaml.ScalarNode {
			return fm, perr(at(kn), "field names must be plain words")
		}
		key := kn.Value
		if seen[key] {
			return fm, perr(at(kn), "field %q appears twice", clean.Clip(key, 40))
		}
		seen[key] = true
		// Unknown fields are allowed (other tools may add their own).
		if read, ok := frontmatterFields[key]; ok {
			if e := read(&fm, key, vn); e != nil {
				return fm, perr(at(vn), "%s", e)
			}
		}
	}
	return fm, checkRequired(&fm, opener)
}

// decodeFrontmatterYAML parses src as YAML and returns its root mapping.
// A YAML error is reported at the first line where src stops parsing;
// yaml.v3 panics on some hostile input, which is reported as invalid YAML
// too.
func decodeFrontmatterYAML(src string, opener int) (root *yaml.Node, err error) {
	var doc yaml.Node
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = perr(opener+1, "the frontmatter is not valid YAML")
			}
		}()
		if e := yaml.Unmarshal([]byte(src), &doc); e != nil {
			err = yamlError(src, opener, e)
		}
	}()
	if err != nil {
		return nil, err
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, perr(opener, "the frontmatter is empty; it needs at least title and whenToUse")
	}
	root = deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil, perr(opener+max(root.Line, 1), "the frontmatter must be a mapping of fields (title: ..., whenToUse: ...)")
	}
	return root, nil
}

// yamlError turns yaml.v3's error into a ParseError at the file's line:
// the first failing line when it can be told, else the line the error
// names, else the first line of the frontmatter.
func yamlError(src string, opener int, e error) *ParseError {
	ln := opener + 1
	if n := firstFailingLine(src); n > 0 {
		ln = opener + n
	} else if m := yamlLine().FindStringSubmatch(e.Error()); m != nil {
		if n, convErr := strconv.Atoi(m[1]); convErr == nil && n > 0 {
			ln = opener + n
		}
	}
	msg := strings.TrimPrefix(e.Error(), "yaml: ")
	msg = yamlLine().ReplaceAllString(msg, "")
	msg = strings.TrimLeft(msg, ": ")
	return perr(ln, "invalid YAML in the frontmatter: %s", clean.Clip(msg, 200))
}

// checkRequired reports a frontmatter without the fields every entry
// needs, at the opening line (the field may be missing altogether).
func checkRequired(fm *Frontmatter, opener int) error {
	if fm.Title == "" {
		return perr(opener, "title is missing or empty")
	}
	if len(fm.Title) > MaxTitleLen {
		return perr(opener, "title is longer than %d bytes", MaxTitleLen)
	}
	if len(fm.WhenToUse) == 0 {
		return perr(opener, "whenToUse is missing or empty: say when this memory should be used (e.g. \"auth|login\" or \"When implementing security features\")")
	}
	return nil
}

// fieldReader reads the value of one frontmatter field (named key) into
// fm. Its error is the message; parseFrontmatter adds the value's line.
type fieldReader func(fm *Frontmatter, key string, vn *yaml.Node) error

// frontmatterFields maps each known field to its reader, by the kind of
// value it holds: a line of text, a time, a yes/no, a list, or one of a
// few words.
var frontmatterFields = map[string]fieldReader{
	"title":        lineField(func(fm *Frontmatter) *string { return &fm.Title }),
	"discoveredBy": lineField(func(fm *Frontmatter) *string { return &fm.DiscoveredBy }),
	"discoveredIn": lineField(func(fm *Frontmatter) *string { return &fm.DiscoveredIn }),
	"source":       lineField(func(fm *Frontmatter) *string { return &fm.Source }),
	// Clipped as validateFrontmatter clips it.
	"provenance": scalarField(func(fm *Frontmatter, _, s string) error {
		fm.Provenance = clean.Clip(clean.Line(s), 2*maxPatternLen)
		return nil
	}),
	"extractedHash": scalarField(func(fm *Frontmatter, _, s string) error {
		fm.extractedHash = strings.TrimSpace(s)
		return nil
	}),
	"discoveredAt":    timeField(func(fm *Frontmatter) *time.Time { return &fm.DiscoveredAt }),
	"occurredAt":      timeField(func(fm *Frontmatter) *time.Time { return &fm.OccurredAt }),
	"negative":        boolField(func(fm *Frontmatter) *bool { return &fm.Negative }),
	"merged":          boolField(func(fm *Frontmatter) *bool { return &fm.Merged }),
	"whenToUse":       readWhenToUse,
	"tags":            listField(func(fm *Frontmatter) *[]string { return &fm.Tags }, false),
	"relatedMemories": listField(func(fm *Frontmatter) *[]string { return &fm.RelatedMemories }, false),
	"supersedes":      listField(func(fm *Frontmatter) *[]string { return &fm.Supersedes }, true),
	"conflicts":       listField(func(fm *Frontmatter) *[]string { return &fm.Conflicts }, true),
	"importance":      scalarField(setImportance),
	"author":          scalarField(setAuthor),
}

// scalarField reads a single value (a list or a mapping is an error) and
// gives its text to set.
func scalarField(set func(fm *Frontmatter, key, s string) error) fieldReader {
	return func(fm *Frontmatter, key string, vn *yaml.Node) error {
		s, err := scalar(vn, key)
		if err != nil {
			return err
		}
		return set(fm, key, s)
	}
}

// lineField reads a single value as one line of text.
func lineField(field func(*Frontmatter) *string) fieldReader {
	return scalarField(func(fm *Frontmatter, _, s string) error {
		*field(fm) = clean.Line(s)
		return nil
	})
}

// timeField reads a single value as an ISO 8601 time (ParseTime).
func timeField(field func(*Frontmatter) *time.Time) fieldReader {
	return scalarField(func(fm *Frontmatter, key, s string) error {
		t, err := ParseTime(s)
		if err != nil {
			return fmt.Errorf("%s %q is not an ISO 8601 time (e.g. 2026-01-23T10:30:00Z)", key, clean.Clip(s, 60))
		}
		*field(fm) = t
		return nil
	})
}

// boolField reads a single value as true or false.
func boolField(field func(*Frontmatter) *bool) fieldReader {
	return scalarField(func(fm *Frontmatter, key, s string) error {
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%s is %q; use true or false", key, clean.Clip(s, 40))
		}
		*field(fm) = b
		return nil
	})
}

// listField reads a string, split on commas, or a list of strings, of at
// most maxTags entries; names drops a ".md" from each (the entries name
// memories by slug).
func listField(field func(*Frontmatter) *[]string, names bool) fieldReader {
	return func(fm *Frontmatter, key string, vn *yaml.Node) error {
		l, err := stringList(vn, key, true)
		if err != nil {
			return err
		}
		if len(l) > maxTags {
			return fmt.Errorf("%s has %d entries; at most %d are allowed", key, len(l), maxTags)
		}
		if names {
			for i := range l {
				l[i] = strings.TrimSuffix(l[i], ".md")
			}
		}
		*field(fm) = l
		return nil
	}
}

// readWhenToUse reads the patterns: one string (commas are part of a
// pattern) or a list, within MaxPatterns patterns of maxPatternLen bytes.
func readWhenToUse(fm *Frontmatter, key string, vn *yaml.Node) error {
	l, err := stringList(vn, key, false)
	if err != nil {
		return err
	}
	if len(l) > MaxPatterns {
		return fmt.Errorf("whenToUse has %d patterns; at most %d are allowed", len(l), MaxPatterns)
	}
	for _, pat := range l {
		if len(pat) > maxPatternLen {
			return fmt.Errorf("a whenToUse pattern is longer than %d bytes", maxPatternLen)
		}
	}
	fm.WhenToUse = l
	return nil
}

// setImportance reads low, medium, high or critical (ParseImportance).
func setImportance(fm *Frontmatter, _, s string) error {
	imp, err := ParseImportance(s)
	if err != nil {
		return fmt.Errorf("importance is %q; use low, medium, high or critical", clean.Clip(s, 40))
	}
	fm.Importance = imp
	return nil
}

// setAuthor reads AuthorUser or AuthorExtraction, in any case.
func setAuthor(fm *Frontmatter, _, s string) error {
	switch a := strings.ToLower(strings.TrimSpace(s)); a {
	case AuthorUser, AuthorExtraction:
		fm.Author = a
		return nil
	}
	return fmt.Errorf("author is %q; use %s or %s", clean.Clip(s, 40), AuthorUser, AuthorExtraction)
}

// firstFailingLine returns the first line of src at which its YAML stops
// parsing (the prefix up to it fails), or 0 when that cannot be told.
// yaml.v3's own line numbers are 0-based for some errors and 1-based for
// others; this is exact for an error on a line and points at the opening
// line of a construct that is never closed.
func firstFailingLine(src string) int {
	lines := strings.Split(src, "\n")
	if len(lines) > 300 {
		return 0
	}
	for k := 1; k <= len(lines); k++ {
		var n yaml.Node
		ok := func() (ok bool) {
			defer func() {
				if recover() != nil {
					ok = false
				}
			}()
			return yaml.Unmarshal([]byte(strings.Join(lines[:k], "\n")), &n) == nil
		}()
		if !ok {
			return k
		}
	}
	return 0
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 8; i++ {
		n = n.Alias
	}
	if n == nil {
		return &yaml.Node{}
	}
	return n
}

func scalar(n *yaml.Node, field string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("%s must be a single value", field)
	}
	if n.Tag == "!!null" {
		return "", nil
	}
	return n.Value, nil
}

// stringList reads a string or a list of strings; with commas, a single
// string is split on commas ("auth, security").
func stringList(n *yaml.Node, field string, commas bool) ([]string, error) {
	var raw []string
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return nil, nil
		}
		if commas {
			raw = strings.Split(n.Value, ",")
		} else {
			raw = []string{n.Value}
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			c = deref(c)
			if c.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("%s must be a string or a list of strings", field)
			}
			raw = append(raw, c.Value)
		}
	default:
		return nil, fmt.Errorf("%s must be a string or a list of strings", field)
	}
	var out []string
	seen := map[string]bool{}
	for _, s := range raw {
		s = clean.Line(s)
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out, nil
}

var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02",
}

// ParseTime parses an ISO 8601 time as discoveredAt accepts it: RFC 3339
// (2026-01-23T10:30:00Z), without a zone (read as UTC), with a space for the
// T, without seconds, or a date alone.
func ParseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: time %q", ErrInvalid, s)
}

// compilePattern compiles a whenToUse pattern, failing with ErrInvalid.
func compilePattern(s string) (*pattern.Pattern, error) {
	p, err := pattern.Compile(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return p, nil
}

// validateFrontmatter checks a frontmatter about to be written and cleans
// its strings (single lines, no control characters).
func validateFrontmatter(fm *Frontmatter) error {
	fm.Title = clean.Line(fm.Title)
	if fm.Title == "" {
		return fmt.Errorf("%w: title is empty", ErrInvalid)
	}
	if len(fm.Title) > MaxTitleLen {
		return fmt.Errorf("%w: title is longer than %d bytes", ErrInvalid, MaxTitleLen)
	}
	var err error
	if fm.WhenToUse, err = cleanList(fm.WhenToUse, "whenToUse", MaxPatterns, maxPatternLen); err != nil {
		return err
	}
	if len(fm.WhenToUse) == 0 {
		return fmt.Errorf("%w: whenToUse is empty: say when this memory should be used (e.g. \"auth|login\" or \"When implementing security features\")", ErrInvalid)
	}
	for _, p := range fm.WhenToUse {
		if _, err := compilePattern(p); err != nil {
			return err
		}
	}
	if fm.Tags, err = cleanList(fm.Tags, "tags", maxTags, MaxTitleLen); err != nil {
		return err
	}
	if fm.RelatedMemories, err = cleanList(fm.RelatedMemories, "relatedMemories", maxTags, MaxTitleLen); err != nil {
		return err
	}
	if fm.Importance == 0 {
		fm.Importance = Medium
	}
	if !fm.Importance.Valid() {
		return fmt.Errorf("%w: importance %d", ErrInvalid, int(fm.Importance))
	}
	fm.DiscoveredBy = clean.Clip(clean.Line(fm.DiscoveredBy), MaxTitleLen)
	fm.DiscoveredIn = clean.Clip(clean.Line(fm.DiscoveredIn), 2*maxPatternLen)
	fm.Source = clean.Clip(clean.Line(fm.Source), 2*maxPatternLen)
	fm.Provenance = clean.Clip(clean.Line(fm.Provenance), 2*maxPatternLen)
	switch fm.Author = strings.ToLower(strings.TrimSpace(fm.Author)); fm.Author {
	case "", AuthorUser, AuthorExtraction:
	default:
		return fmt.Errorf("%w: author is %q; use %s or %s", ErrInvalid, clean.Clip(fm.Author, 40), AuthorUser, AuthorExtraction)
	}
	for _, l := range []*[]string{&fm.Supersedes, &fm.Conflicts} {
		for i, v := range *l {
			(*l)[i] = strings.TrimSuffix(v, ".md")
		}
		field := "supersedes"
		if l == &fm.Conflicts {
			field = "conflicts"
		}
		if *l, err = cleanList(*l, field, maxTags, MaxTitleLen); err != nil {
			return err
		}
		for _, v := range *l {
			if !validName(v) {
				return fmt.Errorf("%w: %s names %q, which is not a memory name", ErrInvalid, field, clean.Clip(v, 80))
			}
		}
	}
	return nil
}

func cleanList(in []string, field string, maxN, maxLen int) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, s := range in {
		s = clean.Line(s)
		if s == "" || seen[s] {
			continue
		}
		if len(s) > maxLen {
			return nil, fmt.Errorf("%w: an entry of %s is longer than %d bytes", ErrInvalid, field, maxLen)
		}
		seen[s] = true
		out = append(out, s)
	}
	if len(out) > maxN {
		return nil, fmt.Errorf("%w: %s has %d entries; at most %d are allowed", ErrInvalid, field, len(out), maxN)
	}
	return out, nil
}

// FormatEntry renders one entry as it is written to a file: the YAML
// frontmatter between "---" lines, a blank line and the body. Body lines
// that consist of "---" after a blank line (Markdown thematic breaks) are
// written as "***", the same break, so that no body can look like an entry
// separator. fm must have passed validation (Store.Add validates).
func FormatEntry(fm Frontmatter, body string) []byte {
	var b bytes.Buffer
	body = neutralizeBody(strings.Trim(clean.Text(body), "\n"))
	body = strings.TrimRightFunc(body, unicode.IsSpace)
	if fm.Author == AuthorExtraction {
		fm.extractedHash = entryDigest(fm.Title, body)
	}
	b.WriteString("---\n")
	b.Write(marshalFrontmatter(fm))
	b.WriteString("---\n")
	if body != "" {
		b.WriteString("\n")
		b.WriteString(body)
		b.WriteString("\n")
	}
	return b.Bytes()
}

// separator is what Store.Add writes between an existing file and an
// appended entry.
const separator = "\n\n---\n\n"

func neutralizeBody(body string) string {
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		if strings.TrimRight(l, " \t") == "---" && (i == 0 || isBlank(lines[i-1])) {
			lines[i] = "***"
		}
	}
	return strings.Join(lines, "\n")
}

func marshalFrontmatter(fm Frontmatter) []byte {
	m := &yaml.Node{Kind: yaml.MappingNode}
	add := func(k string, v *yaml.Node) {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	seq := func(l []string, flow bool) *yaml.Node {
		n := &yaml.Node{Kind: yaml.SequenceNode}
		if flow {
			n.Style = yaml.FlowStyle
		}
		for _, s := range l {
			n.Content = append(n.Content, str(s))
		}
		return n
	}
	add("title", str(fm.Title))
	if len(fm.WhenToUse) == 1 {
		add("whenToUse", str(fm.WhenToUse[0]))
	} else {
		add("whenToUse", seq(fm.WhenToUse, false))
	}
	if len(fm.Tags) > 0 {
		add("tags", seq(fm.Tags, true))
	}
	add("importance", &yaml.Node{Kind: yaml.ScalarNode, Value: fm.Importance.String()})
	if !fm.DiscoveredAt.IsZero() {
		add("discoveredAt", &yaml.Node{Kind: yaml.ScalarNode, Value: fm.DiscoveredAt.UTC().Format(time.RFC3339)})
	}
	if fm.DiscoveredBy != "" {
		add("discoveredBy", str(fm.DiscoveredBy))
	}
	if fm.DiscoveredIn != "" {
		add("discoveredIn", str(fm.DiscoveredIn))
	}
	if fm.Source != "" {
		add("source", str(fm.Source))
	}
	if len(fm.RelatedMemories) > 0 {
		add("relatedMemories", seq(fm.RelatedMemories, true))
	}
	if !fm.OccurredAt.IsZero() {
		add("occurredAt", &yaml.Node{Kind: yaml.ScalarNode, Value: fm.OccurredAt.UTC().Format(time.RFC3339)})
	}
	if fm.Negative {
		add("negative", &yaml.Node{Kind: yaml.ScalarNode, Value: "true"})
	}
	if len(fm.Supersedes) > 0 {
		add("supersedes", seq(fm.Supersedes, true))
	}
	if len(fm.Conflicts) > 0 {
		add("conflicts", seq(fm.Conflicts, true))
	}
	if fm.Merged {
		add("merged", &yaml.Node{Kind: yaml.ScalarNode, Value: "true"})
	}
	if fm.Provenance != "" {
		add("provenance", str(fm.Provenance))
	}
	if fm.Author != "" {
		add("author", &yaml.Node{Kind: yaml.ScalarNode, Value: fm.Author})
	}
	if fm.Author == AuthorExtraction && fm.extractedHash != "" {
		add("extractedHash", &yaml.Node{Kind: yaml.ScalarNode, Value: fm.extractedHash})
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		// Only strings and lists of strings are encoded: this cannot fail.
		panic("memory: encoding frontmatter: " + err.Error())
	}
	_ = enc.Close()
	return b.Bytes()
}

// maxSlugLen bounds a slug, in bytes.
const maxSlugLen = 80

var reservedNames = map[string]bool{
	"con": true, "prn": true, "aux": true, "nul": true,
	"com1": true, "com2": true, "com3": true, "com4": true, "com5": true, "com6": true, "com7": true, "com8": true, "com9": true,
	"lpt1": true, "lpt2": true, "lpt3": true, "lpt4": true, "lpt5": true, "lpt6": true, "lpt7": true, "lpt8": true, "lpt9": true,
}

// Slugify turns a title into a safe file name stem: lower-case letters and
// digits (any script) joined by single hyphens, at most maxSlugLen bytes,
// never empty, never a path (no '/', '\\', '.'), never a reserved Windows
// device name. A title with no letters or digits gets "memory-" and a hash
// of the title. Slugify is idempotent: Slugify(Slugify(t)) == Slugify(t).
func Slugify(title string) string {
	if !utf8.ValidString(title) {
		title = strings.ToValidUTF8(title, " ")
	}
	var b strings.Builder
	dash := false
	for _, r := range title {
		if r == '\'' || r == '’' {
			continue // "don't" -> "dont"
		}
		r = unicode.ToLower(r)
		if (unicode.IsLetter(r) || unicode.IsDigit(r)) && unicode.IsLower(r) || unicode.IsDigit(r) ||
			unicode.IsLetter(r) && !unicode.IsUpper(r) && !unicode.IsTitle(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			if b.Len()+utf8.RuneLen(r) > maxSlugLen {
				break
			}
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		h := sha256.Sum256([]byte(title))
		return "memory-" + hex.EncodeToString(h[:4])
	}
	if reservedNames[s] {
		s += "-memory"
	}
	return s
}
