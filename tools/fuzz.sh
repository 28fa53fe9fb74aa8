#!/usr/bin/env bash
# make fuzz: builds every tests/fuzz/fuzz_<name>.cpp with clang (libFuzzer,
# ASan, UBSan) and runs each for FUZZ_SECONDS on its seeds (tests/fuzz/corpus/<name>/,
# never modified: new inputs go to BUILD/corpus/<name>/), FUZZ_JOBS targets at a time.
# A crash, sanitizer report, leak, timeout or out-of-memory fails the run and
# leaves the reproducer in BUILD/artifacts/<name>/ (replay: BUILD/fuzz/fuzz_<name> FILE).
# Usage: tools/fuzz.sh [BUILD_DIR]   env: FUZZ_SECONDS (60), FUZZ_JOBS (nproc),
#        FUZZ_TARGETS ("safetensors config", default all), FUZZ_CXX (clang++-14),
#        FUZZ_OPT (-O1; a new BUILD_DIR only: -O0 compiles in about a third of the time and
#        runs fewer executions a second, what make test's short runs choose)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
seconds=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-$(nproc)}
cxx=${FUZZ_CXX:-clang++-14}
opt=${FUZZ_OPT:--O1}

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt -g1 -DNDEBUG" -DCMAKE_CXX_COMPILER="$cxx" \
    -DVKF_FUZZ=ON -DVKF_BUILD_TESTS=OFF > "$build.configure.log" 2>&1 \
    || { cat "$build.configure.log" >&2; exit 1; }
  mv "$build.configure.log" "$build/configure.log"
fi
cmake --build "$build" -j "$jobs" --target fuzz_targets

if [ -n "${FUZZ_TARGETS:-}" ]; then
  read -r -a names <<< "$FUZZ_TARGETS"
else
  names=()
  for f in tests/fuzz/fuzz_*.cpp; do n=$(basename "$f" .cpp); names+=("${n#fuzz_}"); done
fi

mkdir -p "$build/logs"
run_one() {
  local name=$1
  local corpus=$build/corpus/$name artifacts=$build/artifacts/$name/ seeds=tests/fuzz/corpus/$name
  mkdir -p "$corpus" "$artifacts" "$seeds"
  local args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
              -artifact_prefix="$artifacts")
  [ -f "tests/fuzz/$name.dict" ] && args+=(-dict="tests/fuzz/$name.dict")
  "$build/fuzz/fuzz_$name" "${args[@]}" "$corpus" "$seeds" > "$build/logs/$name.log" 2>&1
}

# Runs the targets, `jobs` at a time; each one's status lands in logs/<name>.rc.
pids=()
for name in "${names[@]}"; do
  ( set +e; run_one "$name"; echo $? > "$build/logs/$name.rc" ) &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
wait

failed=0
for name in "${names[@]}"; do
  log=$build/logs/$name.log
  rc=$(cat "$build/logs/$name.rc")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  # A target that fails on its seeds prints no coverage line: grep finds nothing, which must
  # not end the script (set -e, pipefail) before the failure is reported below.
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*' "$log" | tail -1 || true)
  echo "fuzz_$name: ${seconds}s, ${execs:-?} executions, ${cov:-no coverage line}, exit $rc"
  if [ "$rc" != 0 ]; then
    failed=1
    echo "---- fuzz_$name failed; the end of $log:" >&2
    tail -40 "$log" >&2
    echo "---- reproducer(s), replay with $build/fuzz/fuzz_$name FILE:" >&2
    ls -1d "$build/artifacts/$name/"* >&2 2>/dev/null || true
  fi
done
exit $failed
