package rag

import (
	"fmt"
	"time"
)

// RelativeTime describes t relative to now in words (Property 13): "just
// now" within a minute, then "N minutes ago", "N hours ago", "N days ago"
// (under 30 days), "N months ago" (30-day months, under 365 days) and
// "N years ago" (365-day years), always rounding down; times in the future
// read "in N minutes" and so on. The zero time is "unknown time".
func RelativeTime(t, now time.Time) string {
	if t.IsZero() {
		return "unknown time"
	}
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	if d < time.Minute {
		return "just now"
	}
	var n int64
	var unit string
	switch {
	case d < time.Hour:
		n, unit = int64(d/time.Minute), "minute"
	case d < 24*time.Hour:
		n, unit = int64(d/time.Hour), "hour"
	case d < 30*24*time.Hour:
		n, unit = int64(d/(24*time.Hour)), "day"
	case d < 365*24*time.Hour:
		n, unit = int64(d/(30*24*time.Hour)), "month"
	default:
		n, unit = int64(d/(365*24*time.Hour)), "year"
	}
	if n != 1 {
		unit += "s"
	}
	if future {
		return fmt.Sprintf("in %d %s", n, unit)
	}
	return fmt.Sprintf("%d %s ago", n, unit)
}
