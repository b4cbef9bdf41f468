package index

import (
	"net/url"
	"testing"
)

func TestCanonicalURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"https://example.com/a", "https://example.com/a"},
		{"  HTTPS://Example.COM/a  ", "https://example.com/a"},
		{"https://example.com/a#section-2", "https://example.com/a"},
		{"https://example.com:443/a", "https://example.com/a"},
		{"http://example.com:80/a", "http://example.com/a"},
		{"http://example.com:8080/a", "http://example.com:8080/a"},
		{"https://example.com:80/a", "https://example.com:80/a"},
		{"https://example.com", "https://example.com/"},
		{"https://example.com?", "https://example.com/"},
		{"https://example.com/a?utm_source=x&utm_medium=y", "https://example.com/a"},
		{"https://example.com/a?b=2&utm_campaign=z&a=1", "https://example.com/a?a=1&b=2"},
		{"https://example.com/a?UTM_Source=x&id=3", "https://example.com/a?id=3"},
		{"https://example.com/a?fbclid=abc&gclid=def&q=go", "https://example.com/a?q=go"},
		{"https://example.com/a?x=1&x=0&a=2", "https://example.com/a?a=2&x=1&x=0"},
		{"https://example.com/a?ref=main", "https://example.com/a?ref=main"},
		{"https://example.com/a/./b/../c", "https://example.com/a/c"},
		{"https://example.com/a/b/..", "https://example.com/a/"},
		{"https://example.com/%7euser/%2fx%3a", "https://example.com/~user/%2Fx%3A"},
		{"https://example.com/a?q=a%2bb", "https://example.com/a?q=a%2Bb"},
		{"https://example.com/app#!/inbox", "https://example.com/app#!/inbox"},
		{"https://example.com/app#/settings", "https://example.com/app#/settings"},
		// Credentials are never kept.
		{"https://user:pw@Example.com/", "https://example.com/"},
		{"https://user@example.com/a?b=1", "https://example.com/a?b=1"},
		{"http://:pw@example.com:8080/", "http://example.com:8080/"},
		{"https://us%40er:p%3Aw@example.com/x", "https://example.com/x"},
		{"https://[::1]:443/x", "https://[::1]/x"},
		{"https://[2001:DB8::1]:8443/x", "https://[2001:db8::1]:8443/x"},
		// Not http(s): trimmed, nothing else.
		{" file:///home/me/Notes.md#x ", "file:///home/me/Notes.md#x"},
		{"memory://agent/Fact-1", "memory://agent/Fact-1"},
		{"preference:expertise:1", "preference:expertise:1"},
		{"doc-1", "doc-1"},
		{"https:opaque", "https:opaque"},
		{"https://", "https://"},
		{"https://exa mple.com/", "https://exa mple.com/"},
	}
	for _, c := range cases {
		if got := CanonicalURL(c.in); got != c.want {
			t.Errorf("CanonicalURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCanonicalURLKeepParams(t *testing.T) {
	r := URLRules{KeepParams: []string{"REF_SRC"}}
	if got, want := r.Canonical("https://x.org/p?ref_src=feed&utm_source=a"), "https://x.org/p?ref_src=feed"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := CanonicalURL("https://x.org/p?ref_src=feed"), "https://x.org/p"; got != want {
		t.Errorf("default rules: got %q, want %q", got, want)
	}
}

func FuzzCanonicalURL(f *testing.F) {
	for _, s := range []string{
		"https://Example.com:443/a/./b/../c?utm_source=x&b=2&a=1#frag",
		"http://[::1]:80/%7e?x=%2f#!/route", "https://u:p@h.com", "file:///x", "https://h.com/a?%zz=1",
		"HTTP://h.com/..", "https://h.com/?&&a", "https://h.com/%2e%2E/x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := CanonicalURL(s)
		if again := CanonicalURL(c); again != c {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, c, again)
		}
		if _, err := url.Parse(s); err == nil && c != s {
			if _, err := url.Parse(c); err != nil {
				t.Fatalf("%q parses but its canonical form %q does not: %v", s, c, err)
			}
		}
	})
}
