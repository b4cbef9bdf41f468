package index

import (
	"errors"
	"strings"
	"testing"
)

func TestParseAttrs(t *testing.T) {
	a, err := ParseAttrs([]string{"lang=en", "team = search infra", "empty=", "k:v-1.x=a=b"})
	if err != nil {
		t.Fatal(err)
	}
	if a["lang"] != "en" || a["team"] != " search infra" || a["empty"] != "" || a["k:v-1.x"] != "a=b" {
		t.Fatalf("%v", a)
	}
	// Every key CheckAttrs accepts reads back in a filter without quotes.
	for k := range a {
		e, err := ParseFilter(k + " EXISTS")
		if err != nil || e.Field != k {
			t.Errorf("key %q in a filter: %v", k, err)
		}
	}
	for _, bad := range [][]string{
		{"novalue"}, {"=x"}, {"1lang=x"}, {"la ng=x"}, {"attr.x=1"}, {"k=a\nb"}, {"k=\xff"},
		{"a=1", "a=2"}, {strings.Repeat("k", 65) + "=v"}, {"k=" + strings.Repeat("v", 1025)},
	} {
		if _, err := ParseAttrs(bad); !errors.Is(err, ErrBadAttrs) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	many := map[string]string{}
	for i := 0; i <= MaxAttrs; i++ {
		many[strings.Repeat("k", i+1)] = "v"
	}
	if err := CheckAttrs(many); !errors.Is(err, ErrBadAttrs) {
		t.Errorf("too many attributes: %v", err)
	}
}
