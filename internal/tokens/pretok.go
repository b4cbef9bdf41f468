package tokens

import (
	"unicode"
	"unicode/utf8"
)

// Hand-written pre-tokenizers: each splits text into the pieces that
// tiktoken's regular expression for the encoding matches, exactly as
// tiktoken-go's regexp2 engine matches them (leftmost alternative first,
// greedy quantifiers with backtracking), but in one linear pass without
// converting the text to runes. Character classes are those regexp2 uses:
// \s is unicode.IsSpace, \p{X} is Go's unicode table X, and the
// case-insensitive contractions compare unicode.ToLower of the input.
//
// The three patterns:
//
//	cl100k: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//	        ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//	o200k:  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//	        [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//	        \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//	p50k, r50k: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+

// pattern identifies a pre-tokenizer.
type pattern uint8

const (
	patCL100K pattern = iota
	patO200K
	patP50K // also r50k_base
)

// Rune classes as bits. The classes of the patterns are unions of these.
const (
	cLetter = 1 << iota // \p{L}
	cNumber             // \p{N}
	cSpace              // \s (unicode.IsSpace)
	cCRLF               // '\r' or '\n'
	cUpper              // \p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}   (o200k "upper" class)
	cLower              // \p{Ll}\p{Lm}\p{Lo}\p{M}          (o200k "lower" class)
	cMark               // \p{M}
)

var asciiClass [128]uint8

func init() {
	for r := rune(0); r < 128; r++ {
		asciiClass[r] = slowClass(r)
	}
}

func slowClass(r rune) uint8 {
	var c uint8
	if unicode.Is(unicode.L, r) {
		c |= cLetter
	}
	if unicode.Is(unicode.N, r) {
		c |= cNumber
	}
	if unicode.IsSpace(r) {
		c |= cSpace
	}
	if r == '\r' || r == '\n' {
		c |= cCRLF
	}
	m := unicode.Is(unicode.M, r)
	if m {
		c |= cMark
	}
	lmo := unicode.Is(unicode.Lm, r) || unicode.Is(unicode.Lo, r) || m
	if lmo || unicode.Is(unicode.Lu, r) || unicode.Is(unicode.Lt, r) {
		c |= cUpper
	}
	if lmo || unicode.Is(unicode.Ll, r) {
		c |= cLower
	}
	return c
}

func class(r rune) uint8 {
	if r < 128 && r >= 0 {
		return asciiClass[r]
	}
	return slowClass(r)
}

// isC0 is [^\r\n\p{L}\p{N}]: the optional leading character of a word.
func isC0(c uint8) bool { return c&(cCRLF|cLetter|cNumber) == 0 }

// isOther is [^\s\p{L}\p{N}]: punctuation, symbols, marks, controls.
func isOther(c uint8) bool { return c&(cSpace|cLetter|cNumber) == 0 }

// decode returns the rune at s[i:] and its class; i must be < len(s).
func decode(s string, i int) (rune, int, uint8) {
	if b := s[i]; b < utf8.RuneSelf {
		return rune(b), 1, asciiClass[b]
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return r, n, class(r)
}

// nextPiece returns the end of the piece that starts at s[i:], i < len(s).
func (p pattern) nextPiece(s string, i int) int {
	switch p {
	case patO200K:
		return nextO200K(s, i)
	case patP50K:
		return nextP50K(s, i)
	}
	return nextCL100K(s, i)
}

// contraction matches 's|'t|'re|'ve|'m|'ll|'d at s[i:] and returns its end,
// or -1. With fold, runes compare after unicode.ToLower, as regexp2's (?i) does.
func contraction(s string, i int, fold bool) int {
	if i >= len(s) {
		return -1
	}
	r, n := rune(s[i]), 1
	if r >= utf8.RuneSelf {
		r, n = utf8.DecodeRuneInString(s[i:])
	}
	if fold {
		r = unicode.ToLower(r)
	}
	if r != '\'' {
		return -1
	}
	j := i + n
	get := func(k int) (rune, int) {
		if k >= len(s) {
			return -1, 0
		}
		r, n := rune(s[k]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(s[k:])
		}
		if fold {
			r = unicode.ToLower(r)
		}
		return r, n
	}
	r1, n1 := get(j)
	switch r1 {
	case 's', 't', 'm', 'd':
		return j + n1
	case 'r', 'v', 'l':
		want := 'e'
		if r1 == 'l' {
			want = 'l'
		}
		if r2, n2 := get(j + n1); r2 == want {
			return j + n1 + n2
		}
	}
	return -1
}

// spaceRun returns the end of the maximal run of \s from i, and the end of
// the last '\r' or '\n' in it (-1 if none).
func spaceRun(s string, i int) (end, lastNL int) {
	lastNL = -1
	for i < len(s) {
		_, n, c := decode(s, i)
		if c&cSpace == 0 {
			break
		}
		i += n
		if c&cCRLF != 0 {
			lastNL = i
		}
	}
	return i, lastNL
}

// spaces matches the whitespace alternatives shared by the patterns, at a
// position that starts with \s: (\s*[\r\n]+ when withNL) | \s+(?!\S) | \s+.
func spaces(s string, i int, withNL bool) int {
	end, lastNL := spaceRun(s, i)
	if withNL && lastNL > 0 {
		// \s* is greedy and backtracks to the last line break in the run;
		// [\r\n]+ then takes that one (the run ends after it or continues
		// with non-break whitespace).
		return lastNL
	}
	if end == len(s) {
		return end // \s+(?!\S) at the end of the text
	}
	// \s+(?!\S): give back the last whitespace rune so that the lookahead
	// sees whitespace, if that leaves at least one.
	_, n := utf8.DecodeLastRuneInString(s[:end])
	if end-n > i {
		return end - n
	}
	return end // \s+
}

// others matches ` ?[^\s\p{L}\p{N}]+` followed by a run of the runes in
// trail (a class test), given that s[i:] starts with either ' ' followed by
// an "other" rune or an "other" rune; returns -1 otherwise.
func others(s string, i int, trail func(rune) bool) int {
	j := i
	if s[j] == ' ' {
		j++
	}
	if j >= len(s) {
		return -1
	}
	_, n, c := decode(s, j)
	if !isOther(c) {
		return -1
	}
	j += n
	for j < len(s) {
		_, n, c := decode(s, j)
		if !isOther(c) {
			break
		}
		j += n
	}
	if trail != nil {
		for j < len(s) {
			r, n, _ := decode(s, j)
			if !trail(r) {
				break
			}
			j += n
		}
	}
	return j
}

func isCRLF(r rune) bool      { return r == '\r' || r == '\n' }
func isCRLFSlash(r rune) bool { return r == '\r' || r == '\n' || r == '/' }

// numbers matches \p{N}{1,max} (max <= 0: unbounded) at i; -1 if none.
func numbers(s string, i, max int) int {
	j, k := i, 0
	for j < len(s) && (max <= 0 || k < max) {
		_, n, c := decode(s, j)
		if c&cNumber == 0 {
			break
		}
		j += n
		k++
	}
	if k == 0 {
		return -1
	}
	return j
}

// run returns the end of the maximal run from i of runes whose class has a
// bit of mask.
func run(s string, i int, mask uint8) int {
	for i < len(s) {
		_, n, c := decode(s, i)
		if c&mask == 0 {
			break
		}
		i += n
	}
	return i
}

func nextCL100K(s string, i int) int {
	if e := contraction(s, i, true); e > 0 {
		return e
	}
	_, n, c := decode(s, i)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c&cLetter != 0 {
		return run(s, i+n, cLetter)
	}
	if isC0(c) && i+n < len(s) {
		if _, _, c2 := decode(s, i+n); c2&cLetter != 0 {
			return run(s, i+n, cLetter)
		}
	}
	// \p{N}{1,3}
	if c&cNumber != 0 {
		return numbers(s, i, 3)
	}
	// ?[^\s\p{L}\p{N}]+[\r\n]*
	if e := others(s, i, isCRLF); e > 0 {
		return e
	}
	// \s*[\r\n]+|\s+(?!\S)|\s+ (s[i] is whitespace here: every other case matched above)
	return spaces(s, i, true)
}

func nextP50K(s string, i int) int {
	if e := contraction(s, i, false); e > 0 {
		return e
	}
	_, n, c := decode(s, i)
	j := i
	if s[i] == ' ' && i+1 < len(s) {
		_, _, c2 := decode(s, i+1)
		// ` ?X+`: the space is taken when the class follows it.
		if c2&(cLetter|cNumber) != 0 || isOther(c2) {
			j, c, n = i+1, c2, 0
			_, n, _ = decode(s, j)
		}
	}
	switch {
	case c&cLetter != 0:
		return run(s, j+n, cLetter)
	case c&cNumber != 0:
		return run(s, j+n, cNumber)
	case isOther(c):
		return run2(s, j+n)
	}
	return spaces(s, i, false)
}

// run2 extends a run of [^\s\p{L}\p{N}] from i.
func run2(s string, i int) int {
	for i < len(s) {
		_, n, c := decode(s, i)
		if !isOther(c) {
			break
		}
		i += n
	}
	return i
}

// o200kWord matches, at p, [U]*[W]+ (lowerFirst) or [U]+[W]* (otherwise)
// followed by an optional contraction, where U is cUpper and W is cLower;
// it returns -1 when there is no match.
func o200kWord(s string, p int, lowerFirst bool) int {
	a := run(s, p, cUpper) // greedy U* / U+
	if !lowerFirst {
		if a == p {
			return -1
		}
		e := run(s, a, cLower) // W* never fails
		if c := contraction(s, e, true); c > 0 {
			return c
		}
		return e
	}
	// U* backtracks from its longest match until W+ can start.
	for q := a; ; {
		if q < len(s) {
			if _, _, c := decode(s, q); c&cLower != 0 {
				e := run(s, q, cLower)
				if c := contraction(s, e, true); c > 0 {
					return c
				}
				return e
			}
		}
		if q == p {
			return -1
		}
		_, n := utf8.DecodeLastRuneInString(s[p:q])
		q -= n
	}
}

func nextO200K(s string, i int) int {
	_, n, c := decode(s, i)
	// Alternatives 1 and 2, each first with the optional leading rune.
	for alt := 0; alt < 2; alt++ {
		lowerFirst := alt == 0
		if isC0(c) && i+n < len(s) {
			if e := o200kWord(s, i+n, lowerFirst); e > 0 {
				return e
			}
		}
		if e := o200kWord(s, i, lowerFirst); e > 0 {
			return e
		}
	}
	if c&cNumber != 0 {
		return numbers(s, i, 3)
	}
	if e := others(s, i, isCRLFSlash); e > 0 {
		return e
	}
	return spaces(s, i, true)
}
