package reserved

import "testing"

// TestReserved: the stores' types, attributes (in any case) and schemes (in
// any case, with or without "//") are reserved; near misses are not.
func TestReserved(t *testing.T) {
	for _, c := range []struct {
		name string
		got  bool
		want bool
	}{
		{"type memory", DocType(" memory "), true},
		{"type memory-pattern", DocType("memory-pattern"), true},
		{"type preference", DocType("preference"), true},
		{"type knowledge", DocType("knowledge"), false},
		{"type memories", DocType("memories"), false},
		{"attr memoryDir", Attr("memoryDir"), true},
		{"attr MEMORYSLUG", Attr("MEMORYSLUG"), true},
		{"attr memoryConflicts", Attr("memoryConflicts"), true},
		{"attr preferenceType", Attr("preferenceType"), true},
		{"attr memo", Attr("memo"), false},
		{"attr speaker", Attr("speaker"), false},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	for u, want := range map[string]string{
		"preference://user": "preference", "PREFERENCE:x": "preference", "memory:a.md": "memory", " Memory://x": "memory",
		"memory-layer://episodic/1": "memory-layer", "memo://x": "", "https://memory.example/": "", "file:///memory:x": "", "memory": "",
	} {
		if got := Scheme(u); got != want {
			t.Errorf("Scheme(%q) = %q, want %q", u, got, want)
		}
	}
	if o := Owner("preference"); o == Owner("memory") {
		t.Errorf("one owner for both: %q", o)
	}
}
