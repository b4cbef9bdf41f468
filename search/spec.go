package search

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// maxSpec bounds a fusion spec; anything longer is a mistake.
const maxSpec = 200

// maxFeedback bounds the feedback a fusion spec may ask for.
const maxFeedback = 20

// ParseFusionSpec parses a fusion method with its parameters, as given on a
// command line: "METHOD[:key=value,...]" where METHOD is anything
// ParseFusion accepts and the keys are
//
//	alpha=A       vector weight in (0, 1], or "auto" or "calibrated"
//	              (AlphaAuto: the store's calibrated weight) (Options.Alpha)
//	k=K           the k of RRF, 1..10000 (Options.RRFK)
//	agree=W       per-query weighting, in [0, 1] (Options.Agreement)
//	feedback=N    results that refine the vector query, 0..20 (0: off)
//	              (Options.Feedback)
//
// e.g. "relative", "relative:alpha=0.3", "rrf:k=10,alpha=auto", "dbsf". It
// returns Options with only those fields and Fusion set.
func ParseFusionSpec(spec string) (Options, error) {
	if len(spec) > maxSpec {
		return Options{}, fmt.Errorf("%w: spec longer than %d bytes", ErrBadFusion, maxSpec)
	}
	name, params, _ := strings.Cut(spec, ":")
	f, err := ParseFusion(name)
	if err != nil {
		return Options{}, err
	}
	o := Options{Fusion: f}
	if err := eachSetting(params, ErrBadFusion, fmt.Sprintf(" in %q", spec), func(k, v string) error { return o.setFusionParam(k, v, spec) }); err != nil {
		return Options{}, err
	}
	return o, nil
}

// setFusionParam sets the fusion parameter k of ParseFusionSpec to v, for
// the method o.Fusion; spec is quoted in an error.
func (o *Options) setFusionParam(k, v, spec string) error {
	switch k {
	case "alpha":
		if strings.EqualFold(v, "auto") || strings.EqualFold(v, "calibrated") {
			o.Alpha = AlphaAuto
			return nil
		}
		a, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(a) || a <= 0 || a > 1 {
			return fmt.Errorf("%w: alpha %q is not auto, calibrated or a number in (0, 1]", ErrBadFusion, v)
		}
		o.Alpha = a
	case "k":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return fmt.Errorf("%w: k %q is not an integer in 1..10000", ErrBadFusion, v)
		}
		if o.Fusion != RRF {
			return fmt.Errorf("%w: k applies to rrf only, not %s", ErrBadFusion, o.Fusion)
		}
		o.RRFK = n
	case "agree", "agreement":
		w, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(w) || w < 0 || w > 1 {
			return fmt.Errorf("%w: agree %q is not a number in [0, 1]", ErrBadFusion, v)
		}
		o.Agreement = w
	case "feedback":
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxFeedback {
			return fmt.Errorf("%w: feedback %q is not an integer in 0..%d", ErrBadFusion, v, maxFeedback)
		}
		o.Feedback = n
		if n == 0 {
			o.Feedback = -1
		}
	default:
		return fmt.Errorf("%w: unknown parameter %q in %q (want alpha, k, agree or feedback)", ErrBadFusion, k, spec)
	}
	return nil
}

// eachSetting calls set for each key=value of a comma-separated list, keys
// lower-cased and blank items skipped. An item that is not key=value, or
// a key given twice, is an error wrapping bad, its message ending with in.
func eachSetting(list string, bad error, in string, set func(k, v string) error) error {
	seen := map[string]bool{}
	for _, kv := range strings.Split(list, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return fmt.Errorf("%w: %q is not key=value%s", bad, kv, in)
		}
		if seen[k] {
			return fmt.Errorf("%w: %q given twice%s", bad, k, in)
		}
		seen[k] = true
		if err := set(k, v); err != nil {
			return err
		}
	}
	return nil
}

// ErrBadSignals is returned by ParseSignals.
var ErrBadSignals = errors.New("search: bad memory signals")

// ParseSignals parses the weights of the memory signals, as given on a
// command line: comma-separated key=value settings, "" for the defaults:
//
//	speaker=W     Options.SpeakerWeight, in [0, 100] (0: off)
//	time=W        Options.TimeWeight, in [0, 100] (0: off)
//	question=W    Options.QuestionWeight, in [0, 100] (0: off)
//	slack=D       Options.TimeSlack: a duration ("72h") or a number of days ("7d", "0")
//
// It returns Options with only those fields set (a weight of 0 given as a
// negative one, which is how Options turns a signal off).
func ParseSignals(spec string) (Options, error) {
	var o Options
	if len(spec) > maxSpec {
		return o, fmt.Errorf("%w: spec longer than %d bytes", ErrBadSignals, maxSpec)
	}
	if err := eachSetting(spec, ErrBadSignals, "", o.setSignal); err != nil {
		return Options{}, err
	}
	return o, nil
}

// setSignal sets the signal setting k of ParseSignals to v.
func (o *Options) setSignal(k, v string) error {
	switch k {
	case "speaker", "time", "question":
		w, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(w) || w < 0 || w > 100 {
			return fmt.Errorf("%w: %s=%q is not a number in [0, 100]", ErrBadSignals, k, v)
		}
		if w == 0 {
			w = -1
		}
		switch k {
		case "speaker":
			o.SpeakerWeight = w
		case "time":
			o.TimeWeight = w
		default:
			o.QuestionWeight = w
		}
	case "slack":
		d, err := parseDays(v)
		if err != nil || d < 0 || d > 3650*24*time.Hour {
			return fmt.Errorf("%w: slack=%q is not a duration (72h) or a number of days (7d) up to ten years", ErrBadSignals, v)
		}
		if d == 0 {
			d = -1
		}
		o.TimeSlack = d
	default:
		return fmt.Errorf("%w: unknown key %q (want speaker, time, question or slack)", ErrBadSignals, k)
	}
	return nil
}

// parseDays reads "7d", "7" (days) or a Go duration.
func parseDays(s string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(strings.TrimSuffix(s, "d"), 64); err == nil && !math.IsNaN(n) && !math.IsInf(n, 0) {
		if n > 3650 || n < -3650 {
			return 0, fmt.Errorf("too long")
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	return time.ParseDuration(s)
}
