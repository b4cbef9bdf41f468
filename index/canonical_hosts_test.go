package index

import "testing"

// TestCanonicalURLHosts: a host is one host however it is written: an
// internationalised name in Unicode (any case, full-width, decomposed, or
// percent-encoded) and in the ASCII form browsers send (punycode) name the
// same page, and so does a default port written with leading zeros.
func TestCanonicalURLHosts(t *testing.T) {
	for in, want := range map[string]string{
		"https://bücher.example/a":           "https://xn--bcher-kva.example/a",
		"https://BÜCHER.example/a":           "https://xn--bcher-kva.example/a",
		"https://bu\u0308cher.example/a":     "https://xn--bcher-kva.example/a",
		"https://b%C3%BCcher.example/a":      "https://xn--bcher-kva.example/a",
		"https://XN--BCHER-KVA.example/a":    "https://xn--bcher-kva.example/a",
		"https://ａｂｃ.example/":               "https://abc.example/",
		"https://例え.テスト:8443/p?utm_source=1": "https://xn--r8jz45g.xn--zckzah:8443/p",
		"https://example.com:0443/":          "https://example.com/",
		"http://example.com:00080/":          "http://example.com/",
		"https://example.com:08443/":         "https://example.com:8443/",
		"https://my_host.example/":           "https://my_host.example/", // not a valid name: kept, lower-cased
		"https://[::1]:0443/":                "https://[::1]/",
	} {
		if got := CanonicalURL(in); got != want {
			t.Errorf("CanonicalURL(%q) = %q, want %q", in, got, want)
		}
		if got := CanonicalURL(want); got != want {
			t.Errorf("CanonicalURL(%q) = %q: not stable", want, got)
		}
	}
}
