package memory

import (
	"fmt"
	"strings"

	"github.com/ragmem/ragmem/internal/clean"
)

// Importance says how much a memory matters: low, medium, high or critical.
// The zero value is invalid; Importance values are plain values.
type Importance int

// Importance levels, in increasing order.
const (
	Low Importance = iota + 1
	Medium
	High
	Critical
)

// ParseImportance parses "low", "medium", "high" or "critical" (any case).
func ParseImportance(s string) (Importance, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "low":
		return Low, nil
	case "medium":
		return Medium, nil
	case "high":
		return High, nil
	case "critical":
		return Critical, nil
	}
	return 0, fmt.Errorf("%w: importance %q (want low, medium, high or critical)", ErrInvalid, clean.Clip(s, 40))
}

// String returns "low", "medium", "high" or "critical" ("" when invalid).
func (i Importance) String() string {
	switch i {
	case Low:
		return "low"
	case Medium:
		return "medium"
	case High:
		return "high"
	case Critical:
		return "critical"
	}
	return ""
}

// Valid reports whether i is one of the four levels.
func (i Importance) Valid() bool { return i >= Low && i <= Critical }

// Points is the importance part of the relevance score (Score): low 5,
// medium 15, high 25, critical 30; 0 when invalid.
func (i Importance) Points() int {
	switch i {
	case Low:
		return 5
	case Medium:
		return 15
	case High:
		return 25
	case Critical:
		return 30
	}
	return 0
}

// MarshalText implements encoding.TextMarshaler (JSON uses it).
func (i Importance) MarshalText() ([]byte, error) {
	if !i.Valid() {
		return nil, fmt.Errorf("%w: importance %d", ErrInvalid, int(i))
	}
	return []byte(i.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (i *Importance) UnmarshalText(b []byte) error {
	v, err := ParseImportance(string(b))
	if err != nil {
		return err
	}
	*i = v
	return nil
}
