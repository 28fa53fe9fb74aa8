#!/usr/bin/env bash
# Bad input to `vkformer forward` / `generate`, and device errors made by fault
# injection: each case must exit with a code from 1 to 125, say what is wrong
# in ONE line on stderr (checked by a pattern), and leave no output file behind.
# Warnings (unexpected tensors, NaN/Inf) must not stop the run.
# VERBOSE=1 also prints what vkformer said in each case (docs/errors.md quotes it).
set -u
VKF="$1"
MODELS="$2"
HERE="$(cd "$(dirname "$0")" && pwd)"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
M="$MODELS/encdec_postln_relu"
B="$TMP/bad"
failures=0
run_env=()  # VAR=value for the next expect only

# The lines vkformer printed that are not the device banner.
said() { grep -v '^vkformer: device' "$TMP/stderr"; }

# expect PATTERN -- ARGS...
expect() {
  local pattern="$1"; shift; shift
  rm -f "$TMP/out.npy"
  timeout 120 env "${run_env[@]}" "$VKF" "$@" > "$TMP/stdout" 2> "$TMP/stderr"
  local rc=$?
  run_env=()
  local why=""
  if [ $rc -lt 1 ] || [ $rc -gt 125 ]; then why="exit code $rc"; fi
  said | grep -qE -- "$pattern" || why="$why; stderr lacks /$pattern/"
  [ "$(said | wc -l)" -eq 1 ] || why="$why; not one line"
  said | grep -q '^vkformer: error: ' || why="$why; no 'vkformer: error:' line"
  [ -e "$TMP/out.npy" ] && why="$why; left $TMP/out.npy"
  ls "$TMP" | grep -q partial && why="$why; left a partial file"
  if [ -n "$why" ]; then
    echo "FAIL ($why): vkformer $*"; sed 's/^/    /' "$TMP/stderr"; failures=$((failures + 1))
  else
    echo "ok: $pattern"
    [ -n "${VERBOSE:-}" ] && said | sed 's/^/    /'
  fi
}

# expect_warning PATTERN -- ARGS...: exit 0, the output written, a warning line matching PATTERN.
expect_warning() {
  local pattern="$1"; shift; shift
  rm -f "$TMP/out.npy"
  timeout 120 "$VKF" "$@" > "$TMP/stdout" 2> "$TMP/stderr"
  local rc=$?
  local why=""
  [ $rc -eq 0 ] || why="exit code $rc"
  said | grep -qE -- "^vkformer: warning: .*$pattern" || why="$why; no warning matching /$pattern/"
  [ -e "$TMP/out.npy" ] || why="$why; no output written"
  if [ -n "$why" ]; then
    echo "FAIL ($why): vkformer $*"; sed 's/^/    /' "$TMP/stderr"; failures=$((failures + 1))
  else
    echo "ok (warning): $pattern"
    [ -n "${VERBOSE:-}" ] && said | sed 's/^/    /'
  fi
}

/usr/bin/python3 "$HERE/cli_bad_models.py" "$M" "$B" || { echo "FAIL: cli_bad_models.py"; exit 1; }
mkdir -p "$TMP/nomodel"
fwd() { echo forward --model "$1" --src-ids 3,4 --tgt-ids 1 --out "$TMP/out.npy"; }

# Model files.
expect "config.json: cannot open" -- $(fwd "$TMP/nomodel")
expect "model.safetensors: is empty \(0 bytes\)" -- $(fwd "$B/zero")
expect "model.safetensors: tensor .* is beyond the data section .*file truncated" -- $(fwd "$B/truncated")
expect "header length 9223372036854775808 is absurdly large" -- $(fwd "$B/huge_header")
expect "header length [0-9]+ runs past the end of the file" -- $(fwd "$B/past_header")
expect "header is not valid JSON" -- $(fwd "$B/header_not_json")
expect "data_offsets end [0-9]+ is beyond the data section" -- $(fwd "$B/offsets_out_of_bounds")
expect "tensors \".*\" and \".*\" overlap" -- $(fwd "$B/offsets_overlap")
expect "belong to no tensor \(trailing data\)" -- $(fwd "$B/offsets_gap")
expect "unknown dtype Q4 \(safetensors has BOOL" -- $(fwd "$B/unknown_dtype")
expect "tensor \".*\": dtype I32 is not supported \(only F32, F16 and BF16\)" -- $(fwd "$B/int_weight")
expect "shape \[.*\] × F32 is [0-9]+ bytes but data_offsets span [0-9]+" -- $(fwd "$B/size_mismatch")
expect "missing tensor \"generator.bias\" \[31\] = \[tgt_vocab_size\]" -- $(fwd "$B/missing_tensor")
expect "tensor \"generator.weight\" has shape \[32, 31\], expected \[31, 32\]" -- $(fwd "$B/wrong_shape")
expect "model.safetensors.index.json: shard \"model-00002-of-00002.safetensors\" is missing: .*/model-00002-of-00002.safetensors should hold \"" -- $(fwd "$B/shard_missing")
expect "/pickle_only: has pytorch_model.bin but no model.safetensors; vkformer does not read pickles: convert it with tools/hf/convert_to_safetensors.py .*/pickle_only$" -- $(fwd "$B/pickle_only")
expect_warning "unexpected tensor \"extra.weight\" \[2\] F32 is ignored" -- $(fwd "$B/unexpected_tensor")
expect_warning "tensor \"generator.weight\" holds 2 NaN and 1 Inf values" -- $(fwd "$B/nan_weights")

# config.json.
expect "config.json: not valid JSON: parse error at line 2" -- $(fwd "$B/config_not_json")
expect "config.json: missing key \"d_ff\"" -- $(fwd "$B/config_missing_key")
expect "\"d_model\" must be a positive integer, got \"32\"" -- $(fwd "$B/config_wrong_type")
expect "unknown \"model_type\" \"funnel\" \(known: \"transformer\"" -- $(fwd "$B/config_unknown_type")
expect "\"d_model\" 32 is not divisible by \"n_heads\" 3" -- $(fwd "$B/config_indivisible")

# Requests.
expect "id 100000 at position 1 is outside the vocabulary \[0, 29\)" -- forward --model "$M" --src-ids 3,100000 --tgt-ids 1 --out "$TMP/out.npy"
LONG="$(printf '3,%.0s' $(seq 1 299))3"  # 300 ids
expect "has 300 tokens, more than the model.s 24 positions \\(config.json \"max_positions\"\\)" -- forward --model "$M" --src-ids "$LONG" --tgt-ids 1 --out "$TMP/out.npy"
expect "\"x\" is not an integer token id" -- forward --model "$M" --src-ids 3,x --tgt-ids 1 --out "$TMP/out.npy"
expect "\"\" is not an integer token id" -- forward --model "$M" --src-ids "" --tgt-ids 1 --out "$TMP/out.npy"
expect "\"\" is not an integer token id" -- forward --model "$M" --src-ids 3,,4 --tgt-ids 1 --out "$TMP/out.npy"
expect "one target sequence per source" -- forward --model "$M" --src-ids 3,4 --src-ids 5 --tgt-ids 1 --out "$TMP/out.npy"
expect "out of range|outside the vocabulary" -- generate --model "$M" --src-ids 3,-1
expect "no device name contains \"no-such-gpu\"; devices are 0: " -- generate --model "$M" --src-ids 3,4 --device no-such-gpu
expect "device index 7 is out of range; devices are 0: " -- generate --model "$M" --src-ids 3,4 --device 7

# Resources: a memory limit smaller than the model.
run_env=(VKFORMER_MEMORY_LIMIT=64K)
expect "Model::load\(.*\): out of device memory: the weights need [0-9.]+ KiB in f32, more than the device can give: 64.0 KiB available \(memory limit 64.0 KiB" -- $(fwd "$M")
run_env=(VKFORMER_MEMORY_LIMIT=lots)
expect "VKFORMER_MEMORY_LIMIT \"lots\": expected a positive size" -- $(fwd "$M")

# Device errors, by fault injection.
run_env=(VKFORMER_FAULT_INJECT=submit:device_lost)
expect "Session::forward \(1 sequence\): submitting the forward pass of [0-9]+ dispatches: vkQueueSubmit failed: VK_ERROR_DEVICE_LOST" -- $(fwd "$M")
run_env=(VKFORMER_FAULT_INJECT=wait:device_lost)
expect "Session::forward .*vkWaitForFences failed: VK_ERROR_DEVICE_LOST" -- $(fwd "$M")
run_env=(VKFORMER_FAULT_INJECT=alloc:oom)
expect "Model::load\(.*\): uploading tensor \".*\" \[.*\] f32: out of device memory: vkAllocateMemory returned VK_ERROR_OUT_OF_DEVICE_MEMORY" -- $(fwd "$M")
run_env=(VKFORMER_FAULT_INJECT=submit:device_lost:2)
expect "Session::generate \(1 sequence, beam 2, after [0-9]+ decode steps\): submitting .*VK_ERROR_DEVICE_LOST" -- generate --model "$M" --src-ids 3,4 --beam 2 --max-new-tokens 5
run_env=(VKFORMER_FAULT_INJECT=pipeline:oom)
expect "creating the pipeline .*vkCreateComputePipelines failed: VK_ERROR_OUT_OF_DEVICE_MEMORY" -- $(fwd "$M")
run_env=(VKFORMER_FAULT_INJECT=submit)
expect "VKFORMER_FAULT_INJECT \"submit\": no RESULT" -- $(fwd "$M")
expect "tokenizer.json" -- tokenize --model "$TMP/nomodel" hello
expect "text #2: tokenizer input: invalid UTF-8 at byte offset 2" -- tokenize --model "$MODELS/../data/sp_small" -- ok $'ab\xff'
mkdir -p "$TMP/hfvocab" && printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n' > "$TMP/hfvocab/vocab.txt"
expect "text #1: \"5x\" is not an id" -- tokenize --model "$TMP/hfvocab" --decode "2 5x"
expect "text #1: decode: id 99 at position 1 is not in the vocabulary" -- tokenize --model "$TMP/hfvocab" --decode "2,99"
expect "text #1: max_length 1 is less than the 2 special tokens" -- tokenize --model "$TMP/hfvocab" --max-length 1 hello

echo "$failures failed"
[ $failures -eq 0 ]
