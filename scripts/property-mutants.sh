#!/usr/bin/env bash
# Applies, one at a time, the one-line mutants that each property of the
# suite must catch (docs/testing.md), runs `go test -run Property .`, reverts
# the file, and prints which tests failed. Every mutant must make the suite
# fail. Run it from a clean tree: it restores each file from a copy.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
run() {
	local name=$1 file=$2 old=$3 new=$4 bak
	bak="$(mktemp)"
	cp "$file" "$bak"
	if ! OLD="$old" NEW="$new" perl -0pi -e 'BEGIN { $o = $ENV{OLD}; $n = $ENV{NEW} } $c = s/\Q$o\E/$n/; END { exit($c ? 0 : 3) }' "$file"; then
		echo "$name: the mutant no longer applies to $file; update this script" >&2
		cp "$bak" "$file"
		rm -f "$bak"
		status=1
		return
	fi
	local log failing
	log="$(mktemp)"
	go test -count=1 -run Property . >"$log" 2>&1
	cp "$bak" "$file"
	rm -f "$bak"
	failing=$(grep -a '^--- FAIL' "$log" | awk '{print $3}' | tr '\n' ' ')
	rm -f "$log"
	if [ -z "$failing" ]; then
		echo "$name: LIVED (the property suite passed)"
		status=1
	else
		echo "$name: killed by $failing"
	fi
}
run "P2: EscapeText returns \"\"" rag/xml.go 'func EscapeText(s string) string { return escape(s, false) }' 'func EscapeText(s string) string { return "" }'
run "P3: every url and title rendered as \"x\"" rag/context.go 's.Index, EscapeAttr(s.URL), EscapeAttr(s.Title),' 's.Index, "x", "x",'
run "P6: an identical re-index rewrites the chunks" internal/index/engine/index.go '		if existing[0].ContentHash == p.hash {' '		if false && existing[0].ContentHash == p.hash {'
run "P7/P8: selection returns nothing" budget/select.go '	if budget <= 0 || len(items) == 0 {' '	if true {'
run "P1: one result more than topK" search/fuse.go '	if len(out) > o.TopK {
		out = out[:o.TopK]
	}' '	if len(out) > o.TopK+1 {
		out = out[:o.TopK+1]
	}'
run "P4: the knowledge budget drops the remainder of x/10" budget/budget.go '	k := (x/10)*3 + (x%10)*3/10' '	k := (x / 10) * 3'
run "P11: the configured preference budget is deducted, not the profile" rag/context.go '	pb := profileTokens
	if pb == 0 {' '	pb := cfg.PreferenceBudget
	if pb == 0 {'
run "P13: minutes round up" rag/reltime.go '		n, unit = int64(d/time.Minute), "minute"' '		n, unit = int64((d+time.Minute-1)/time.Minute), "minute"'
run "fusion: scores normalised upside down" search/fuse.go '	return (s - c.lo) / (c.hi - c.lo)' '	return (c.hi - s) / (c.hi - c.lo)'
run "P10: \"I work as\" is not a statement" prefs/detect.go '		if asComparison.MatchString(g["x"]) {
			return "" // "I work as fast as I can"' '		if true {
			return "" // "I work as fast as I can"'
run "query cache: the key ignores the last byte of the query" internal/embed/querycache.go '	key := e.Identity() + "\x00" + text' '	key := e.Identity() + "\x00" + text[:len(text)-1]'
exit $status
