// Package evalrun is `ragmem eval`: it reads the command's options (the
// data sets or LoCoMo conversations, modes, fusions, full-text and ranking
// options), loads the data, runs the eval package on each data set and
// prints the reports as tables or JSON. The command itself only turns its
// flags into Options; the eval package is reached through this one.
package evalrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/eval"
	"github.com/ragmem/ragmem/internal/index/local"
	"github.com/ragmem/ragmem/search"
	"github.com/spf13/pflag"
)

// DefaultDepth is the documents ranked per query unless Options.Depth says
// otherwise (--depth's default).
const DefaultDepth = eval.DefaultDepth

// Options are the values of ragmem eval's flags, as given.
type Options struct {
	Datasets []string // BEIR folders; a folder of data sets stands for each
	LoCoMo   []string // LoCoMo files; a folder stands for its .json files
	Split    string   // qrels split of the BEIR data sets
	Turns    string   // how LoCoMo turns are written as memories (eval.ParseTurnOptions)
	Signals  string   // memory ranking signals (search.ParseSignals)
	Unit     string   // what a conversation's result is (search.ParseUnit)
	Modes    []string // search modes, each entry possibly comma-separated
	Fusion   []string // hybrid fusion specs, one row each (default the search default)
	BM25     string   // full-text options (local.ParseFullTextOptions)
	RRFK     int      // k of rrf, for fusions that do not set it
	Alpha    float64  // vector weight, for fusions that do not set it
	Pool     int      // candidates per side before fusion
	Depth    int      // documents ranked per query
	Tmp      string   // where the temporary store is created

	PerQuery       bool // give each query's metrics and ranking
	AsReturned     bool // rank results as returned, not each document once
	MaxPerSource   int  // most results per source (0: no cap)
	KeepDuplicates bool // keep identical and near-identical chunks of other sources

	// NewEmbedder builds the embedder once the options are known good.
	NewEmbedder func() (embed.Embedder, error)
	// Log receives warnings about the data and, when it is a terminal, a
	// progress bar per stage.
	Log io.Writer
}

// Reports are the reports of one eval run, one per data set, in order.
type Reports struct {
	reports  []*eval.Report
	fusions  int  // hybrid fusions compared (a column when more than one)
	perQuery bool // print each query's ranking too
}

// plan is what the options say, parsed and checked.
type plan struct {
	turns   *eval.TurnOptions
	dirs    []string // BEIR data sets
	files   []string // LoCoMo conversations
	sets    []*eval.Dataset
	modes   []search.Mode
	hybrids []eval.Hybrid
	ft      *local.FullTextOptions
}

// Run checks the options, loads every data set and evaluates each.
func Run(ctx context.Context, o Options) (*Reports, error) {
	p, err := o.plan()
	if err != nil {
		return nil, err
	}
	emb, err := o.NewEmbedder()
	if err != nil {
		return nil, err
	}
	if p.sets, err = o.load(p); err != nil {
		return nil, err
	}
	out := &Reports{fusions: len(p.hybrids), perQuery: o.PerQuery}
	for _, ds := range p.sets {
		opts := &eval.Options{
			Modes:      p.modes,
			Search:     &p.hybrids[0].Search,
			Hybrids:    p.hybrids,
			Embedder:   emb,
			FullText:   p.ft,
			Depth:      o.Depth,
			Dir:        o.Tmp,
			PerQuery:   o.PerQuery,
			AsReturned: o.AsReturned,
		}
		bar := newProgress(o.Log)
		if bar != nil {
			prefix := ""
			if len(p.sets) > 1 {
				prefix = ds.Name + " "
			}
			opts.Progress = func(pr eval.Progress) { pr.Stage = prefix + pr.Stage; bar.update(pr) }
		}
		rep, err := eval.Run(ctx, ds, opts)
		if bar != nil {
			bar.finish()
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ds.Name, err)
		}
		out.reports = append(out.reports, rep)
	}
	return out, nil
}

// plan parses and checks everything but the data.
func (o Options) plan() (*plan, error) {
	if err := o.checkSources(); err != nil {
		return nil, err
	}
	turns, err := eval.ParseTurnOptions(o.Turns)
	if err != nil {
		return nil, err
	}
	dirs, err := expandDatasets(o.Datasets)
	if err != nil {
		return nil, err
	}
	files, err := expandLoCoMo(o.LoCoMo)
	if err != nil {
		return nil, err
	}
	modes, err := parseModes(o.Modes)
	if err != nil {
		return nil, err
	}
	hybrids, err := o.hybrids()
	if err != nil {
		return nil, err
	}
	ft, err := local.ParseFullTextOptions(o.BM25)
	if err != nil {
		return nil, err
	}
	return &plan{turns: turns, dirs: dirs, files: files, modes: modes, hybrids: hybrids, ft: ft}, nil
}

// checkSources says what is wrong with the choice of data sets.
func (o Options) checkSources() error {
	switch {
	case len(o.Datasets) == 0 && len(o.LoCoMo) == 0:
		return errors.New("--dataset or --locomo is required (a BEIR folder with corpus.jsonl, queries.jsonl and qrels/, or a LoCoMo conversation file)")
	case len(o.Datasets) > 0 && len(o.LoCoMo) > 0:
		return errors.New("--dataset and --locomo cannot be mixed: their macro averages mean different things")
	case len(o.LoCoMo) == 0 && o.Turns != "":
		return errors.New("--turns applies to --locomo only")
	}
	return nil
}

func parseModes(modes []string) ([]search.Mode, error) {
	var ms []search.Mode
	for _, s := range modes {
		for _, part := range strings.Split(s, ",") {
			if strings.TrimSpace(part) == "" {
				continue
			}
			m, err := search.ParseMode(part)
			if err != nil {
				return nil, err
			}
			ms = append(ms, m)
		}
	}
	return ms, nil
}

// hybrids gives each fusion spec the options every hybrid row shares:
// alpha and k where the spec sets none, the pool, the cap per source, the
// memory signals and the unit.
func (o Options) hybrids() ([]eval.Hybrid, error) {
	sig, err := search.ParseSignals(o.Signals)
	if err != nil {
		return nil, err
	}
	u, err := search.ParseUnit(o.Unit)
	if err != nil {
		return nil, err
	}
	specs := o.Fusion
	if len(specs) == 0 {
		specs = []string{string(search.DefaultFusion)}
	}
	var hybrids []eval.Hybrid
	for _, spec := range specs {
		so, err := search.ParseFusionSpec(spec)
		if err != nil {
			return nil, err
		}
		if so.Alpha == 0 {
			so.Alpha = o.Alpha
		}
		if so.RRFK == 0 {
			so.RRFK = o.RRFK
		}
		so.CandidatePool = o.Pool
		so.MaxPerSource, so.KeepDuplicates = o.MaxPerSource, o.KeepDuplicates
		if o.MaxPerSource == 0 {
			so.MaxPerSource = -1
		}
		so.SpeakerWeight, so.TimeWeight, so.QuestionWeight, so.TimeSlack = sig.SpeakerWeight, sig.TimeWeight, sig.QuestionWeight, sig.TimeSlack
		so.Unit = u
		hybrids = append(hybrids, eval.Hybrid{Label: spec, Search: so})
	}
	return hybrids, nil
}

// load reads the BEIR data sets and the LoCoMo conversations, saying on
// o.Log what a conversation's file lacks.
func (o Options) load(p *plan) ([]*eval.Dataset, error) {
	sets := make([]*eval.Dataset, 0, len(p.dirs)+len(p.files))
	for _, dir := range p.dirs {
		ds, err := eval.LoadBEIR(dir, o.Split)
		if err != nil {
			return nil, err
		}
		sets = append(sets, ds)
	}
	for _, f := range p.files {
		c, err := eval.LoadLoCoMo(f)
		if err != nil {
			return nil, err
		}
		if (c.DroppedEvidence > 0 || c.UndatedSessions > 0) && o.Log != nil {
			fmt.Fprintf(o.Log, "%s: %d evidence ids name no turn (%d questions left without evidence, skipped); %d sessions without a readable date\n",
				c.Name, c.DroppedEvidence, c.Skipped, c.UndatedSessions)
		}
		sets = append(sets, c.Dataset(p.turns))
	}
	return sets, nil
}

// expandLoCoMo replaces a folder by the .json files in it, in name order.
func expandLoCoMo(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", eval.ErrBadDataset, err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", eval.ErrBadDataset, err)
		}
		n := len(out)
		for _, e := range entries {
			if !e.IsDir() && strings.EqualFold(filepath.Ext(e.Name()), ".json") {
				out = append(out, filepath.Join(p, e.Name()))
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("%w: %s has no .json file", eval.ErrBadDataset, p)
		}
	}
	return out, nil
}

// expandDatasets replaces a folder that holds no corpus.jsonl but whose
// subfolders do by those subfolders, in name order.
func expandDatasets(dirs []string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "corpus.jsonl")); err == nil {
			out = append(out, d)
			continue
		}
		entries, err := os.ReadDir(d)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", eval.ErrBadDataset, err)
		}
		n := len(out)
		for _, e := range entries {
			if sub := filepath.Join(d, e.Name()); e.IsDir() {
				if _, err := os.Stat(filepath.Join(sub, "corpus.jsonl")); err == nil {
					out = append(out, sub)
				}
			}
		}
		if len(out) == n {
			out = append(out, d) // LoadBEIR says what is missing
		}
	}
	return out, nil
}

// AddFlags defines ragmem eval's flags on f, setting o (all but --json,
// which is the printing's).
func (o *Options) AddFlags(f *pflag.FlagSet) {
	f.StringSliceVar(&o.Datasets, "dataset", nil, "BEIR-format data set folder; repeat or comma-separate for several; a folder of data sets stands for each")
	f.StringSliceVar(&o.LoCoMo, "locomo", nil, "LoCoMo conversation file (.json); repeat or comma-separate for several; a folder stands for its .json files")
	f.StringVar(&o.Turns, "turns", "", "how --locomo writes turns as memories: title=speaker|date|speaker+date|session|none, prefix=0|1, context=N (turns before), next=N (turns after), attrs=0|1 (default: title=speaker+date,context=2,next=1)")
	f.StringVar(&o.Unit, "unit", "", "what a conversation's result is: turn, round (a user's turn with its replies) or session; a unit's turns count in the ranking in the order of their own scores (default turn)")
	f.StringVar(&o.Signals, "signals", "", "memory ranking signals: speaker=W, time=W, question=W (0: off), slack=DAYS (default: the search defaults)")
	f.StringVar(&o.Split, "split", "test", "qrels split to evaluate: qrels/SPLIT.tsv (tune on train, report test)")
	f.StringSliceVar(&o.Modes, "modes", []string{"fulltext", "vector", "hybrid"}, "search modes to evaluate")
	f.StringArrayVar(&o.Fusion, "fusion", nil, "hybrid fusion METHOD[:alpha=A|auto|calibrated,k=K,scale=C,agree=W], METHOD relative, rrf or dbsf; repeat to compare (default relative)")
	f.IntVar(&o.RRFK, "rrf-k", 0, "k of reciprocal rank fusion, for --fusion values that do not set it (default: the search default)")
	f.Float64Var(&o.Alpha, "alpha", 0, "vector weight, for --fusion values that do not set it (default: automatic, see docs/evaluation.md)")
	f.IntVar(&o.Pool, "pool", 0, "candidates per side before fusion (default: the search default for the depth asked)")
	f.StringVar(&o.BM25, "bm25", "", "full-text options, e.g. k1=0.9,b=0.4,stem=porter,stop=lucene (default: the store defaults)")
	f.IntVar(&o.Depth, "depth", DefaultDepth, "documents ranked per query (at least 100 for Recall@100)")
	f.StringVar(&o.Tmp, "tmp", "", "where to create the temporary store (default the system temp directory)")
	f.BoolVar(&o.PerQuery, "per-query", false, "also give each query's metrics and ranking (--depth documents)")
	f.BoolVar(&o.AsReturned, "as-returned", false, "rank the documents of the first --depth results as returned (a document's later results count as irrelevant), not each document once by its best result")
	f.IntVar(&o.MaxPerSource, "max-per-source", search.DefaultMaxPerSource, "most results per source (0: no cap)")
	f.BoolVar(&o.KeepDuplicates, "keep-duplicates", false, "keep identical and near-identical chunks of other sources")
}
