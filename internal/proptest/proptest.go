// Package proptest holds what ragmem's gopter property tests share: the
// parameters that print the seed and replay one from RAGMEM_PROPERTY_SEED.
package proptest

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/leanovate/gopter"
)

// SeedEnv names the environment variable that replays a run's seed.
const SeedEnv = "RAGMEM_PROPERTY_SEED"

// Params returns gopter parameters that run at least minRuns cases, with a
// seed taken from $RAGMEM_PROPERTY_SEED or the clock, logged so that a
// failing run can be replayed.
func Params(t testing.TB, minRuns int) *gopter.TestParameters {
	t.Helper()
	seed := time.Now().UnixNano()
	if s := os.Getenv(SeedEnv); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", SeedEnv, err)
		}
		seed = v
	}
	t.Logf("property seed %d (replay with %s=%d)", seed, SeedEnv, seed)
	p := gopter.DefaultTestParametersWithSeed(seed)
	p.MinSuccessfulTests = minRuns
	return p
}
