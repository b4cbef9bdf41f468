package eval

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
}

// Macro averages several reports, one row per mode (and hybrid fusion
// label) in the order they first appear. A row missing from some reports is
// averaged over the reports that have it, and says how many in Datasets.
func Macro(reps []*Report) []MacroResult {
	type key struct{ mode, fusion string }
	var out []MacroResult
	at := map[key]int{}
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
		}
	}
	for i := range out {
		out[i].Metrics = scaled(out[i].Metrics, 1/float64(out[i].Datasets))
	}
	return out
}
