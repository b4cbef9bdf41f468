package chunk

import (
	"strings"
	"unicode/utf8"
)

// Boundary strengths: the level of a unit is the strength of the boundary
// just before it. Chunks prefer to end before a unit of a high level.
const (
	lvlRune     int8 = iota // inside a word longer than the budget
	lvlWord                 // between words
	lvlSoftLine             // at a line break inside a sentence, or after a heading
	lvlSentence             // between sentences, or between lines of code
	lvlLine                 // between list items, table rows, code paragraphs
	lvlPara                 // between blocks
)

// Refinement stages: how a unit over the budget is split further.
const (
	stageLines int8 = iota // at line breaks, then words
	stageWords             // at whitespace, then runes
	stageRunes             // between runes
	stageNone              // a single rune: cannot be split
)

// Limits that keep the work linear whatever the input. BPE tokenizers are
// quadratic in the length of a pre-token (a run of letters, of punctuation
// or of whitespace), so no string handed to the counter holds a long run:
// only the last gapContext bytes of the whitespace before a unit are counted
// (the rest is estimated at one token per byte, which keeps long runs of
// whitespace out of chunks); a word longer than longWord bytes is never
// counted whole but cut into pieces of at most wordPiece bytes; and a chunk
// holds at most maxWordRun bytes of one such word.
const (
	gapContext = 64
	longWord   = 1024
	wordPiece  = 256
	maxWordRun = 4096
)

// unit is a piece of a section that is never cut unless it alone exceeds the
// budget. tok counts its text [start, end) together with up to gapContext
// bytes of the whitespace before it; extra estimates the rest of that
// whitespace.
type unit struct {
	start, end int
	tok, extra int
	lvl        int8
	stage      int8
	code       bool // from a code block: no overlap may start inside it
}

// cost is the unit's estimated share of a chunk it does not start.
func (u *unit) cost() int { return u.tok + u.extra }

// splitter holds the state of one Split call.
type splitter struct {
	text  string
	st    settings
	units []unit
	lim   *limits
}

func (d *doc) split(st settings, lim *limits) []Chunk {
	sp := &splitter{text: d.text, st: st, lim: lim}
	var out []Chunk
	for _, sec := range d.sections {
		sp.units = sp.units[:0]
		sp.sectionUnits(sec.blocks)
		sp.pack(func(start, end, tok int) {
			c := Chunk{
				Index:  len(out),
				Text:   d.text[start:end],
				Start:  start,
				End:    end,
				Tokens: tok,
			}
			if sec.path != nil {
				c.HeadingPath = append([]string(nil), sec.path...)
			}
			if d.segs != nil {
				c.Start, c.End = mapRange(d.segs, start, end)
			}
			out = append(out, c)
			sp.lim.chunk(out)
		})
	}
	return out
}

// sectionUnits cuts the blocks of one section into units.
func (sp *splitter) sectionUnits(blocks []block) {
	if len(blocks) == 0 {
		return
	}
	prev := blocks[0].start
	afterHeading := false
	for _, b := range blocks {
		lvl := lvlPara
		if afterHeading {
			lvl = lvlSoftLine // do not leave a heading alone at the end of a chunk
		}
		switch b.kind {
		case blockHeading:
			sp.add(prev, b.start, b.end, lvl, stageWords)
		case blockCode:
			sp.codeUnits(prev, b.start, b.end, lvl)
		default:
			sp.paraUnits(prev, b.start, b.end, lvl)
		}
		afterHeading = b.kind == blockHeading
		prev = b.end
	}
}

// countStart returns where the count of a unit starting at start begins:
// at most gapContext bytes into the whitespace [gap, start), on a rune
// boundary, and the estimate (one token per byte) of the whitespace left
// out.
func (sp *splitter) countStart(gap, start int) (g, extra int) {
	g = gap
	if start-gap > gapContext {
		g = start - gapContext
		for g < start && !utf8.RuneStart(sp.text[g]) {
			g++
		}
		extra = g - gap
	}
	return g, extra
}

// countFrom counts text[gap:end] as countStart bounds it; it returns the
// count and the estimate for the whitespace left out.
func (sp *splitter) countFrom(gap, start, end int) (tok, extra int) {
	g, extra := sp.countStart(gap, start)
	return sp.st.count(sp.text[g:end]), extra
}

// add appends the unit [start, end) that follows the whitespace from gap,
// splitting it further at the given stage when it exceeds the budget. A
// unit with a long run (more than longWord bytes of one word or of
// whitespace) is refined before it is counted, and so is a word (the rune
// stage), which refine counts whole first and cuts only when it does not
// fit. Only a unit longer than longWord can hold a long run: the length
// test spares the scan of every other (a sixth of Split's time).
func (sp *splitter) add(gap, start, end int, lvl, stage int8) {
	if stage == stageRunes || end-start > longWord && hasLongRun(sp.text[start:end], longWord) {
		sp.refine(gap, start, end, lvl, stage)
		return
	}
	tok, extra := sp.countFrom(gap, start, end)
	if tok <= sp.st.max {
		sp.units = append(sp.units, unit{start: start, end: end, tok: tok, extra: extra, lvl: lvl, stage: stage})
		sp.lim.unit()
		return
	}
	sp.refine(gap, start, end, lvl, stage)
}

// hasLongRun reports whether s holds more than limit bytes of whitespace or
// of non-whitespace in a row.
func hasLongRun(s string, limit int) bool {
	run, space := 0, false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		sp := isSpaceRune(r, size)
		if sp != space {
			run, space = 0, sp
		}
		run += size
		if run > limit {
			return true
		}
		i += size
	}
	return false
}

// refine splits the unit [start, end) at the given stage.
func (sp *splitter) refine(gap, start, end int, lvl, stage int8) {
	text := sp.text
	start, end = trimSpan(text, start, end) // code lines start on their indentation
	switch stage {
	case stageLines:
		if !strings.Contains(text[start:end], "\n") {
			sp.refine(gap, start, end, lvl, stageWords)
			return
		}
		g, l := gap, lvl
		it := lineIter{s: text[:end], pos: start}
		for {
			_, s, e, ok := it.nextSpan()
			if !ok {
				break
			}
			if s == e {
				continue
			}
			sp.add(g, s, e, l, stageWords)
			g, l = e, lvlSoftLine
		}
	case stageWords:
		// Each word goes to the rune stage (a single word as well).
		g, l := gap, lvl
		forWords(text, start, end, func(ws, we int) {
			sp.add(g, ws, we, l, stageRunes)
			g, l = we, lvlWord
		})
	case stageRunes:
		// Pieces of at most wordPiece bytes (for a long word) and at most
		// the budget.
		g, s, l := gap, start, lvl
		for s < end {
			one := nextRune(text, s, end) // at least one rune is taken
			pe := end
			if end-start > longWord {
				pe = alignRune(text, s+wordPiece, one, end)
			}
			n, t, extra := sp.fitPrefix(g, s, pe)
			st := stageRunes
			if n == one {
				st = stageNone
			}
			sp.units = append(sp.units, unit{start: s, end: n, tok: t, extra: extra, lvl: l, stage: st})
			sp.lim.unit()
			g, s, l = n, n, lvlRune
		}
	default:
		tok, extra := sp.countFrom(gap, start, end)
		sp.units = append(sp.units, unit{start: start, end: end, tok: tok, extra: extra, lvl: lvl, stage: stageNone})
		sp.lim.unit()
	}
}

// forWords calls fn for each maximal run of non-space runes in text[start:end].
func forWords(text string, start, end int, fn func(ws, we int)) {
	ws := -1
	for i := start; i < end; {
		r, size := utf8.DecodeRuneInString(text[i:end])
		if isSpaceRune(r, size) {
			if ws >= 0 {
				fn(ws, i)
				ws = -1
			}
		} else if ws < 0 {
			ws = i
		}
		i += size
	}
	if ws >= 0 {
		fn(ws, end)
	}
}

// fitPrefix returns the largest rune boundary n in (start, end] such that
// [start, n), counted as countFrom counts it, fits the budget (assuming
// counts grow with length), with its count and gap estimate. At least one
// rune is always taken.
func (sp *splitter) fitPrefix(gap, start, end int) (n, tok, extra int) {
	text, max := sp.text, sp.st.max
	g, extra := sp.countStart(gap, start)
	count := func(n int) int { return sp.st.count(text[g:n]) }
	one := nextRune(text, start, end) // the end of the first rune
	if t := count(end); t <= max {
		return end, t, extra
	}
	lo, loTok := start, 0 // [start, lo) fits (lo == start: nothing taken yet)
	hi, hiTok := end, max+1
	// Gallop from an estimate of a few bytes per token. A probe aligns
	// back to a rune start at or after the last one found to fit, so every
	// probe is past lo.
	for probe := start + 4*max + 4; probe < hi; probe = start + 2*(probe-start) {
		p := alignRune(text, probe, one, end)
		t := count(p)
		if t > max {
			hi, hiTok = p, t
			break
		}
		lo, loTok = p, t
	}
	// Interpolate, falling back to bisection every other step (hiTok is
	// over the budget and loTok within it, so hiTok > loTok).
	for bisect := false; ; bisect = !bisect {
		var p int
		if bisect {
			p = lo + (hi-lo)/2
		} else {
			p = lo + int(int64(hi-lo)*int64(max-loTok)/int64(hiTok-loTok))
		}
		p = alignRune(text, p, one, end)
		if p <= lo {
			p = nextRune(text, lo, end)
		}
		if p >= hi {
			break
		}
		t := count(p)
		if t <= max {
			lo, loTok = p, t
		} else {
			hi, hiTok = p, t
		}
	}
	if lo == start {
		// Not even one rune fits: take it alone.
		lo = one
		loTok = count(lo)
	}
	return lo, loTok, extra
}

// alignRune moves p back to a rune boundary, keeping it in [min, end].
func alignRune(text string, p, min, end int) int {
	if p >= end {
		return end
	}
	p = max(p, min)
	for p > min && !utf8.RuneStart(text[p]) {
		p--
	}
	return p
}

// nextRune returns the offset of the rune after the one at p, for p <= end
// (end itself at the end).
func nextRune(text string, p, end int) int {
	_, size := utf8.DecodeRuneInString(text[p:end])
	return p + size
}

// codeUnits adds a code block: one unit when it fits, else one per line,
// where lines after a blank line are stronger boundaries. Lines keep their
// indentation (a unit may start on the whitespace that begins its line).
func (sp *splitter) codeUnits(gap, start, end int, lvl int8) {
	text := sp.text
	mark := len(sp.units)
	total := 0
	g, l := gap, lvl
	blank := false
	it := lineIter{s: text[:end], pos: start}
	first := true
	for {
		off, s, e, ok := it.nextSpan()
		if !ok {
			break
		}
		if s == e {
			blank = true
			continue
		}
		if !first {
			l = lvlSentence
			if blank {
				l = lvlLine
			}
		}
		first, blank = false, false
		before := len(sp.units)
		sp.add(g, off, e, l, stageWords) // blocks are trimmed: the first line starts on its text
		for _, u := range sp.units[before:] {
			total += u.cost()
		}
		g = e
	}
	if n := len(sp.units) - mark; n > 1 && total-sp.units[mark].extra <= sp.st.max {
		// The whole block fits: keep it as one unit.
		first := sp.units[mark]
		sp.units = append(sp.units[:mark], unit{start: start, end: end, tok: total - first.extra, extra: first.extra, lvl: lvl, stage: stageLines})
	}
	for k := mark; k < len(sp.units); k++ {
		sp.units[k].code = true
	}
}

// paraUnits adds a paragraph block: its items (list items, table rows,
// quoted lines) and, inside each, its sentences.
func (sp *splitter) paraUnits(gap, start, end int, lvl int8) {
	text := sp.text
	g, l := gap, lvl
	itemStart := start
	emit := func(s, e int) {
		forSentences(text[s:e], func(sp2 Span) {
			sp.add(g, s+sp2.Start, s+sp2.End, l, stageLines)
			g, l = s+sp2.End, lvlSentence
		})
	}
	it := lineIter{s: text[:end], pos: start}
	for {
		line, off, ok := it.next()
		if !ok {
			break
		}
		if off == start {
			continue
		}
		s, e := trimSpan(line, 0, len(line))
		if startsItem(line[s:e]) {
			emit(itemStart, off)
			itemStart = off + s
			l = lvlLine
		}
	}
	emit(itemStart, end)
}

// pack groups the section's units into chunks and calls emit for each with
// its range in sp.text and its exact token count.
func (sp *splitter) pack(emit func(start, end, tok int)) {
	minFill := max(sp.st.max/3, 1)
	max, overlap, count := sp.st.max, sp.st.overlap, sp.st.count
	ov, ovStart, ovTok := false, 0, 0 // overlap carried into the next chunk, when ov
	i := 0
	for i < len(sp.units) {
		us := sp.units
		tok, j := ovTok, i
		run := 0 // bytes of the long word being cut, if any
		if ov && us[i].lvl == lvlRune {
			// The overlap ends inside that word: count its part too.
			p := us[i].start
			for p > ovStart {
				r, size := utf8.DecodeLastRuneInString(sp.text[ovStart:p])
				if isSpaceRune(r, size) {
					break
				}
				p -= size
			}
			run = us[i].start - p
		}
		for j < len(us) {
			c := us[j].cost()
			if j == i && !ov {
				c = us[j].tok // the whitespace before a chunk is not in it
			}
			if tok+c > max {
				break
			}
			if us[j].lvl == lvlRune {
				run += us[j].end - us[j].start
			} else {
				run = us[j].end - us[j].start
			}
			if run > maxWordRun && j > i {
				break
			}
			tok += c
			j++
		}
		if j == i {
			if ov {
				ov, ovTok = false, 0 // no room for the overlap
				continue
			}
			j = i + 1 // a unit over the budget that cannot be split
		}
		cut := j
		if j < len(us) {
			cut = chooseCut(us, i, j, ovTok, minFill, !ov)
		}
		// Count the chunk exactly; give units back while it does not fit.
		var start, end, n int
		resplit := false
		for {
			start = us[i].start
			if ov {
				start = ovStart
			}
			end = us[cut-1].end
			n = count(sp.text[start:end])
			if n <= max {
				break
			}
			if cut > i+1 {
				cut--
				continue
			}
			if ov {
				ov, ovTok = false, 0
				continue
			}
			if sp.splitUnit(i) {
				resplit = true
			}
			break
		}
		if resplit {
			continue
		}
		emit(start, end, n)
		hadOverlap := ov
		ov, ovTok = false, 0
		if overlap > 0 && cut < len(us) {
			ovStart, ovTok, ov = sp.overlapStart(i, cut, start, hadOverlap)
		}
		i = cut
	}
}

// chooseCut picks where the chunk of units [i, j) ends when unit j does not
// fit: at the strongest boundary that leaves at least minFill tokens in the
// chunk (the latest such boundary among equals), or at j.
func chooseCut(us []unit, i, j, base, minFill int, bare bool) int {
	best, bestLvl := j, lvlRune // j when no boundary leaves minFill
	t := base
	for c := i + 1; c <= j; c++ {
		if c-1 == i && bare {
			t += us[c-1].tok
		} else {
			t += us[c-1].cost()
		}
		if t < minFill {
			continue
		}
		if l := us[c].lvl; l >= bestLvl {
			best, bestLvl = c, l
		}
	}
	return best
}

// splitUnit replaces unit i by finer units; false when it cannot be split.
func (sp *splitter) splitUnit(i int) bool {
	u := sp.units[i]
	if u.stage == stageNone {
		return false
	}
	tail := append([]unit(nil), sp.units[i+1:]...)
	sp.units = sp.units[:i]
	// Force a split even though the unit's own estimate fitted. The unit
	// starts a chunk, so its parts are counted without the leading gap.
	before := len(sp.units)
	sp.refine(u.start, u.start, u.end, u.lvl, u.stage)
	if len(sp.units)-before == 1 && sp.units[before].end == u.end && sp.units[before].start == u.start {
		sp.units[before].stage = stageNone
	}
	for k := before; k < len(sp.units); k++ {
		sp.units[k].code = u.code
	}
	sp.units = append(sp.units, tail...)
	return true
}

// overlapStart returns where the chunk after units [i, cut) starts, and the
// exact token count of the text it repeats: the longest tail of whole units
// within the overlap budget or else the longest tail of words of the last
// unit. The start is always after chunkStart. ok is false when nothing
// fits.
func (sp *splitter) overlapStart(i, cut, chunkStart int, hadOverlap bool) (start, tok int, ok bool) {
	us, overlap, text := sp.units, sp.st.overlap, sp.text
	end := us[cut-1].end
	exact := func(s int) (int, bool) {
		n := sp.st.count(text[s:end])
		return n, n <= overlap
	}
	minK := i + 1
	if hadOverlap {
		minK = i
	}
	// Whole units, by their estimates, then checked exactly.
	acc, k, bytes := 0, cut, 0
	for k-1 >= minK && acc+us[k-1].cost() <= overlap && bytes+us[k-1].end-us[k-1].start <= maxWordRun {
		acc += us[k-1].cost()
		bytes += us[k-1].end - us[k-1].start
		k--
	}
	for ; k < cut; k++ {
		if us[k].lvl == lvlRune {
			continue // inside a word
		}
		if n, ok := exact(us[k].start); ok {
			return us[k].start, n, true
		}
	}
	// Words of the last unit, from its end. (A unit cut between runes holds
	// no whitespace, so it offers no word boundary.) Code is only ever
	// repeated by whole lines.
	last := us[cut-1]
	if last.code {
		return 0, 0, false
	}
	best, found := 0, false
	we := last.end
	acc = 0
	for {
		// Find the word ending at we and the end of the word before it.
		ws := we
		for ws > last.start {
			r, size := utf8.DecodeLastRuneInString(text[last.start:ws])
			if isSpaceRune(r, size) {
				break
			}
			ws -= size
		}
		pe := ws
		for pe > last.start {
			r, size := utf8.DecodeLastRuneInString(text[last.start:pe])
			if !isSpaceRune(r, size) {
				break
			}
			pe -= size
		}
		if ws <= chunkStart || ws <= last.start {
			break // the first word of the unit or chunk: not a partial start
		}
		t := sp.st.count(text[pe:we])
		if acc+t > overlap {
			break
		}
		acc += t
		best, found = ws, true
		we = pe
	}
	// Check exactly, moving to later words while the estimate was short.
	for found && best < end {
		if n, ok := exact(best); ok {
			return best, n, true
		}
		for best < end { // skip the word
			r, size := utf8.DecodeRuneInString(text[best:end])
			if isSpaceRune(r, size) {
				break
			}
			best += size
		}
		for best < end { // and the space after it
			r, size := utf8.DecodeRuneInString(text[best:end])
			if !isSpaceRune(r, size) {
				break
			}
			best += size
		}
	}
	return 0, 0, false
}
