package ragmemtest

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/leanovate/gopter"
)

// MinRuns is the number of successful cases each property needs by default.
const MinRuns = 100

// Parameters returns gopter parameters for a property test: MinRuns cases,
// or RAGMEM_PROPERTY_RUNS when that is larger (a long run:
// RAGMEM_PROPERTY_RUNS=10000); the seed of RAGMEM_PROPERTY_SEED, or of the
// clock. The seed is logged, so that a failure can be replayed with
// RAGMEM_PROPERTY_SEED. A malformed variable fails the test.
func Parameters(tb testing.TB) *gopter.TestParameters {
	tb.Helper()
	seed := time.Now().UnixNano()
	if s := os.Getenv("RAGMEM_PROPERTY_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			tb.Fatalf("RAGMEM_PROPERTY_SEED: %v", err)
		}
		seed = v
	}
	p := gopter.DefaultTestParametersWithSeed(seed)
	p.MinSuccessfulTests = Runs(tb)
	tb.Logf("property seed %d, %d cases (replay with RAGMEM_PROPERTY_SEED=%d)", seed, p.MinSuccessfulTests, seed)
	return p
}

// Runs returns the number of cases a property runs: MinRuns, or
// RAGMEM_PROPERTY_RUNS when that is larger.
func Runs(tb testing.TB) int {
	tb.Helper()
	n := MinRuns
	if s := os.Getenv("RAGMEM_PROPERTY_RUNS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			tb.Fatalf("RAGMEM_PROPERTY_RUNS=%q: want a positive number of cases", s)
		}
		n = max(n, v)
	}
	return n
}

// Run checks one property with Parameters(t): gopter shrinks a failing case
// and the test fails with the smallest one it found, the original and the
// seed.
func Run(t *testing.T, name string, p gopter.Prop) {
	t.Helper()
	ps := gopter.NewProperties(Parameters(t))
	ps.Property(name, p)
	ps.TestingRun(t)
}

// Sample draws one value of g for seed (the same seed, the same value):
// fixtures such as a corpus that several properties share.
func Sample[T any](g gopter.Gen, seed int64) T {
	p := gopter.DefaultGenParameters().CloneWithSeed(seed)
	for i := 0; i < 100; i++ {
		r := g(p)
		if v, ok := r.Retrieve(); ok {
			return v.(T)
		}
	}
	panic("ragmemtest: Sample: the generator rejected 100 values in a row")
}

// ErrString turns a checker's error into a gopter property result: "" (the
// property holds) for nil, the message otherwise.
func ErrString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
