package search

import (
	"errors"
	"strings"
	"testing"
)

func TestParseFusionSpec(t *testing.T) {
	good := map[string]Options{
		"relative":                {Fusion: Relative},
		"":                        {Fusion: Relative},
		"RRF":                     {Fusion: RRF},
		"relative:alpha=0.3":      {Fusion: Relative, Alpha: 0.3},
		"rrf:k=10,alpha=auto":     {Fusion: RRF, RRFK: 10, Alpha: AlphaAuto},
		"dbsf:alpha=calibrated":   {Fusion: DBSF, Alpha: AlphaAuto},
		"relative: agree = 0.6 ,": {Fusion: Relative, Agreement: 0.6},
		"relative:alpha=1":        {Fusion: Relative, Alpha: 1},
		"rrf:k=1":                 {Fusion: RRF, RRFK: 1},
		"rrf:k=10000":             {Fusion: RRF, RRFK: 10000},
		"relative:agree=0":        {Fusion: Relative},
		"relative:agree=1":        {Fusion: Relative, Agreement: 1},
		"relative:feedback=5":     {Fusion: Relative, Feedback: 5},
		"rrf:feedback=0":          {Fusion: RRF, Feedback: -1},
		"dbsf:feedback=20":        {Fusion: DBSF, Feedback: 20},
		// Exactly maxSpec bytes.
		"relative:alpha=0.3" + strings.Repeat(" ", maxSpec-len("relative:alpha=0.3")): {Fusion: Relative, Alpha: 0.3},
	}
	for in, want := range good {
		got, err := ParseFusionSpec(in)
		if err != nil || got.Fusion != want.Fusion || got.Alpha != want.Alpha || got.RRFK != want.RRFK ||
			got.Agreement != want.Agreement {
			t.Errorf("ParseFusionSpec(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{
		"max", "relative:alpha", "relative:alpha=0", "relative:alpha=1.5", "relative:alpha=NaN", "relative:alpha=-1",
		"relative:k=10", "rrf:k=0", "rrf:k=x", "relative:alpha=0.1,alpha=0.2", "relative:beta=1",
		"relative:agree=2", "relative:feedback=21", "relative:feedback=-1", "relative:feedback=x", "relative:scale=0.5", "relative:=3", strings.Repeat("x", 300),
		"rrf:k=10001", "relative:alpha=0.3" + strings.Repeat(" ", maxSpec+1-len("relative:alpha=0.3")),
	} {
		if _, err := ParseFusionSpec(in); !errors.Is(err, ErrBadFusion) {
			t.Errorf("ParseFusionSpec(%q): %v, want ErrBadFusion", in, err)
		}
	}
}

func FuzzParseFusionSpec(f *testing.F) {
	for _, s := range []string{"relative", "rrf:k=10,alpha=auto", "dbsf:alpha=calibrated,agree=0.2", "relative:alpha=0.3,", ":", "rrf:k=1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		o, err := ParseFusionSpec(in)
		if err != nil {
			if !errors.Is(err, ErrBadFusion) {
				t.Fatalf("%q: error %v is not ErrBadFusion", in, err)
			}
			return
		}
		if o.Fusion != Relative && o.Fusion != RRF && o.Fusion != DBSF {
			t.Fatalf("%q: fusion %q", in, o.Fusion)
		}
		if !(o.Alpha == 0 || o.Alpha == AlphaAuto || o.Alpha > 0 && o.Alpha <= 1) ||
			o.RRFK < 0 || o.RRFK > 10000 || o.Agreement < 0 || o.Agreement > 1 {
			t.Fatalf("%q: out-of-range options %+v", in, o)
		}
		// Whatever parses fuses.
		o.TopK, o.SimilarityThreshold = 5, -1
		_ = Fuse(nil, nil, &o)
	})
}

// The two settings parsers share their key=value reading; each keeps its
// own messages, the fusion spec's naming the spec.
func TestSettingsMessages(t *testing.T) {
	cases := []struct {
		spec string
		err  func(string) (Options, error)
		want string
	}{
		{"rrf:k=5,alpha", ParseFusionSpec, `search: unknown fusion: "alpha" is not key=value in "rrf:k=5,alpha"`},
		{"rrf:K=5,k=6", ParseFusionSpec, `search: unknown fusion: "k" given twice in "rrf:K=5,k=6"`},
		{"relative:k=5", ParseFusionSpec, `search: unknown fusion: k applies to rrf only, not relative`},
		{"relative:beta=1", ParseFusionSpec, `search: unknown fusion: unknown parameter "beta" in "relative:beta=1" (want alpha, k, agree or feedback)`},
		{"speaker=", ParseSignals, `search: bad memory signals: "speaker=" is not key=value`},
		{"time=1, Time=2", ParseSignals, `search: bad memory signals: "time" given twice`},
		{"slack=-1d", ParseSignals, `search: bad memory signals: slack="-1d" is not a duration (72h) or a number of days (7d) up to ten years`},
		{"mood=1", ParseSignals, `search: bad memory signals: unknown key "mood" (want speaker, time, question or slack)`},
	}
	for _, c := range cases {
		if _, err := c.err(c.spec); err == nil || err.Error() != c.want {
			t.Errorf("%q: error %v, want %s", c.spec, err, c.want)
		}
	}
}
