#!/usr/bin/env bash
# `vkformer translate` with models/dates: dates in several forms give the right
# ISO dates, one line each, in order, greedy, with --beam 3 and in several
# batches; bad input gives one clear line on stderr and exit code 1.
set -u
VKF="$1"
M="$2"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0

inputs=("22 November 2026" "Nov 3, 1999" "2000/2/29" "29.02.1904" "Sunday, 22 November 2026"
        "the 1st of january 1900" "DECEMBER 31ST 2099" "mAy 7, 2031" "7 Aug 1945")
want=$'2026-11-22\n1999-11-03\n2000-02-29\n1904-02-29\n2026-11-22\n1900-01-01\n2099-12-31\n2031-05-07\n1945-08-07'

# --batch-size 4: three batches, the outputs still in input order.
for opts in "--beam 1" "--beam 3" "--batch-size 4"; do
  out=$("$VKF" translate --model "$M" $opts "${inputs[@]}" 2> "$TMP/stderr")
  rc=$?
  if [ $rc -ne 0 ] || [ "$out" != "$want" ]; then
    echo "FAIL: translate $opts (exit $rc)"; echo "got:"; echo "$out" | sed 's/^/    /'
    echo "want:"; echo "$want" | sed 's/^/    /'; sed 's/^/    stderr: /' "$TMP/stderr"
    failures=$((failures + 1))
  else
    echo "ok: $opts, ${#inputs[@]} dates in order"
  fi
done

# expect PATTERN -- ARGS...: exit code $want_rc (1: bad input; 2: a usage error), the
# pattern on stderr, nothing on stdout.
want_rc=1
expect() {
  local pattern="$1"; shift; shift
  "$VKF" "$@" > "$TMP/stdout" 2> "$TMP/stderr"
  local rc=$? why=""
  [ $rc -eq $want_rc ] || why="exit code $rc"
  grep -v '^vkformer: device' "$TMP/stderr" | grep -qE -- "$pattern" || why="$why; stderr lacks /$pattern/"
  [ -s "$TMP/stdout" ] && why="$why; printed to stdout"
  if [ -n "$why" ]; then
    echo "FAIL ($why): vkformer $*"; sed 's/^/    /' "$TMP/stderr"; failures=$((failures + 1))
  else
    echo "ok: $pattern"
  fi
}

mkdir -p "$TMP/notok" "$TMP/badtype"
cp "$M/config.json" "$M/model.safetensors" "$TMP/notok/"
cp "$M/config.json" "$M/model.safetensors" "$TMP/badtype/"
echo '{"type": "wordpiece"}' > "$TMP/badtype/tokenizer.json"
long=$(printf '1%.0s' $(seq 1 65))

expect "tokenizer.json: cannot open" -- translate --model "$TMP/notok" "22 Nov 2026"
expect "tokenizer.json: field \"type\" is unknown.*wordpiece.*char" -- translate --model "$TMP/badtype" "22 Nov 2026"
expect "text #2: invalid UTF-8 at byte offset 3" -- translate --model "$M" "22 Nov 2026" $'22 \xff 2026'
expect "text #1 has 65 tokens, more than the model's max_positions 64" -- translate --model "$M" "$long"
expect "text #1 is empty" -- translate --model "$M" ""
want_rc=2
expect "max-new-tokens 65 is more than" -- translate --model "$M" --max-new-tokens 65 "22 Nov 2026"
expect "precision must be fp32, fp16, q8_0, q4_0 or q4_1" -- translate --model "$M" --precision fp8 "22 Nov 2026"
want_rc=1
expect "config.json" -- translate --model "$TMP/nowhere" "22 Nov 2026"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all ok"
