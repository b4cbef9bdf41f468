package eval

import "sort"

// MacroResult is one mode's metrics averaged over data sets.
type MacroResult struct {
	Mode   string `json:"mode"`
	Fusion string `json:"fusion,omitempty"`
	// Method is the method the data sets share, or "" when they differ
	// (per-store weights, for example).
	Method string `json:"method"`
	// Metrics are the unweighted means of the data sets' means: every data
	// set counts the same however many queries it has.
	Metrics
	// Datasets is the number of data sets averaged.
	Datasets int `json:"datasets"`
	// Categories are the per-category rows averaged the same way: each
	// category over the data sets that have it (Queries is their sum), in
	// label order.
	Categories []MacroCategory `json:"categories,omitempty"`
}

// MacroCategory is one category's metrics averaged over data sets.
type MacroCategory struct {
	CategoryResult
	Datasets int `json:"datasets"`
}

// Macro averages several reports, one row per mode (and hybrid fusion
// label) in the order they first appear. A row missing from some reports is
// averaged over the reports that have it, and says how many in Datasets.
func Macro(reps []*Report) []MacroResult {
	type key struct{ mode, fusion string }
	var out []MacroResult
	at := map[key]int{}
	cats := map[key]map[string]*MacroCategory{}
	for _, r := range reps {
		for _, m := range r.Results {
			k := key{m.Mode, m.Fusion}
			i, ok := at[k]
			if !ok {
				i = len(out)
				at[k] = i
				out = append(out, MacroResult{Mode: m.Mode, Fusion: m.Fusion, Method: m.Method})
			}
			row := &out[i]
			if row.Method != m.Method {
				row.Method = ""
			}
			row.Metrics.add(m.Metrics, 1)
			row.Datasets++
			for _, c := range m.Categories {
				if cats[k] == nil {
					cats[k] = map[string]*MacroCategory{}
				}
				mc := cats[k][c.Category]
				if mc == nil {
					mc = &MacroCategory{CategoryResult: CategoryResult{Category: c.Category}}
					cats[k][c.Category] = mc
				}
				mc.Queries += c.Queries
				mc.Metrics.add(c.Metrics, 1)
				mc.Datasets++
			}
		}
	}
	for i := range out {
		out[i].Metrics = scaled(out[i].Metrics, 1/float64(out[i].Datasets))
		for _, mc := range cats[key{out[i].Mode, out[i].Fusion}] {
			mc.Metrics = scaled(mc.Metrics, 1/float64(mc.Datasets))
			out[i].Categories = append(out[i].Categories, *mc)
		}
		sort.Slice(out[i].Categories, func(a, b int) bool { return out[i].Categories[a].Category < out[i].Categories[b].Category })
	}
	return out
}
