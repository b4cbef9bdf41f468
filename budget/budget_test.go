package budget

import (
	"math"
	"math/big"
	"math/rand"
	"testing"
	"time"
)

func TestCalculateTokenBudgets(t *testing.T) {
	const maxInt = math.MaxInt
	cases := []struct {
		name                           string
		limit, system, query, reserve  int
		cfg                            Config
		total, pref, knowledge, remain int
	}{
		// 128000-1500-200-4000 = 122300; (122300-500)*0.3 = 36540 > 2000.
		{"seed defaults 128k", 128000, 1500, 200, 4000, Config{}, 122300, 500, 2000, 119800},
		// 8192-1000-100-1000 = 6092; (6092-500)*0.3 = 1677.6 -> 1677 < 2000.
		{"8k window", 8192, 1000, 100, 1000, Config{}, 6092, 500, 1677, 3915},
		// 4000-100-10-500 = 3390; (3390-500)*0.3 = 867.
		{"seed generator minimum", 4000, 100, 10, 500, Config{BaseBudget: 500, PreferenceBudget: 500}, 3390, 500, 500, 2390},
		// 200000-2000-1000-4000 = 193000; base 5000 caps 57750.
		{"seed generator maximum", 200000, 2000, 1000, 4000, Config{BaseBudget: 5000, PreferenceBudget: 500}, 193000, 500, 5000, 187500},
		// 3000-0-0-0 = 3000; (3000-500)*0.3 = 750.
		{"explicit base large", 3000, 0, 0, 0, Config{BaseBudget: 10000}, 3000, 500, 750, 1750},
		// (1009-9)*0.3 = 300 exactly: no float rounding to 299.
		{"exact tenth", 1009, 0, 0, 0, Config{PreferenceBudget: 9}, 1009, 9, 300, 700},
		// (1000-1)*0.3 = 299.7 -> 299.
		{"floor", 1000, 0, 0, 0, Config{PreferenceBudget: 1}, 1000, 1, 299, 700},
		{"custom preference budget", 10000, 0, 0, 0, Config{PreferenceBudget: 1000}, 10000, 1000, 2000, 7000},
		{"negative preference budget means 0", 1000, 0, 0, 0, Config{PreferenceBudget: -5}, 1000, 0, 300, 700},
		{"negative base budget means no knowledge", 10000, 0, 0, 0, Config{BaseBudget: -1}, 10000, 500, 0, 9500},
		// Preference budget larger than what is available: clamped.
		{"preference exceeds available", 1300, 500, 100, 400, Config{}, 300, 300, 0, 0},
		{"exactly preference budget left", 1500, 500, 100, 400, Config{}, 500, 500, 0, 0},
		// 503 available: (503-500)*0.3 = 0.9 -> 0.
		{"tiny remainder floors to zero", 1503, 500, 100, 400, Config{}, 503, 500, 0, 3},
		{"prompt overflows window", 4000, 3000, 900, 500, Config{}, 0, 0, 0, 0},
		{"all zero", 0, 0, 0, 0, Config{}, 0, 0, 0, 0},
		{"negative limit", -100, 0, 0, 0, Config{}, 0, 0, 0, 0},
		// Negative token counts are treated as 0, never as extra room.
		{"negative counts", 1000, -500, -500, -500, Config{}, 1000, 500, 150, 350},
		// No overflow at the extremes: MaxInt-1 available, pref 500.
		{"max int", maxInt, 1, 0, 0, Config{BaseBudget: maxInt}, maxInt - 1, 500,
			threeTenths(maxInt - 1 - 500), maxInt - 1 - 500 - threeTenths(maxInt-1-500)},
		{"min int inputs", math.MinInt, math.MinInt, math.MinInt, math.MinInt, Config{BaseBudget: math.MinInt, PreferenceBudget: math.MinInt}, 0, 0, 0, 0},
		{"max int subtrahends", 1000, maxInt, maxInt, maxInt, Config{}, 0, 0, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := CalculateTokenBudgets(tc.limit, tc.system, tc.query, tc.reserve, tc.cfg)
			want := Budgets{TotalAvailable: tc.total, PreferenceBudget: tc.pref, KnowledgeBudget: tc.knowledge, Remaining: tc.remain}
			if got != want {
				t.Fatalf("CalculateTokenBudgets(%d, %d, %d, %d, %+v)\n got %+v\nwant %+v", tc.limit, tc.system, tc.query, tc.reserve, tc.cfg, got, want)
			}
		})
	}
}

// threeTenths is floor(x*0.3) for x >= 0 computed with math/big, an
// implementation independent of the one under test.
func threeTenths(x int) int {
	r := new(big.Rat).Mul(big.NewRat(int64(x), 1), big.NewRat(3, 10))
	return int(new(big.Int).Quo(r.Num(), r.Denom()).Int64())
}

func TestCalculateKnowledgeBudget(t *testing.T) {
	cases := []struct {
		total, pref, base, want int
	}{
		{122300, 500, 2000, 2000},
		{6092, 500, 2000, 1677},
		{2500, 500, 2000, 600},
		{10, 0, 2000, 3},
		{9, 0, 2000, 2},
		{3, 0, 2000, 0},
		{1000, 1000, 2000, 0},
		{1000, 2000, 2000, 0}, // preference exceeds total
		{-1000, 0, 2000, 0},
		{1000, -1000, 2000, 300}, // negative preference counts as 0
		{1000, 0, 0, 0},          // base 0 is taken literally here
		{1000, 0, -7, 0},
		{math.MaxInt, 0, math.MaxInt, threeTenths(math.MaxInt)},
		{math.MaxInt, math.MinInt, math.MaxInt, threeTenths(math.MaxInt)},
	}
	for _, tc := range cases {
		if got := CalculateKnowledgeBudget(tc.total, tc.pref, tc.base); got != tc.want {
			t.Errorf("CalculateKnowledgeBudget(%d, %d, %d) = %d, want %d", tc.total, tc.pref, tc.base, got, tc.want)
		}
	}
}

// TestProperty4Randomized checks Property 4 against exact rational arithmetic
// for random inputs, including values near the int limits. The seed is
// printed so a failure can be replayed with -budget.seed.
func TestProperty4Randomized(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewSource(seed))
	pick := func() int {
		switch rng.Intn(6) {
		case 0:
			return rng.Intn(200001)
		case 1:
			return rng.Intn(5000)
		case 2:
			return -rng.Intn(1000)
		case 3:
			return math.MaxInt - rng.Intn(1000)
		case 4:
			return math.MinInt + rng.Intn(1000)
		default:
			return int(rng.Int63()) - math.MaxInt/2
		}
	}
	for i := 0; i < 20000; i++ {
		limit, sys, query, reserve := pick(), pick(), pick(), pick()
		cfg := Config{BaseBudget: pick(), PreferenceBudget: pick()}
		if rng.Intn(4) == 0 {
			cfg = Config{}
		}
		got := CalculateTokenBudgets(limit, sys, query, reserve, cfg)

		// Reference with math/big: totalAvailable = max(0, limit - s - q - r),
		// negative counts taken as 0.
		tot := big.NewInt(int64(max(0, limit)))
		for _, n := range []int{sys, query, reserve} {
			tot.Sub(tot, big.NewInt(int64(max(0, n))))
		}
		if tot.Sign() < 0 {
			tot.SetInt64(0)
		}
		base, pref := cfg.BaseBudget, cfg.PreferenceBudget
		if base == 0 {
			base = 2000
		}
		if pref == 0 {
			pref = 500
		}
		pref = max(0, pref)
		if big.NewInt(int64(pref)).Cmp(tot) > 0 {
			pref = int(tot.Int64())
		}
		// floor((total - pref) * 3 / 10), big.Int Div is Euclidean (floor for
		// a positive divisor).
		k := new(big.Int).Sub(tot, big.NewInt(int64(pref)))
		k.Mul(k, big.NewInt(3)).Div(k, big.NewInt(10))
		if b := big.NewInt(int64(base)); b.Cmp(k) < 0 {
			k = b
		}
		if k.Sign() < 0 {
			k.SetInt64(0)
		}
		want := Budgets{
			TotalAvailable:   int(tot.Int64()),
			PreferenceBudget: pref,
			KnowledgeBudget:  int(k.Int64()),
		}
		want.Remaining = want.TotalAvailable - want.PreferenceBudget - want.KnowledgeBudget
		if got != want {
			t.Fatalf("seed %d: CalculateTokenBudgets(%d, %d, %d, %d, %+v) = %+v, want %+v", seed, limit, sys, query, reserve, cfg, got, want)
		}
		if got.Remaining < 0 || got.KnowledgeBudget < 0 || got.PreferenceBudget < 0 {
			t.Fatalf("seed %d: negative field in %+v", seed, got)
		}
		// The standalone function agrees with the struct.
		if kb := CalculateKnowledgeBudget(got.TotalAvailable, got.PreferenceBudget, base); kb != got.KnowledgeBudget {
			t.Fatalf("seed %d: CalculateKnowledgeBudget = %d, struct says %d", seed, kb, got.KnowledgeBudget)
		}
	}
}

// testSeed returns the seed for randomized tests: -budget.seed if given,
// otherwise the clock. It is always logged.
func testSeed(t *testing.T) int64 {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -budget.seed=%d)", seed, seed)
	return seed
}
