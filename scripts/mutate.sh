#!/usr/bin/env bash
# Mutation testing of the trust boundary (docs/testing.md): for each
# target, gremlins changes one operator at a time in the target's files,
# runs the package's tests, and counts the mutants they kill.
#
#   scripts/mutate.sh                 every target
#   scripts/mutate.sh resolve blob    the named targets
#   MUTATE_CHANGED=origin/main scripts/mutate.sh
#                                     only targets whose files differ from that ref
#   MUTATE_FILES='(key|retry)\.go$' scripts/mutate.sh blob
#                                     only those files of a target (to finish
#                                     one that was cut at its bound)
#
# Gremlins copies the module once per worker; it runs on a copy of the
# tracked (and new, unignored) files, so the worktree's agent CLIs and
# binaries (over a gigabyte) are not copied with it, and the worktree is
# never touched. Reports land in $MUTATE_OUT (default .tether/mutate).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# name | package | the only files mutated (a regexp on the path), or "" for all
targets=(
	"resolve|./internal/resolve|"
	"packer|./internal/packer|internal/packer/(deny|format|limits|secrets|unpack)\.go$"
	"workspace|./internal/workspace|internal/workspace/(restore|limits)\.go$"
	"treepolicy|./internal/treepolicy|internal/treepolicy/(credentials|kinds|limits|secrets|state)\.go$"
	"blob|./internal/blob|internal/blob/(blob|encrypt|key|retry|reader)\.go$"
	"runstore|./internal/runstore|internal/runstore/(auth|sign|keys)\.go$"
	"visit|./activities|activities/(visit|restore|visitworkspace|digest|retry)\.go$"
	"workflows|./workflows|workflows/(run|agent|persistence|branches|legacy_fanout|human|budget|retrynote)\.go$"
	"modelrelay|./internal/modelrelay|"
	"blobref|./internal/blobref|"
)

out=${MUTATE_OUT:-$root/.tether/mutate}
workers=${MUTATE_WORKERS:-1}
# gremlins times a mutant's tests out at this multiple of the unmutated
# run; a loaded machine needs more than its default 3.
coef=${MUTATE_TIMEOUT_COEFFICIENT:-6}
# Each target stops after this long (a bound, not an estimate): blob's
# suite runs versitygw and two S3 outages for every mutant.
bound() {
	case $1 in
	blob) echo "${MUTATE_TARGET_TIMEOUT:-120m}" ;;
	visit) echo "${MUTATE_TARGET_TIMEOUT:-60m}" ;;
	workflows) echo "${MUTATE_TARGET_TIMEOUT:-300m}" ;;
	*) echo "${MUTATE_TARGET_TIMEOUT:-40m}" ;;
	esac
}

want=("$@")
if [[ -n "${MUTATE_CHANGED:-}" ]]; then
	changed=$(git diff --name-only "$MUTATE_CHANGED" -- '*.go')
	want=()
	for t in "${targets[@]}"; do
		IFS='|' read -r name pkg only <<<"$t"
		dir=${pkg#./}
		if grep -E "^$dir/[^/]+\.go$" <<<"$changed" | grep -v '_test\.go$' | grep -qE "${only:-.}"; then
			want+=("$name")
		fi
	done
	if [[ ${#want[@]} -eq 0 ]]; then
		echo "mutate: no target's files changed since $MUTATE_CHANGED"
		exit 0
	fi
fi

copy=$(mktemp -d "${TMPDIR:-/tmp}/tether-mutate.XXXXXX")
trap 'rm -rf "$copy"' EXIT
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
	[[ -e $f ]] && printf '%s\0' "$f"
done | tar --null -T - -cf - | (mkdir "$copy/src" && tar -xf - -C "$copy/src")
mkdir -p "$out"

if [[ ${#want[@]} -eq 0 ]]; then
	for t in "${targets[@]}"; do want+=("${t%%|*}"); done
fi
fail=0
for name in "${want[@]}"; do
	t=$(printf '%s\n' "${targets[@]}" | grep "^$name|" || true)
	if [[ -z $t ]]; then
		echo "mutate: no target $name" >&2
		exit 2
	fi
	IFS='|' read -r name pkg only <<<"$t"
	excl=()
	if [[ -n $only || -n ${MUTATE_FILES:-} ]]; then
		# gremlins only excludes, by the path under the package's
		# directory; every other non-test file of the package (and of its
		# sub-packages) is left alone.
		dir=${pkg#./}
		while IFS= read -r f; do
			if ! grep -qE "$only" <<<"$dir/$f" || ! grep -qE "${MUTATE_FILES:-.}" <<<"$dir/$f"; then
				excl+=(-E "^$(sed 's/[.]/\\./g' <<<"$f")\$")
			fi
		done < <(cd "$copy/src/$dir" && find . -name '*.go' ! -name '*_test.go' | sed 's|^\./||' | sort)
	fi
	echo "== mutate $name ($pkg)"
	start=$(date +%s)
	rc=0
	limit=$(bound "$name")
	(cd "$copy/src" && timeout "$limit" go tool gremlins unleash "$pkg" \
		--workers "$workers" --timeout-coefficient "$coef" \
		"${excl[@]}" -o "$out/$name.json") >"$out/$name.log" 2>&1 || rc=$?
	secs=$(($(date +%s) - start))
	grep -E '^ *(LIVED|TIMED OUT)' "$out/$name.log" || true
	if [[ $rc -ne 0 ]]; then
		# Cut at the limit (or failed): count what the log holds so far.
		echo "mutate $name: gremlins exited $rc after ${secs}s (partial; see $out/$name.log)"
		fail=1
	fi
	k=$(grep -cE '^ *KILLED ' "$out/$name.log" || true)
	l=$(grep -cE '^ *LIVED ' "$out/$name.log" || true)
	n=$(grep -cE '^ *NOT COVERED ' "$out/$name.log" || true)
	to=$(grep -cE '^ *TIMED OUT ' "$out/$name.log" || true)
	eff=$(awk -v k="$k" -v l="$l" 'BEGIN { if (k + l) printf "%.1f", 100 * k / (k + l); else print "n/a" }')
	echo "mutate $name: efficacy $eff% ($k killed, $l lived, $to timed out, $n not covered), ${secs}s"
	# The goals of docs/testing.md: 90% where a miss is a wrong
	# conversation or an escape, 85% for the workflow, 80% elsewhere.
	goal=80
	case $name in resolve | packer | workspace | treepolicy | modelrelay | blobref) goal=90 ;; workflows) goal=85 ;; esac
	if [[ $eff != n/a ]] && awk -v e="$eff" -v g="$goal" 'BEGIN { exit !(e < g) }'; then
		echo "mutate $name: below its goal of $goal%"
		fail=1
	fi
done
exit $fail
