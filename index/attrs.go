package index

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrBadAttrs is returned by CheckAttrs and ParseAttr for attributes a
// surface may not store.
var ErrBadAttrs = errors.New("index: invalid attributes")

// Bounds on the attributes a user sets on a document.
const (
	MaxAttrs          = 32   // attributes per document
	MaxAttrKeyBytes   = 64   // bytes of a key
	MaxAttrValueBytes = 1024 // bytes of a value
)

// CheckAttrs checks attributes set by a user (CLI --attr, the HTTP API's
// and MCP tools' "attrs"): at most MaxAttrs; keys are 1 to MaxAttrKeyBytes
// letters, digits and _ . - : starting with a letter or _, not starting
// with "attr." (which the filter syntax uses to name an attribute whose key
// is a built-in field); values are valid UTF-8 without control characters,
// at most MaxAttrValueBytes. Such keys can be written in a filter expression
// without quotes.
func CheckAttrs(attrs map[string]string) error {
	if len(attrs) > MaxAttrs {
		return fmt.Errorf("%w: %d attributes, at most %d", ErrBadAttrs, len(attrs), MaxAttrs)
	}
	for k, v := range attrs {
		if err := checkAttr(k, v); err != nil {
			return err
		}
	}
	return nil
}

func checkAttr(k, v string) error {
	if k == "" || len(k) > MaxAttrKeyBytes {
		return fmt.Errorf("%w: key %q must be 1 to %d bytes", ErrBadAttrs, clip(k), MaxAttrKeyBytes)
	}
	for i, r := range k {
		letter := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !(letter || i > 0 && (r >= '0' && r <= '9' || r == '.' || r == '-' || r == ':')) {
			return fmt.Errorf("%w: key %q: use letters, digits and _ . - :, starting with a letter or _", ErrBadAttrs, clip(k))
		}
	}
	if strings.HasPrefix(k, "attr.") {
		return fmt.Errorf("%w: key %q: the prefix attr. is reserved", ErrBadAttrs, k)
	}
	if len(v) > MaxAttrValueBytes {
		return fmt.Errorf("%w: the value of %q is longer than %d bytes", ErrBadAttrs, k, MaxAttrValueBytes)
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("%w: the value of %q is not valid UTF-8", ErrBadAttrs, k)
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("%w: the value of %q holds control characters", ErrBadAttrs, k)
		}
	}
	return nil
}

// ParseAttrs parses "key=value" pairs (as given to --attr) into attributes
// and checks them with CheckAttrs. A key given twice is an error.
func ParseAttrs(pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !ok {
			return nil, fmt.Errorf("%w: %q is not key=value", ErrBadAttrs, clip(p))
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%w: key %q given twice", ErrBadAttrs, clip(k))
		}
		out[k] = v
	}
	return out, CheckAttrs(out)
}

func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	n := 80
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
