package memtest

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Words are the vocabulary of random tasks and memories: topics of a
// software project, some of them generic task words.
var Words = strings.Fields(`auth login oauth jwt token security password reset middleware express
handler upload proxy timeout database schema migration sql cache queue deploy release test
flaky scheduler api route config secret vault email notification payment implement add fix
feature refactor structure pattern convention review quality planning code`)

// Agents are the agents of random memories and tasks ("" for none).
var Agents = []string{"developer", "planner", "tester", "reviewer", "security-bot", ""}

// Tags are the tags of random memories: the default specialty tags
// (memory.DefaultAgentTags) and more.
var Tags = []string{"auth", "patterns", "code", "implementation", "testing", "quality", "planning", "structure",
	"review", "standards", "failures", "conventions", "analysis", "validation", "database"}

var importances = []string{"low", "medium", "high", "critical"}

// RandWords returns n words of Words.
func RandWords(r *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = Words[r.Intn(len(Words))]
	}
	return strings.Join(ws, " ")
}

// RandPattern draws a whenToUse pattern of any kind.
func RandPattern(r *rand.Rand) string {
	switch r.Intn(6) {
	case 0:
		return Words[r.Intn(len(Words))]
	case 1:
		return RandWords(r, 1) + "|" + RandWords(r, 1) + "|" + RandWords(r, 1)
	case 2:
		return RandWords(r, 1) + "*" + RandWords(r, 1)
	case 3:
		return RandWords(r, 1) + ".*" + RandWords(r, 1)
	case 4:
		return "When " + RandWords(r, 2+r.Intn(3))
	default:
		return RandWords(r, 2)
	}
}

// RandFixture draws a memory's frontmatter (no name, no body): a title of
// 1 to 5 words, any importance, discovered up to 30 days before Clock (or
// up to 2 hours after it; one in ten without a time), by any agent, with 1
// to 3 patterns and up to 4 tags.
func RandFixture(r *rand.Rand) Fixture {
	f := Fixture{
		Title:      strings.ToUpper(RandWords(r, 1)[:1]) + RandWords(r, 1+r.Intn(5))[1:],
		Importance: importances[r.Intn(4)],
		Age:        time.Duration(r.Int63n(int64(30*Day))) - time.Duration(r.Intn(3))*time.Hour,
		By:         Agents[r.Intn(len(Agents))],
	}
	for i := 1 + r.Intn(3); i > 0; i-- {
		f.WhenToUse = append(f.WhenToUse, RandPattern(r))
	}
	for i := r.Intn(5); i > 0; i-- {
		f.Tags = append(f.Tags, Tags[r.Intn(len(Tags))])
	}
	if r.Intn(10) == 0 {
		f.Age = 0
	}
	return f
}

// RandomDir writes n random memories (RandFixture, with bodies of 150 to
// 400 words; seed 42) into a new directory and returns it: the benchmarks'
// memory directory.
func RandomDir(tb testing.TB, n int) string {
	tb.Helper()
	r := rand.New(rand.NewSource(42))
	dir := filepath.Join(tb.TempDir(), "m")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < n; i++ {
		f := RandFixture(r)
		f.Body = "# " + f.Title + "\n\n" + RandWords(r, 150+r.Intn(250))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%04d.md", i)), f.File(), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}
