#!/usr/bin/env bash
# Bad input to `vkformer forward` / `generate`: each case must exit with a code
# from 1 to 125, say what is wrong on stderr (checked by a pattern), and leave
# no output file behind.
set -u
VKF="$1"
MODELS="$2"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
M="$MODELS/encdec_postln_relu"
failures=0

# expect PATTERN -- ARGS...
expect() {
  local pattern="$1"; shift; shift
  rm -f "$TMP/out.npy"
  "$VKF" "$@" > "$TMP/stdout" 2> "$TMP/stderr"
  local rc=$?
  local why=""
  if [ $rc -lt 1 ] || [ $rc -gt 125 ]; then why="exit code $rc"; fi
  grep -v '^vkformer: device' "$TMP/stderr" | grep -qE -- "$pattern" || why="$why; stderr lacks /$pattern/"
  [ -e "$TMP/out.npy" ] && why="$why; left $TMP/out.npy"
  ls "$TMP" | grep -q partial && why="$why; left a partial file"
  if [ -n "$why" ]; then
    echo "FAIL ($why): vkformer $*"; sed 's/^/    /' "$TMP/stderr"; failures=$((failures + 1))
  else
    echo "ok: $pattern"
  fi
}

mkdir -p "$TMP/nomodel" "$TMP/broken" "$TMP/badshape" "$TMP/nokey"
cp "$M/config.json" "$TMP/broken/"; head -c 100 "$M/model.safetensors" > "$TMP/broken/model.safetensors"
cp "$M/model.safetensors" "$TMP/nokey/"
/usr/bin/python3 - "$M/config.json" "$TMP/nokey/config.json" <<'PY' || true
import json, sys
c = json.load(open(sys.argv[1])); del c["d_ff"]; json.dump(c, open(sys.argv[2], "w"))
PY

expect "config.json" -- forward --model "$TMP/nomodel" --src-ids 3,4 --tgt-ids 1 --out "$TMP/out.npy"
expect "model.safetensors" -- forward --model "$TMP/broken" --src-ids 3,4 --tgt-ids 1 --out "$TMP/out.npy"
expect "d_ff" -- forward --model "$TMP/nokey" --src-ids 3,4 --tgt-ids 1 --out "$TMP/out.npy"
expect "outside the vocabulary" -- forward --model "$M" --src-ids 3,100000 --tgt-ids 1 --out "$TMP/out.npy"
LONG="$(printf '3,%.0s' $(seq 1 299))3"  # 300 ids
expect "max_positions" -- forward --model "$M" --src-ids "$LONG" --tgt-ids 1 --out "$TMP/out.npy"
expect "not an integer" -- forward --model "$M" --src-ids 3,x --tgt-ids 1 --out "$TMP/out.npy"
expect "one target sequence per source" -- forward --model "$M" --src-ids 3,4 --out "$TMP/out.npy"
expect "out of range|outside the vocabulary" -- generate --model "$M" --src-ids 3,-1
expect "no device name contains" -- generate --model "$M" --src-ids 3,4 --device no-such-gpu
expect "tokenizer.json" -- tokenize --model "$TMP/nomodel" hello
expect "text #2: tokenizer input: invalid UTF-8 at byte offset 2" -- tokenize --model "$MODELS/../data/sp_small" -- ok $'ab\xff'

echo "$failures failed"
[ $failures -eq 0 ]
