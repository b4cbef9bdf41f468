package memory

import (
	"reflect"
	"testing"
)

// TestExample1 is seed 000, Example 1: task "Add OAuth integration to
// existing auth system", agent developer. The seed selects, in order, the
// OAuth failure (40), JWT auth (35) and the middleware pattern (35, a weak
// match through the developer's "patterns" tag); the database schema does
// not match.
func TestExample1(t *testing.T) {
	s := openStore(t, writeFixture(t, example1))
	got, err := s.Match(bg, MatchRequest{Task: "Add OAuth integration to existing auth system", Agent: "developer"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"oauth2-integration-was-considered-too-broad", "project-uses-jwt-authentication", "express-middleware-pattern"}
	if !reflect.DeepEqual(slugs(got), want) {
		t.Fatalf("selected %v, want %v\n%s", slugs(got), want, describe(got))
	}
	wantScores := []Score{
		{Importance: 25, Keyword: 15, Total: 40},
		{Importance: 25, Keyword: 10, Total: 35},
		{Importance: 25, AgentTags: 10, Total: 35},
	}
	for i, m := range got {
		if m.Score != wantScores[i] {
			t.Errorf("%s: score %+v, want %+v", m.Memory.Slug, m.Score, wantScores[i])
		}
	}
	if got[0].Weak || got[1].Weak || !got[2].Weak {
		t.Errorf("weak flags: %v %v %v; only the middleware pattern is a weak match", got[0].Weak, got[1].Weak, got[2].Weak)
	}
	// The tie at 35 is broken by retrieval relevance: the JWT memory is
	// about the auth system the task changes.
	if !(got[1].Relevance > got[2].Relevance) {
		t.Errorf("relevance JWT %.3f, middleware %.3f: want JWT higher", got[1].Relevance, got[2].Relevance)
	}
	for _, m := range got {
		t.Logf("%-45s score %d relevance %.3f rank %.2f  %v", m.Memory.Slug, m.Score.Total, m.Relevance, m.Rank, m.Reasons)
	}
}

// TestExample2 is seed 000, Example 2: task "Add email notifications" with
// memories all about authentication: nothing is selected.
func TestExample2(t *testing.T) {
	s := openStore(t, writeFixture(t, example1, example3))
	for _, agent := range []string{"developer", "planner", "tester", "reviewer", ""} {
		got, err := s.Match(bg, MatchRequest{Task: "Add email notifications", Agent: agent})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 0 {
			t.Errorf("agent %q: selected %v, want none\n%s", agent, slugs(got), describe(got))
		}
	}
}

// TestExample3 is seed 000, Example 3: agent developer, task "Implement
// password reset feature". Authentication module structure: importance 25,
// recency 5 (3 days), keyword 10, agent tags 0, same discoverer 10 = 50.
// Middleware pattern: 25, 0 (2 weeks), 0, 10 ("patterns"), 10 = 45. The auth
// memory is selected.
func TestExample3(t *testing.T) {
	s := openStore(t, writeFixture(t, example3))
	task := "Implement password reset feature"
	ms, err := s.List(bg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Score{
		"authentication-module-structure": {Importance: 25, Recency: 5, Keyword: 10, AgentTags: 0, Discoverer: 10, Total: 50},
		"middleware-pattern":              {Importance: 25, Recency: 0, Keyword: 0, AgentTags: 10, Discoverer: 10, Total: 45},
	}
	for _, m := range ms {
		got := scoreFor(&m, scoreContext{Task: task, Agent: "developer", AgentTags: DefaultAgentTags["developer"]}, testClock)
		if got != want[m.Slug] {
			t.Errorf("%s: %+v, want %+v", m.Slug, got, want[m.Slug])
		}
	}
	got, err := s.Match(bg, MatchRequest{Task: task, Agent: "developer"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0].Memory.Slug != "authentication-module-structure" {
		t.Fatalf("selected %v, want the authentication module first\n%s", slugs(got), describe(got))
	}
	if got[0].Score != want["authentication-module-structure"] {
		t.Errorf("match score %+v", got[0].Score)
	}
	// The pattern fired on the generic words "implement" and "feature"
	// because the memory's content is about passwords too; a task sharing
	// only those words does not select it.
	other, err := s.Match(bg, MatchRequest{Task: "Implementing new features", Agent: "developer"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range other {
		if m.Memory.Slug == "authentication-module-structure" {
			t.Errorf("selected for a task sharing only generic words: %v", m.Reasons)
		}
	}
	for _, m := range got {
		t.Logf("%-35s score %d relevance %.3f rank %.2f  %v", m.Memory.Slug, m.Score.Total, m.Relevance, m.Rank, m.Reasons)
	}
}
