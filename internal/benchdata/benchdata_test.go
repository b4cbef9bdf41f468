package benchdata

import (
	"math"
	"strings"
	"testing"
)

func TestSynthIsDeterministicAndQueriesComeFromTheirDocument(t *testing.T) {
	a, b := NewSynth(3), NewSynth(3)
	for i := 0; i < 50; i++ {
		da, db := a.Doc(i, 200), b.Doc(i, 200)
		if da != db {
			t.Fatalf("doc %d differs between equal seeds", i)
		}
		if n := len(strings.Fields(da.Text)); n < 150 || n > 400 {
			t.Fatalf("doc %d has %d words", i, n)
		}
		q := a.KnownItem("q", da)
		b.KnownItem("q", db)
		words := strings.Fields(q.Text)
		if len(words) != 4 {
			t.Fatalf("query %q has %d words", q.Text, len(words))
		}
		lower := strings.ToLower(da.Text)
		for _, w := range words {
			if !strings.Contains(lower, w) {
				t.Fatalf("query word %q not in its document", w)
			}
			if a.rank[w] < len(functionWords) {
				t.Fatalf("query word %q is a function word", w)
			}
		}
		if q.Relevant[da.ID] != 1 || len(q.Relevant) != 1 {
			t.Fatalf("relevant = %v", q.Relevant)
		}
	}
	if NewSynth(4).Doc(0, 200) == NewSynth(3).Doc(0, 200) {
		t.Fatal("different seeds gave the same document")
	}
}

func TestNDCG10(t *testing.T) {
	rel := map[string]int{"a": 1, "b": 1}
	cases := []struct {
		ranked []string
		want   float64
	}{
		{[]string{"a", "b"}, 1},
		{[]string{"x", "a"}, (1 / math.Log2(3)) / (1 + 1/math.Log2(3))},
		{[]string{"x"}, 0},
		{[]string{"a", "a", "b"}, 1}, // duplicates are skipped
		{[]string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "a"}, 0},
	}
	for _, c := range cases {
		if got := NDCG10(c.ranked, rel); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("NDCG10(%v) = %v, want %v", c.ranked, got, c.want)
		}
	}
	if got := NDCG10([]string{"a"}, map[string]int{"a": 2, "b": 1}); got <= 0 || got >= 1 {
		t.Errorf("graded: %v", got)
	}
}

func TestLoadBEIRSciFact(t *testing.T) {
	dir := SciFactDir()
	if dir == "" {
		t.Skip("SciFact not found")
	}
	docs, qs, err := LoadBEIR(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 5183 || len(qs) != 300 {
		t.Fatalf("%d docs, %d judged queries; SciFact has 5183 and 300", len(docs), len(qs))
	}
}
