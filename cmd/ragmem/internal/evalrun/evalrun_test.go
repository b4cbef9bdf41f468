package evalrun

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/ragmem/ragmem/internal/embed"
)

const tinyBEIR = "../../../../internal/eval/testdata/tiny"

// runEval runs an evaluation as ragmem eval does with these flags (the
// command's flag set, the lexical embedder) and returns what it prints on
// stdout (a table, or JSON with --json) and stderr.
func runEval(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	o := Options{NewEmbedder: func() (embed.Embedder, error) { return embed.Default(), nil }}
	var asJSON bool
	f := pflag.NewFlagSet("eval", pflag.ContinueOnError)
	o.AddFlags(f)
	f.BoolVar(&asJSON, "json", false, "")
	if err := f.Parse(args); err != nil {
		return "", "", err
	}
	var stdout, stderr strings.Builder
	o.Log = &stderr
	reps, err := Run(context.Background(), o)
	if err != nil {
		return "", stderr.String(), err
	}
	if asJSON {
		enc := json.NewEncoder(&stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(reps.JSON())
	} else {
		reps.Print(&stdout)
	}
	return stdout.String(), stderr.String(), err
}

func mustEval(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := runEval(t, args...)
	if err != nil {
		t.Fatalf("eval %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return out
}

func TestEval(t *testing.T) {
	out := mustEval(t, "--dataset", tinyBEIR, "--modes", "fulltext,hybrid", "--tmp", t.TempDir())
	for _, want := range []string{"tiny (test split): 9 documents indexed, 1 without text skipped", "mode", "nDCG@10", "R@5", "R@25", "R@100", "fulltext", "bm25", "hybrid", "indexing"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	out = mustEval(t, "--dataset", tinyBEIR, "--modes", "fulltext", "--bm25", "k1=0.9,b=0.4,stop=lucene,title=0", "--json", "--tmp", t.TempDir())
	var rep struct {
		FullText string `json:"fullText"`
		Results  []struct {
			Mode   string  `json:"mode"`
			NDCG10 float64 `json:"ndcg@10"`
			R100   float64 `json:"recall@100"`
			P50    float64 `json:"latencyP50Ms"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if len(rep.Results) != 1 || rep.Results[0].Mode != "fulltext" || rep.Results[0].NDCG10 != 1 || rep.Results[0].R100 != 1 {
		t.Errorf("results %+v", rep.Results)
	}
	if !strings.Contains(rep.FullText, "stop=lucene") || !strings.Contains(rep.FullText, "k1=0.9 b=0.4") || strings.Contains(rep.FullText, "title") {
		t.Errorf("fullText %q", rep.FullText)
	}
	for _, args := range [][]string{
		{"eval"},
		{"eval", "--dataset", tinyBEIR, "--fusion", "relative:alpha=2"},
		{"eval", "--dataset", tinyBEIR, "--dataset", t.TempDir()},
		{"eval", "--dataset", tinyBEIR, "--modes", "sideways"},
		{"eval", "--dataset", tinyBEIR, "--bm25", "k1=banana"},
		{"eval", "--dataset", tinyBEIR, "--fusion", "mean"},
		{"eval", "--dataset", tinyBEIR, "--split", "train"},
		{"eval", "--dataset", t.TempDir()},
	} {
		if _, _, err := runEval(t, args[1:]...); err == nil {
			t.Errorf("ragmem %s: no error", strings.Join(args, " "))
		}
	}
}

// Several data sets give each one's table and their macro average; several
// fusions give a hybrid row each; --per-query lists every query's ranking.
func TestEvalSeveral(t *testing.T) {
	// A folder of data sets stands for each of them.
	parent := t.TempDir()
	for _, name := range []string{"one", "two"} {
		if err := os.CopyFS(filepath.Join(parent, name), os.DirFS(tinyBEIR)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(parent, "raw"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := mustEval(t, "--dataset", parent, "--modes", "fulltext,hybrid", "--fusion", "relative",
		"--fusion", "rrf:k=10", "--per-query", "--depth", "4", "--tmp", t.TempDir())
	for _, want := range []string{"data set   one (test split)", "data set   two (test split)", "macro average over 2 data sets (one, two)",
		"relative(alpha=0.10, default, feedback=3)", "rrf(k=10, feedback=3)", "rrf:k=10", "query  mode"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// With several fusions, each table has a fusion column: the data
	// sets', the macro average's (the per-query one always has).
	if n := len(regexp.MustCompile(`(?m)^mode +fusion +method `).FindAllString(out, -1)); n != 3 {
		t.Errorf("%d tables with a fusion column, want 3:\n%s", n, out)
	}
	out = mustEval(t, "--dataset", tinyBEIR+","+tinyBEIR, "--modes", "fulltext,hybrid", "--fusion", "relative",
		"--fusion", "rrf:k=10", "--per-query", "--depth", "4", "--json", "--tmp", t.TempDir())
	var rep struct {
		Datasets []struct {
			Dataset string `json:"dataset"`
			Results []struct {
				Mode     string  `json:"mode"`
				Fusion   string  `json:"fusion"`
				NDCG10   float64 `json:"ndcg@10"`
				R5       float64 `json:"recall@5"`
				R25      float64 `json:"recall@25"`
				PerQuery []struct {
					ID      string   `json:"id"`
					Ranking []string `json:"ranking"`
				} `json:"perQuery"`
			} `json:"results"`
		} `json:"datasets"`
		Macro []struct {
			Mode     string  `json:"mode"`
			Fusion   string  `json:"fusion"`
			NDCG10   float64 `json:"ndcg@10"`
			Datasets int     `json:"datasets"`
		} `json:"macro"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Datasets) != 2 || len(rep.Macro) != 3 || rep.Macro[2].Fusion != "rrf:k=10" || rep.Macro[0].Datasets != 2 {
		t.Fatalf("report %+v", rep)
	}
	for i, m := range rep.Macro {
		if r := rep.Datasets[0].Results[i]; m.NDCG10 != r.NDCG10 || r.R5 == 0 || r.R25 == 0 {
			t.Errorf("macro row %d %+v against %+v", i, m, r)
		}
	}
	for _, q := range rep.Datasets[1].Results[2].PerQuery {
		if len(q.Ranking) == 0 || len(q.Ranking) > 4 {
			t.Errorf("%s: ranking %v, want 1 to 4 documents", q.ID, q.Ranking)
		}
	}
}

// --locomo writes conversations as memories and reports each question
// category; a folder stands for its .json files.
func TestEvalLoCoMo(t *testing.T) {
	const tiny = "../../../../internal/eval/testdata/locomo/tiny.json"
	out, errOut, err := runEval(t, "--locomo", tiny, "--modes", "fulltext,hybrid", "--tmp", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tiny (qa split): 7 documents", "memories   title=speaker+date context=2 next=1", "category", "2 temporal", "5 adversarial", "hybrid"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "2 evidence ids name no turn (1 questions left without evidence, skipped); 1 sessions without a readable date") {
		t.Errorf("stderr %q", errOut)
	}
	dir := t.TempDir()
	for _, name := range []string{"a.json", "b.JSON"} {
		b, err := os.ReadFile(tiny)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out = mustEval(t, "--locomo", dir, "--modes", "fulltext", "--turns", "context=0,next=0,title=none", "--signals", "speaker=0,time=1", "--tmp", t.TempDir())
	for _, want := range []string{"macro average over 2 data sets (a, b)", "memories   title=none context=0 next=0"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, args := range [][]string{
		{"eval", "--locomo", tiny, "--dataset", tinyBEIR},
		{"eval", "--dataset", tinyBEIR, "--turns", "context=1"},
		{"eval", "--locomo", tiny, "--turns", "context=99"},
		{"eval", "--locomo", tiny, "--signals", "speaker=-1"},
		{"eval", "--locomo", t.TempDir()},
		{"eval", "--locomo", filepath.Join(t.TempDir(), "none.json")},
		{"eval", "--locomo", tinyBEIR + "/corpus.jsonl"},
	} {
		if _, _, err := runEval(t, args[1:]...); err == nil {
			t.Errorf("ragmem %s: no error", strings.Join(args, " "))
		}
	}
}
