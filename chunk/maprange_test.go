package chunk

import "testing"

// mapRange maps an output range to the source bytes of the segments it
// overlaps: whole segments map to their whole source, positions inside a
// segment in proportion (starts rounded down, ends rounded up), and every
// range to at least one source byte.
func TestMapRange(t *testing.T) {
	segs := []htmlSeg{
		{out: 0, outEnd: 10, src: 5, srcEnd: 25},   // two source bytes per output byte
		{out: 10, outEnd: 20, src: 30, srcEnd: 40}, // one per byte
		{out: 20, outEnd: 23, src: 50, srcEnd: 60}, // 10 for 3
	}
	cases := []struct {
		start, end       int
		wantStart, wantE int
	}{
		{0, 10, 5, 25},   // one whole segment
		{0, 23, 5, 60},   // all of them
		{10, 20, 30, 40}, // a start and an end on segment boundaries
		{3, 4, 11, 13},   // inside one segment, in proportion
		{5, 15, 15, 35},  // across two segments
		{10, 21, 30, 54}, // an end inside a segment, rounded up (50 + ⌈10/3⌉)
		{21, 22, 53, 57}, // 50 + ⌊10/3⌋, 50 + ⌈20/3⌉
		{5, 5, 15, 16},   // empty, inside a segment: one byte
		{10, 10, 30, 40}, // empty, on a boundary: the segment that starts there
	}
	for _, c := range cases {
		if s, e := mapRange(segs, c.start, c.end); s != c.wantStart || e != c.wantE {
			t.Errorf("mapRange(%d, %d) = [%d, %d), want [%d, %d)", c.start, c.end, s, e, c.wantStart, c.wantE)
		}
	}
	if s, e := mapRange(nil, 3, 7); s != 0 || e != 0 {
		t.Errorf("no segments: [%d, %d)", s, e)
	}
}
