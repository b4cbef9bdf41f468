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
	seen := map[string]bool{}
	for _, kv := range strings.Split(params, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return Options{}, fmt.Errorf("%w: %q is not key=value in %q", ErrBadFusion, kv, spec)
		}
		if seen[k] {
			return Options{}, fmt.Errorf("%w: %q given twice in %q", ErrBadFusion, k, spec)
		}
		seen[k] = true
		switch k {
		case "alpha":
			switch {
			case strings.EqualFold(v, "auto"), strings.EqualFold(v, "calibrated"):
				o.Alpha = AlphaAuto
			default:
				a, err := strconv.ParseFloat(v, 64)
				if err != nil || math.IsNaN(a) || a <= 0 || a > 1 {
					return Options{}, fmt.Errorf("%w: alpha %q is not auto, calibrated or a number in (0, 1]", ErrBadFusion, v)
				}
				o.Alpha = a
			}
		case "k":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 10000 {
				return Options{}, fmt.Errorf("%w: k %q is not an integer in 1..10000", ErrBadFusion, v)
			}
			if f != RRF {
				return Options{}, fmt.Errorf("%w: k applies to rrf only, not %s", ErrBadFusion, f)
			}
			o.RRFK = n
		case "agree", "agreement":
			w, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(w) || w < 0 || w > 1 {
				return Options{}, fmt.Errorf("%w: agree %q is not a number in [0, 1]", ErrBadFusion, v)
			}
			o.Agreement = w
		case "feedback":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > maxFeedback {
				return Options{}, fmt.Errorf("%w: feedback %q is not an integer in 0..%d", ErrBadFusion, v, maxFeedback)
			}
			o.Feedback = n
			if n == 0 {
				o.Feedback = -1
			}
		default:
			return Options{}, fmt.Errorf("%w: unknown parameter %q in %q (want alpha, k, agree or feedback)", ErrBadFusion, k, spec)
		}
	}
	return o, nil
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
	seen := map[string]bool{}
	for _, kv := range strings.Split(spec, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return Options{}, fmt.Errorf("%w: %q is not key=value", ErrBadSignals, kv)
		}
		if seen[k] {
			return Options{}, fmt.Errorf("%w: %q given twice", ErrBadSignals, k)
		}
		seen[k] = true
		switch k {
		case "speaker", "time", "question":
			w, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(w) || w < 0 || w > 100 {
				return Options{}, fmt.Errorf("%w: %s=%q is not a number in [0, 100]", ErrBadSignals, k, v)
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
				return Options{}, fmt.Errorf("%w: slack=%q is not a duration (72h) or a number of days (7d) up to ten years", ErrBadSignals, v)
			}
			if d == 0 {
				d = -1
			}
			o.TimeSlack = d
		default:
			return Options{}, fmt.Errorf("%w: unknown key %q (want speaker, time, question or slack)", ErrBadSignals, k)
		}
	}
	return o, nil
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
