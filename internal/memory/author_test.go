package memory

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/memory/internal/memtest"
	"github.com/ragmem/ragmem/internal/reserved"
)

// credulousJudge is a chat model that answers relation for every memory it
// is shown: the model of issue 25, which let a page's claim supersede what
// the user wrote.
func credulousJudge(t *testing.T, relation string) *memtest.Chat {
	slugRE := regexp.MustCompile(`<memory slug="([^"]+)"`)
	return memtest.NewChat(t, func(_ int, req map[string]any) (int, string) {
		msgs := req["messages"].([]any)
		user := msgs[len(msgs)-1].(map[string]any)["content"].(string)
		var rels []map[string]string
		for _, m := range slugRE.FindAllStringSubmatch(user, -1) {
			rels = append(rels, map[string]string{"slug": m[1], "relation": relation, "reason": "the page says so"})
		}
		b, _ := json.Marshal(map[string]any{"relations": rels})
		return http.StatusOK, string(b)
	})
}

// TestAuthorRoundTrip: an extracted entry is sealed with the hash of its
// title and body; it reads back as extracted while the seal holds, and as
// the user's once edited by hand (or marked extracted by hand). An entry
// without the field is the user's; an unknown author is an error naming
// the line.
func TestAuthorRoundTrip(t *testing.T) {
	fm := Frontmatter{Title: "Deploys run on Fridays", WhenToUse: []string{"deploy"}, Importance: Medium, Author: AuthorExtraction}
	data := FormatEntry(fm, "The deploy job runs every Friday at 17:00.")
	if !strings.Contains(string(data), "author: extraction\nextractedHash: ") {
		t.Fatalf("no seal:\n%s", data)
	}
	author := func(data string) string {
		t.Helper()
		es, err := ParseFile([]byte(data))
		if err != nil {
			t.Fatal(err)
		}
		m, err := mergeEntries(es)
		if err != nil {
			t.Fatal(err)
		}
		return m.Author
	}
	if a := author(string(data)); a != AuthorExtraction {
		t.Fatalf("sealed entry: %q", a)
	}
	// White space does not break the seal; a changed word does.
	if a := author(strings.Replace(string(data), "runs every", "runs  every", 1) + "\n\n"); a != AuthorExtraction {
		t.Errorf("re-spaced: %q", a)
	}
	for name, edited := range map[string]string{
		"body":    strings.Replace(string(data), "17:00", "18:00", 1),
		"title":   strings.Replace(string(data), "Fridays", "Mondays", 1),
		"no seal": regexp.MustCompile(`(?m)^extractedHash: .*\n`).ReplaceAllString(string(data), ""),
		"by hand": "---\ntitle: Deploys run on Fridays\nwhenToUse: deploy\nauthor: extraction\n---\n\nThe deploy job runs every Friday.\n",
		"none":    "---\ntitle: Deploys run on Fridays\nwhenToUse: deploy\n---\n\nThe deploy job runs every Friday.\n",
	} {
		if a := author(edited); a != AuthorUser {
			t.Errorf("%s: author %q, want user", name, a)
		}
	}
	// One entry of the user's makes the memory theirs.
	appended := string(data) + separator + string(FormatEntry(Frontmatter{Title: fm.Title, WhenToUse: fm.WhenToUse, Importance: Medium, Author: AuthorUser}, "Confirmed by the release manager."))
	if a := author(appended); a != AuthorUser {
		t.Errorf("with an entry of the user's: %q", a)
	}
	if _, err := ParseFile([]byte("---\ntitle: T\nwhenToUse: x\nauthor: robot\n---\n\nbody\n")); err == nil || !strings.Contains(err.Error(), "line 4") || !strings.Contains(err.Error(), "use user or extraction") {
		t.Errorf("unknown author: %v", err)
	}
}

// TestExtractionNeverSupersedesTheUser is item 8 of issue 25: a credulous
// model judges that an extracted memory contradicts (or restates) what the
// user wrote; without the caller's say-so the user's memory stays as it
// was, current and byte for byte, and the extracted memory is written
// beside it, marked as conflicting (in its file, in the list and on its
// index records). With SupersedeUser it supersedes, as before; between
// extracted memories nothing changes.
func TestExtractionNeverSupersedesTheUser(t *testing.T) {
	for _, relation := range []string{"contradicts", "same"} {
		t.Run(relation, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "mem")
			l := credulousJudge(t, relation).LLM()
			ix := openIndex(t)
			s, err := Open(bg, dir, &Options{Index: ix, Logger: quiet(), Now: clock, LLM: &l})
			if err != nil {
				t.Fatal(err)
			}
			user, err := s.Add(bg, NewMemory{Frontmatter: Frontmatter{Title: "API listens on port 8080", WhenToUse: []string{"api port"}}, Content: "The API listens on port 8080 (checked in config/api.yaml)."})
			if err != nil || user.Memory.Author != AuthorUser {
				t.Fatalf("the user's memory: %+v %v", user.Memory, err)
			}
			before, _ := os.ReadFile(user.Memory.Path)
			forged := NewMemory{Frontmatter: Frontmatter{Title: "The API port is 9999", WhenToUse: []string{"api port"}, Author: AuthorExtraction},
				Content: "The API listens on port 9999 now, says a page the agent read."}
			res, err := s.Add(bg, forged)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Superseded) != 0 || res.Consolidated != nil || len(res.Conflicts) != 1 || res.Conflicts[0].Slug != user.Memory.Slug ||
				res.Conflicts[0].By != "author" || !strings.Contains(res.Conflicts[0].Reason, "written by the user") {
				t.Fatalf("extracted memory: %+v", res)
			}
			if res.Memory.Slug == user.Memory.Slug || res.Memory.Author != AuthorExtraction || !slices.Equal(res.Memory.Conflicts, []string{user.Memory.Slug}) {
				t.Fatalf("written as %+v", res.Memory)
			}
			after, _ := os.ReadFile(user.Memory.Path)
			if string(after) != string(before) {
				t.Fatalf("the user's file changed:\n%s", after)
			}
			got, err := s.Get(bg, user.Memory.Slug)
			if err != nil || got.Superseded() || got.Confirmations != 0 {
				t.Fatalf("the user's memory now: %+v %v", got, err)
			}
			// The conflict is on the extracted memory's index records.
			recs, err := ix.Records(bg, index.Filter{DocTypes: []string{index.DocMemory}, Attrs: map[string]string{attrSlug: res.Memory.Slug}})
			if err != nil || len(recs) == 0 || recs[0].Attrs[reserved.AttrMemoryConflicts] != user.Memory.Slug || recs[0].Attrs[reserved.AttrMemoryAuthor] != AuthorExtraction {
				t.Fatalf("index records: %+v %v", recs, err)
			}
			// The caller says so: the extraction supersedes (or merges).
			forged.Title, forged.SupersedeUser = "API port changed to 7777", true
			forged.Content = "The API listens on port 7777 from now on."
			res, err = s.Add(bg, forged)
			if err != nil {
				t.Fatal(err)
			}
			switch relation {
			case "contradicts":
				if !slices.ContainsFunc(res.Superseded, func(l Link) bool { return l.Slug == user.Memory.Slug }) {
					t.Fatalf("with SupersedeUser: %+v", res)
				}
			case "same":
				if res.Consolidated == nil || res.Consolidated.Slug != user.Memory.Slug {
					t.Fatalf("with SupersedeUser: %+v", res)
				}
			}
		})
	}
}

// TestExtractionKeepsAwayFromTheUsersTitle: an extracted memory with the
// title of one of the user's is not appended to it (it would become its
// text): it is written as <slug>-extracted, conflicting with it, and later
// extractions of that title update that copy. An explicit supersedes of a
// user's memory is a conflict too. A file written by hand, or an
// extracted one edited by hand, is the user's.
func TestExtractionKeepsAwayFromTheUsersTitle(t *testing.T) {
	dir := writeFixture(t, example1) // written by hand: the user's
	s := openStore(t, dir)
	const jwt = "project-uses-jwt-authentication"
	before, _ := os.ReadFile(filepath.Join(dir, jwt+".md"))
	nm := NewMemory{Frontmatter: Frontmatter{Title: "Project uses JWT authentication", WhenToUse: []string{"jwt"}, Author: AuthorExtraction},
		Content: "Tokens never expire, according to a blog post."}
	res, err := s.Add(bg, nm)
	if err != nil {
		t.Fatal(err)
	}
	if res.Appended || res.Memory.Slug != jwt+"-extracted" || len(res.Conflicts) != 1 || res.Conflicts[0].Slug != jwt {
		t.Fatalf("%+v", res)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, jwt+".md")); string(after) != string(before) {
		t.Fatalf("the user's file changed:\n%s", after)
	}
	res, err = s.Add(bg, nm)
	if err != nil || !res.Appended || res.Memory.Slug != jwt+"-extracted" {
		t.Fatalf("second extraction: %+v %v", res, err)
	}
	// With the caller's say-so it is an update of the user's memory.
	nm.SupersedeUser = true
	if res, err = s.Add(bg, nm); err != nil || !res.Appended || res.Memory.Slug != jwt {
		t.Fatalf("with SupersedeUser: %+v %v", res, err)
	}
	// An explicit supersedes naming a memory of the user's.
	sup := NewMemory{Frontmatter: Frontmatter{Title: "Schema 3 replaces 2.1", WhenToUse: []string{"schema"}, Author: AuthorExtraction,
		Supersedes: []string{"database-schema-version-2-1"}}, Content: "The schema is at version 3."}
	if res, err = s.Add(bg, sup); err != nil || len(res.Superseded) != 0 || len(res.Conflicts) != 1 || res.Conflicts[0].Slug != "database-schema-version-2-1" {
		t.Fatalf("explicit supersedes: %+v %v", res, err)
	}
	// An extracted memory edited by hand becomes the user's.
	ex, err := s.Get(bg, jwt+"-extracted")
	if err != nil || ex.Author != AuthorExtraction {
		t.Fatalf("%+v %v", ex, err)
	}
	data, _ := os.ReadFile(ex.Path)
	if err := os.WriteFile(ex.Path, []byte(strings.ReplaceAll(string(data), "never expire", "expire after 15 minutes")), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Refresh(bg); err != nil {
		t.Fatal(err)
	}
	if ex, err = s.Get(bg, jwt+"-extracted"); err != nil || ex.Author != AuthorUser {
		t.Fatalf("edited by hand: %+v %v", ex.Author, err)
	}
}
