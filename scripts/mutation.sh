#!/usr/bin/env bash
# Mutation testing of ragmem's core packages with gremlins: how many one-token
# mutants of a package's code the tests notice (docs/testing.md).
#
#   scripts/mutation.sh [PKG...]     default: rag budget prefs search chunk
#
# For each package it prints the test efficacy (killed / (killed + lived)) and
# the mutant coverage of two runs:
#   own    the package's own tests (gremlins unleash ./PKG);
#   root   the root property suite alone (go test -run Property on the module
#          root, properties_test.go), against the same mutants of PKG.
# and lists the mutants that lived, file:line:column and kind, so that each one
# can be killed by a test or judged equivalent in docs/testing.md.
#
# gremlins runs `go test` on the mutated package; for the root run, a `go`
# wrapper placed first in PATH replaces that package argument (and the coverage
# run's ./PKG/...) with `-run Property MODULE`, so the mutants are the same and
# only the tests that judge them change. Coverage for the root run is gathered
# with -coverpkg ./PKG, so a mutant counts as covered when the property suite
# executes it.
#
# Environment:
#   SUITES              "own root" (default) or one of them
#   WORKERS             gremlins workers (default 1: the machine is shared)
#   NICE                niceness of the runs (default 15)
#   TIMEOUT_COEFFICIENT gremlins' per-mutant timeout as a multiple of the
#                       coverage run's time, for the own run (default 10; a
#                       mutant that loops forever is reported TIMED OUT, not
#                       killed)
#   ROOT_TIMEOUT_COEFFICIENT  the same for the root run (default 8; at 3, a
#                       load average of 19 made full property runs time out)
#   OUT                 where the JSON reports and summary go (default
#                       $TMPDIR/ragmem-mutation)
#   GREMLINS            the gremlins binary (default: from PATH or GOPATH/bin,
#                       installed with `go install` when missing)
#   GREMLINS_ARGS       more arguments for `gremlins unleash`, split at spaces,
#                       e.g. "--exclude-files chunk/binary.go" to measure part
#                       of a package (say so with the figure)
#
# It takes long (on two shared cores, about an hour for the five packages'
# own tests and more for the root suite), so it is not part of `go test ./...`.
set -euo pipefail

VERSION=v0.6.0
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
MODULE="$(go list -m)"
SUITES="${SUITES:-own root}"
WORKERS="${WORKERS:-1}"
NICE="${NICE:-15}"
COEF="${TIMEOUT_COEFFICIENT:-10}"
ROOT_COEF="${ROOT_TIMEOUT_COEFFICIENT:-8}"
OUT="${OUT:-${TMPDIR:-/tmp}/ragmem-mutation}"
PKGS=("$@")
[ ${#PKGS[@]} -gt 0 ] || PKGS=(rag budget prefs search chunk)
mkdir -p "$OUT"

GREMLINS="${GREMLINS:-$(command -v gremlins || true)}"
if [ -z "$GREMLINS" ]; then
	GREMLINS="$(go env GOPATH)/bin/gremlins"
	if [ ! -x "$GREMLINS" ]; then
		echo "mutation.sh: installing gremlins $VERSION" >&2
		go install "github.com/go-gremlins/gremlins/cmd/gremlins@$VERSION"
	fi
fi
command -v jq >/dev/null || { echo "mutation.sh: jq is required" >&2; exit 2; }

REALGO="$(command -v go)"
SHIM="$(mktemp -d)"
trap 'rm -rf "$SHIM"' EXIT

# write_shim PKG: a `go` that runs the root property suite where gremlins
# asks for PKG's tests.
write_shim() {
	cat >"$SHIM/go" <<EOF
#!/usr/bin/env bash
if [ "\$1" = test ]; then
	args=()
	for a in "\${@:2}"; do
		case "\$a" in
		./$1/... | $MODULE/$1) args+=(-run Property "$MODULE") ;;
		*) args+=("\$a") ;;
		esac
	done
	exec "$REALGO" test "\${args[@]}"
fi
exec "$REALGO" "\$@"
EOF
	chmod +x "$SHIM/go"
}

# unleash PKG SUITE: run gremlins and print one summary line.
unleash() {
	local pkg=$1 suite=$2 json="$OUT/$1-$2.json" path="$PATH" cover=() coef=$COEF
	if [ "$suite" = root ]; then
		write_shim "$pkg"
		path="$SHIM:$PATH"
		cover=(--coverpkg "./$pkg")
		coef=$ROOT_COEF
	fi
	# -count=1: a cached coverage run would make gremlins' timeouts tiny.
	local extra=()
	read -r -a extra <<<"${GREMLINS_ARGS:-}"
	PATH="$path" GOFLAGS="-count=1" nice -n "$NICE" "$GREMLINS" unleash "./$pkg" "${cover[@]}" "${extra[@]}" \
		--workers "$WORKERS" --timeout-coefficient "$coef" -o "$json" >"$OUT/$pkg-$suite.log" 2>&1 ||
		{ echo "mutation.sh: gremlins failed on $pkg ($suite); see $OUT/$pkg-$suite.log" >&2; return 1; }
	jq -r --arg p "$pkg" --arg s "$suite" '
		[.files[].mutations[].status] as $st
		| ($st | map(select(. == "KILLED")) | length) as $k
		| ($st | map(select(. == "LIVED")) | length) as $l
		| ($st | map(select(. == "TIMED OUT")) | length) as $t
		| ($st | map(select(. == "NOT COVERED")) | length) as $n
		| "| \($p) | \($s) | \(if $k + $l > 0 then ($k * 1000 / ($k + $l) | round / 10) else "-" end)% | \($k) | \($l) | \($t) | \($n) | \(if $k + $l + $t + $n > 0 then (($k + $l + $t) * 1000 / ($k + $l + $t + $n) | round / 10) else "-" end)% |"' "$json" |
		tee -a "$OUT/summary.md"
	jq -r --arg p "$pkg" '.files[] | .file_name as $f | .mutations[] | select(.status == "LIVED")
		| "    lived: \($p)/\($f):\(.line):\(.column) \(.type)"' "$json" | tee -a "$OUT/survivors-$pkg-$suite.txt"
}

if [ ! -s "$OUT/summary.md" ]; then
	echo "| package | tests | efficacy | killed | lived | timed out | not covered | mutant coverage |" | tee -a "$OUT/summary.md"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- |" | tee -a "$OUT/summary.md"
fi
for pkg in "${PKGS[@]}"; do
	for suite in $SUITES; do
		rm -f "$OUT/survivors-$pkg-$suite.txt"
		unleash "$pkg" "$suite"
	done
done
echo "mutation.sh: reports in $OUT" >&2
