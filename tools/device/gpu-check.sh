#!/usr/bin/env bash
# vkformer on the project's GPU machine (NVIDIA H200/H100 through the `run` tool),
# against PyTorch on the same GPU: docs/gpu-check.md. Issue 28, item 6.
#
#   tools/device/gpu-check.sh bundle [BUILD_DIR]   HERE (Debian 12): gpu-bundle/ (git-ignored):
#       a stripped vkformer from BUILD_DIR (default build) and the shared libraries a bare
#       machine may lack (Vulkan loader, validation layer, ICU, OpenBLAS, SentencePiece,
#       libstdc++, glibc), from Debian 12's .debs (apt-get download, dpkg -x), as one tar.xz.
#   tools/device/gpu-check.sh run [--rehearse]     THERE: unpacks the bundle and runs, each
#       step time-boxed, the whole under 8 minutes: devices, every op's `kernel --variant all`
#       against its CPU reference (validation layer on), `bench ops`, `tune --budget-s 90`,
#       the GEMMs of BERT's shapes and 4096³, `bench model` on BERT-base, all-MiniLM-L6-v2,
#       GPT-2 and SmolLM-135M shapes (random weights made there by transformers), and
#       tools/device/torch_reference.py (PyTorch CUDA) at the same shapes. Writes to $OUT
#       (default ./gpu-check-out): summary.md, log.txt, results.json, raw.tar.gz.
#       --rehearse: the same steps at small sizes, on whatever Vulkan device this machine has
#       (lavapipe), its loader untouched.
#
# The `run` tool's call (after `tools/device/gpu-check.sh bundle build` here):
#   carry     ["gpu-bundle"]
#   command   bash tools/device/gpu-check.sh run
#   timeout_s 540
# then give_back, unless you run again at once. Rehearsal here (2-3 min on 2 cores):
#   OUT=/tmp/gpucheck-out PYTHON=tools/hf/.venv/bin/python tools/device/gpu-check.sh run --rehearse
#
# Environment: OUT (output folder), PYTHON (an interpreter with torch and transformers;
# default: the first of python3 and tools/hf/.venv/bin/python that imports both),
# GPU_CHECK_LOADER=system|cxx|ldso (force how vkformer starts; default: the first that works),
# GPU_CHECK_DEADLINE_S (the run's time box, default 465), GPU_CHECK_TUNE_S (tune's budget, 90),
# A shorter run for one piece of work: GPU_CHECK_OPS (the ops whose kernels are checked, default
# all), GPU_CHECK_DTYPES (their dtypes, default f32 f16 and the block formats), GPU_CHECK_MODELS
# (default bert-base minilm-l6 gpt2-small smollm-135m), GPU_CHECK_SKIP (steps left out: bench-ops,
# tune), GPU_CHECK_CONTEXTS (decode contexts, default 128 1024), GPU_CHECK_KERNEL_RESERVE_S (the
# seconds the kernel checks leave before the deadline, default 280).
# GPU_CHECK_KEEP=1 (keep the work folder, /tmp/gpu-check.*: the models, the tuning database, raw/).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUNDLE_DIR=$ROOT/gpu-bundle
BUNDLE_TAR=$BUNDLE_DIR/vkformer-bundle.tar.xz
NVIDIA_ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
# What libGLX_nvidia.so.0 (NVIDIA's Vulkan ICD) may need beyond glibc, and their packages.
# Headless, the ICD may have to be NVIDIA's EGL library instead (libEGL_nvidia.so.0), which
# goes through libglvnd's libEGL; vulkaninfo (vulkan-tools) needs libwayland-client and libffi.
X11_SONAMES="libGLdispatch.so.0 libEGL.so.1 libGLX.so.0 libOpenGL.so.0 libX11.so.6 libXext.so.6 libxcb.so.1 libXau.so.6 libXdmcp.so.6 libbsd.so.0 libmd.so.0 libwayland-client.so.0 libffi.so.8"
X11_PKGS="libglvnd0 libegl1 libglx0 libopengl0 libx11-6 libxext6 libxcb1 libxau6 libxdmcp6 libbsd0 libmd0 libwayland-client0 libffi8 vulkan-tools"

die() { echo "gpu-check: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------
# bundle (here)

# The Debian package that owns a library path (usr-merged systems list /lib or /usr/lib).
owner_of() {
  local p=$1 q
  for q in "$p" "$(readlink -f "$p")" "/usr$p" "/usr$(readlink -f "$p")" "${p#/usr}"; do
    dpkg -S "$q" 2>/dev/null | head -n1 | cut -d: -f1 && return 0
  done
  return 1
}

bundle() {
  local build=${1:-build} bin stage lists o pkgs p sonames so path tier ver
  if ! command -v apt-get >/dev/null || ! command -v dpkg >/dev/null; then die "bundle needs apt-get and dpkg (Debian 12)"; fi
  [[ $build = /* ]] || build=$ROOT/$build
  bin=$(find "$build" -maxdepth 3 -name vkformer -type f -perm -u+x 2>/dev/null | head -n1)
  [[ -n $bin ]] || die "no vkformer binary under $build (build it first: make build)"
  [[ $(uname -m) = x86_64 ]] || die "the GPU machine is x86-64; this machine is $(uname -m)"
  stage=$(mktemp -d /tmp/gpu-bundle.XXXXXX)
  # shellcheck disable=SC2064  # $stage now: it is local
  trap "rm -rf '$stage'" EXIT
  mkdir -p "$stage"/vkf/{bin,lib,lib-cxx,lib-glibc,lib-if-missing,layers} "$stage/debs" "$stage/root"
  cp "$bin" "$stage/vkf/bin/vkformer" || die "cannot copy $bin"
  strip "$stage/vkf/bin/vkformer" || die "cannot strip $bin"
  echo "gpu-check: vkformer from $bin ($(du -h "$stage/vkf/bin/vkformer" | cut -f1) stripped)"

  # What the binary loads, by tier: glibc (only through the bundled ld.so), libstdc++ and
  # libgcc (when the system's are missing or older), everything else (always).
  pkgs="libvulkan1 vulkan-validationlayers libc6 libstdc++6 libgcc-s1 $X11_PKGS"
  sonames=$(ldd "$stage/vkf/bin/vkformer" | awk '/=>/ {print $1 " " $3}')
  [[ -n $sonames ]] || die "ldd found no libraries in $bin"
  while read -r so path; do
    [[ $so = linux-vdso* ]] && continue
    p=$(owner_of "$path") || die "no Debian package owns $path ($so)"
    pkgs="$pkgs ${p%%:*}"
  done <<<"$sonames"
  pkgs=$(tr ' ' '\n' <<<"$pkgs" | sort -u | tr '\n' ' ')
  echo "gpu-check: packages: $pkgs"

  # A private package list (amd64 whatever this machine is), never the system's state.
  lists=/tmp/gpu-bundle-apt-lists
  mkdir -p "$lists/partial"
  o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists" -oAPT::Sandbox::User=root -qq)
  if [[ -z $(find "$lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null) ]]; then
    apt-get "${o[@]}" update || die "apt-get update (private lists in $lists) failed"
  fi
  for p in $pkgs; do
    # The installed version, so the libraries are the ones the binary was linked and tested
    # with; the archive's current one where that is gone.
    ver=$(dpkg-query -W -f='${Version}' "$p:amd64" 2>/dev/null || dpkg-query -W -f='${Version}' "$p" 2>/dev/null)
    (cd "$stage/debs" && { [[ -n $ver ]] && apt-get "${o[@]}" download "$p=$ver" 2>/dev/null || apt-get "${o[@]}" download "$p"; }) ||
      die "apt-get download $p failed"
  done
  for p in "$stage"/debs/*.deb; do
    dpkg -x "$p" "$stage/root/$(basename "$p" .deb)" || die "dpkg -x $p failed"
  done

  # One file per soname (symlinks resolved) into its tier.
  copy_so() {  # soname tier
    local f
    f=$(find "$stage/root" -name "$1" \( -type f -o -type l \) 2>/dev/null | head -n1)
    [[ -n $f ]] || die "$1 is in none of the downloaded packages"
    cp -L "$f" "$stage/vkf/$2/$1"
  }
  while read -r so path; do
    [[ $so = linux-vdso* ]] && continue
    case $so in
      libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) tier=lib-glibc ;;
      libstdc++.so.*|libgcc_s.so.*) tier=lib-cxx ;;
      *) tier=lib ;;
    esac
    copy_so "$so" "$tier"
  done <<<"$sonames"
  copy_so libvulkan.so.1 lib
  # vulkaninfo: what the driver reports (extensions, features, limits), for the log.
  cp "$(find "$stage"/root/vulkan-tools_* -name vulkaninfo -type f | head -n1)" "$stage/vkf/bin/" ||
    die "vulkan-tools has no vulkaninfo"
  copy_so libstdc++.so.6 lib-cxx
  copy_so libgcc_s.so.1 lib-cxx
  # NVIDIA's Vulkan ICD is libGLX_nvidia.so.0, which needs libglvnd's libGLdispatch and, in
  # some builds, libX11 and libXext: used there only where the system has none.
  for so in $X11_SONAMES; do copy_so "$so" lib-if-missing; done
  # glibc whole (every library of libc6, not its gconv modules), with its loader.
  find "$stage"/root/libc6_*/lib/x86_64-linux-gnu -maxdepth 1 -name '*.so*' \( -type f -o -type l \) \
    -exec cp -L {} "$stage/vkf/lib-glibc/" \;
  [[ -f $stage/vkf/lib-glibc/ld-linux-x86-64.so.2 ]] || die "libc6 has no ld-linux-x86-64.so.2"
  # The validation layer: its library beside the others, its manifest in layers/.
  copy_so libVkLayer_khronos_validation.so lib
  cp "$(find "$stage/root" -name VkLayer_khronos_validation.json | head -n1)" "$stage/vkf/layers/" ||
    die "vulkan-validationlayers has no VkLayer_khronos_validation.json"
  strip --strip-unneeded "$stage"/vkf/lib/*.so* 2>/dev/null || true

  {
    echo "$("$bin" --version 2>/dev/null | head -n1) from $bin"
    echo "bundled by tools/device/gpu-check.sh of $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
    # shellcheck source=/dev/null
    echo "made $(date -u '+%Y-%m-%d %H:%M UTC') on $(. /etc/os-release && echo "$PRETTY_NAME")"
    echo "packages:"; for p in "$stage"/debs/*.deb; do echo "  $(basename "$p")"; done
    echo "files:"; (cd "$stage/vkf" && find . -type f -printf '  %p %s\n' | sort)
  } >"$stage/vkf/MANIFEST.txt"

  mkdir -p "$BUNDLE_DIR"
  rm -f "$BUNDLE_DIR"/vkformer-bundle.tar.* "$BUNDLE_DIR/MANIFEST.txt"
  tar -C "$stage" -cf - vkf | xz -T0 -6 >"$BUNDLE_TAR.partial" || die "cannot write $BUNDLE_TAR.partial"
  mv "$BUNDLE_TAR.partial" "$BUNDLE_TAR" || die "cannot write $BUNDLE_TAR"
  cp "$stage/vkf/MANIFEST.txt" "$BUNDLE_DIR/"
  local bytes; bytes=$(stat -c %s "$BUNDLE_TAR")
  echo "gpu-check: $BUNDLE_TAR: $(awk -v b="$bytes" 'BEGIN {printf "%.1f MiB", b / 1048576}') (unpacked $(du -sh "$stage/vkf" | cut -f1)); contents in $BUNDLE_DIR/MANIFEST.txt"
  ((bytes < 40 * 1048576)) || die "the bundle is over 40 MiB"
  echo "gpu-check: git-ignored (/gpu-bundle/); the run tool carries it with carry [\"gpu-bundle\"]"
}

# ---------------------------------------------------------------------------------------
# run (there; --rehearse here)

log() { echo "[$(date -u +%H:%M:%S) +$(($(date +%s) - T0))s] $*" | tee -a "$LOG" >&2; }

# step NAME LIMIT CMD...: runs CMD under `timeout` (at most LIMIT s, and never past the
# deadline), stdout and stderr into raw/NAME.{out,err}; one row in raw/steps.tsv.
step() {
  local name=$1 limit=$2 left t s0 rc status
  shift 2
  left=$((DEADLINE - $(date +%s) - RESERVE_S))
  if ((left < 5)); then
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" - 0 0 "skipped: out of time" >>"$RAW/steps.tsv"
    log "$name: skipped, out of time"
    return 125
  fi
  t=$((limit < left ? limit : left))
  log "$name (limit ${t}s): $*"
  s0=$(date +%s)
  timeout -k 5 "$t" "$@" >"$RAW/$name.out" 2>"$RAW/$name.err"
  rc=$?
  case $rc in
    0) status=ok ;;
    124|137) status="timed out after ${t}s" ;;
    *) status="failed (exit $rc)" ;;
  esac
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$rc" "$(($(date +%s) - s0))" "$t" "$status" >>"$RAW/steps.tsv"
  log "$name: $status in $(($(date +%s) - s0))s"
  if [[ $rc != 0 ]]; then
    { echo "--- $name: last lines of stdout"; tail -n 15 "$RAW/$name.out"
      echo "--- $name: last lines of stderr"; tail -n 25 "$RAW/$name.err"; } >>"$LOG"
  fi
  return "$rc"
}

# A phase's end, as an absolute time: SECONDS from now, but leaving RESERVE seconds before
# the run's deadline for the steps after it.
phase_end() {
  local e=$(($(date +%s) + $1)) last=$((DEADLINE - ${2:-0}))
  echo $((e < last ? e : last))
}

unpack() {
  [[ -f $BUNDLE_TAR ]] || { log "no $BUNDLE_TAR: run 'tools/device/gpu-check.sh bundle' first and carry [\"gpu-bundle\"]"; return 1; }
  if ! tar -C "$WORK" -xJf "$BUNDLE_TAR" 2>>"$LOG"; then
    log "tar -xJf failed (no xz?); unpacking with Python's lzma"
    "${PYTHON_ANY:-python3}" -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' \
      "$BUNDLE_TAR" "$WORK" || return 1
  fi
  [[ -x $WORK/vkf/bin/vkformer ]]
}

# The launcher $WORK/vkformer: the bundle's libraries first, then, as needed, its libstdc++
# (mode cxx) or its whole glibc through its own ld.so (mode ldso).
write_launcher() {
  local mode=$1 B=$WORK/vkf ldp
  ldp=$B/lib
  [[ $mode != system ]] && ldp=$ldp:$B/lib-cxx
  [[ $mode = ldso ]] && ldp=$ldp:$B/lib-glibc
  [[ -n $(ls -A "$B/lib-missing" 2>/dev/null) ]] && ldp=$ldp:$B/lib-missing
  local d
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do [[ -d $d ]] && ldp=$ldp:$d; done
  [[ -n ${LD_LIBRARY_PATH:-} ]] && ldp=$ldp:$LD_LIBRARY_PATH
  if [[ $mode = ldso ]]; then
    printf '#!%s\nexec %q --library-path %q %q "$@"\n' "$BASH" "$B/lib-glibc/ld-linux-x86-64.so.2" "$ldp" "$B/bin/vkformer"
  else
    printf '#!%s\nLD_LIBRARY_PATH=%q exec %q "$@"\n' "$BASH" "$ldp" "$B/bin/vkformer"
  fi >"$WORK/vkformer"
  chmod +x "$WORK/vkformer"
}

# pick_icd V: exports VK_DRIVER_FILES for the first NVIDIA manifest with which `V devices`
# finds a device: the driver's own, then one naming libEGL_nvidia.so.0 (headless machines,
# where libGLX_nvidia.so.0's vk_icdGetInstanceProcAddr gives no vkCreateInstance).
pick_icd() {
  local V=$1 egl icd api n=0
  local candidates=()
  [[ -f $NVIDIA_ICD ]] && candidates+=("$NVIDIA_ICD")
  egl=$(ls /usr/local/nvidia/lib64/libEGL_nvidia.so.0 /usr/local/nvidia/lib/libEGL_nvidia.so.0 2>/dev/null | head -n1)
  if [[ -n $egl ]]; then
    api=$(sed -n 's/.*"api_version" *: *"\([^"]*\)".*/\1/p' "$NVIDIA_ICD" 2>/dev/null | head -n1)
    printf '{"file_format_version": "1.0.1", "ICD": {"library_path": "%s", "api_version": "%s"}}\n' \
      "$egl" "${api:-1.3.0}" >"$WORK/nvidia_icd_egl.json"
    candidates+=("$WORK/nvidia_icd_egl.json")
  fi
  local vendor=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  [[ -f $vendor ]] && export __EGL_VENDOR_LIBRARY_FILENAMES=$vendor
  for icd in "${candidates[@]}"; do
    n=$((n + 1))
    export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd
    if timeout 30 "$V" devices >"$RAW/icd-$n.txt" 2>&1; then
      log "ICD: $icd ($(tr -d '\n ' <"$icd" | head -c 200)): $(head -n 3 "$RAW/icd-$n.txt" | tr '\n' ' ')"
      return 0
    fi
    log "ICD $icd: no device ($(tail -n 1 "$RAW/icd-$n.txt"))"
  done
  [[ ${#candidates[@]} -gt 0 ]] && export VK_DRIVER_FILES=${candidates[0]} VK_ICD_FILENAMES=${candidates[0]}
  log "no NVIDIA manifest gave a device; leaving VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset}"
  return 1
}

# The first interpreter that imports torch and transformers: "PATH versions..." on stdout.
pick_python() {
  local p v
  for p in ${PYTHON:-} python3 "$ROOT/tools/hf/.venv/bin/python"; do
    command -v "$p" >/dev/null 2>&1 || continue
    if v=$("$p" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__, "cuda", torch.cuda.is_available())' 2>/dev/null); then
      echo "$p $v"
      return 0
    fi
  done
  return 1
}

run() {
  local rehearse=0 a
  for a in "$@"; do
    case $a in
      --rehearse) rehearse=1 ;;
      *) die "run: unknown option $a (only --rehearse)" ;;
    esac
  done
  OUT=${OUT:-$ROOT/gpu-check-out}
  mkdir -p "$OUT" || die "cannot make $OUT"
  OUT=$(cd "$OUT" && pwd)
  # The work folder (the unpacked bundle, the models) in /tmp, or in the checkout where /tmp
  # is mounted noexec (no program could start from it).
  local tmp=/tmp
  if awk '$2 == "/tmp" {print $4}' /proc/mounts 2>/dev/null | grep -q noexec; then
    tmp=$ROOT/.gpu-check-work
    mkdir -p "$tmp"
  fi
  WORK=$(mktemp -d "$tmp/gpu-check.XXXXXX") || die "cannot make a work folder in $tmp"
  RAW=$WORK/raw
  mkdir -p "$RAW" "$WORK/cache"
  LOG=$OUT/log.txt
  : >"$LOG"
  T0=$(date +%s)

  # ---- sizes: the only difference between the GPU run and the rehearsal
  local kernel_shape=() kernel_dtypes quant_ops quant_dtypes gemm_shapes big_gemm
  local enc_batch enc_seq contexts new_tokens layers vocab tune_budget
  local t_devices t_kernel_phase t_kernel t_bench_ops t_tune t_gemm t_make t_model_phase t_model t_torch
  local r_kernels r_models
  if ((rehearse)); then
    kernel_shape=(--m 8 --n 64 --k 64 --heads 2 --head-dim 16 --q-len 8 --kv-len 8)
    kernel_dtypes="f32 f16"; quant_ops="gemm"; quant_dtypes="q8_0"
    gemm_shapes="32x768x768 32x3072x768 32x768x3072 256x256x256"; big_gemm=256x256x256
    enc_batch=2; enc_seq=16; contexts="16 64"; new_tokens=4; layers=2; vocab=8192; tune_budget=10
    DEADLINE=$((T0 + 900)); RESERVE_S=30
    t_devices=60; t_kernel_phase=300; t_kernel=60; t_bench_ops=120; t_tune=40; t_gemm=90
    t_make=240; t_model_phase=240; t_model=90; t_torch=150
    r_kernels=300; r_models=90
  else
    kernel_dtypes="f32 f16"; quant_ops="gemm embedding"; quant_dtypes="q8_0 q4_0 q4_1 q4_k q6_k"
    # bench ops' standard GEMM shapes, BERT-base's at batch 32 × 128 tokens, and 4096³.
    gemm_shapes="128x3072x768 512x512x512 128x768x768 1x3072x768 4096x768x768 4096x3072x768 4096x768x3072 4096x4096x4096"
    big_gemm=4096x4096x4096
    enc_batch=32; enc_seq=128; contexts="128 1024"; new_tokens=32; layers=0; vocab=0
    tune_budget=${GPU_CHECK_TUNE_S:-90}
    DEADLINE=$((T0 + ${GPU_CHECK_DEADLINE_S:-465})); RESERVE_S=12
    t_devices=30; t_kernel_phase=100; t_kernel=30; t_bench_ops=70; t_tune=110; t_gemm=45
    t_make=150; t_model_phase=115; t_model=45; t_torch=100
    # Kept for what comes after: the kernel phase ends 280 s before the deadline (bench ops,
    # tune, the GEMMs, the models, torch), the model phase 80 s before it (torch).
    r_kernels=${GPU_CHECK_KERNEL_RESERVE_S:-280}; r_models=80
  fi

  if [[ -n ${GPU_CHECK_DTYPES:-} ]]; then
    kernel_dtypes=$(for dt in $kernel_dtypes; do [[ " $GPU_CHECK_DTYPES " = *" $dt "* ]] && echo "$dt"; done | tr '\n' ' ')
    quant_dtypes=$(for dt in $quant_dtypes; do [[ " $GPU_CHECK_DTYPES " = *" $dt "* ]] && echo "$dt"; done | tr '\n' ' ')
  fi
  contexts=${GPU_CHECK_CONTEXTS-$contexts}
  local models_run=${GPU_CHECK_MODELS:-bert-base minilm-l6 gpt2-small smollm-135m}
  local skip=" ${GPU_CHECK_SKIP:-} "
  printf 'rehearse=%s\nbig_gemm=%s\nenc_batch=%s\nenc_seq=%s\ncontexts=%s\nnew_tokens=%s\nlayers=%s\nvocab=%s\ntune_budget=%s\nkernel_dtypes=%s\n' \
    "$rehearse" "$big_gemm" "$enc_batch" "$enc_seq" "$contexts" "$new_tokens" "$layers" "$vocab" "$tune_budget" \
    "$kernel_dtypes $quant_dtypes" >"$RAW/sizes.txt"
  log "gpu-check run$( ((rehearse)) && echo ' --rehearse') in $ROOT; work $WORK; out $OUT"
  # shellcheck source=/dev/null
  log "machine: $(uname -srm); $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"); $(getconf GNU_LIBC_VERSION 2>/dev/null)"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$LOG" 2>&1
  PYTHON_ANY=$(command -v python3 || true)
  unpack || { log "the bundle could not be unpacked"; finish 1; return 1; }
  cat "$WORK/vkf/MANIFEST.txt" >"$RAW/bundle-manifest.txt" 2>/dev/null
  log "bundle: $(head -n 2 "$WORK/vkf/MANIFEST.txt" | tr '\n' ' ')"

  # ---- Vulkan: the NVIDIA ICD there (no loader installed: the bundle's), the system's here.
  # Chosen below, once vkformer starts: the driver's own manifest (libGLX_nvidia.so.0), or,
  # where that library cannot make an instance without a display, one naming its EGL twin.
  if ((!rehearse)); then
    log "NVIDIA's files: $(ls /usr/local/nvidia/lib64 2>/dev/null | grep -iE 'egl|glx|vulkan' | tr '\n' ' '); $(find /usr/local/nvidia/share -name '*.json' 2>/dev/null | tr '\n' ' ')"
  fi
  export VKFORMER_CACHE_DIR=$WORK/cache __GL_SHADER_DISK_CACHE_PATH=$WORK/cache
  export VK_LAYER_PATH=$WORK/vkf/layers

  # The linker's cache, read once: `ldconfig -p | grep -q` fails under pipefail when grep
  # stops reading early (ldconfig gets SIGPIPE).
  local ldcache sysvk
  ldcache=$(ldconfig -p 2>/dev/null)
  sysvk=$(awk '/libvulkan\.so\.1 / {print $NF; exit}' <<<"$ldcache")
  log "system Vulkan loader: ${sysvk:-none} (the bundle's is used)"
  # lib-if-missing's libraries, linked into lib-missing where the system has none of that name.
  mkdir -p "$WORK/vkf/lib-missing"
  local f missing=
  for f in "$WORK"/vkf/lib-if-missing/*; do
    [[ -e $f ]] || continue
    if ! grep -q "^[[:space:]]*${f##*/} " <<<"$ldcache"; then
      ln -s "$f" "$WORK/vkf/lib-missing/" && missing="$missing ${f##*/}"
    fi
  done
  log "libraries the system lacks, taken from the bundle:${missing:- none}"
  local mode found=0
  for mode in ${GPU_CHECK_LOADER:-system cxx ldso}; do
    write_launcher "$mode"
    if "$WORK/vkformer" --version >"$RAW/start-$mode.txt" 2>&1; then
      found=1
      log "vkformer starts (loader mode $mode): $(head -n1 "$RAW/start-$mode.txt")"
      break
    fi
    log "vkformer does not start in loader mode $mode: $(tail -n 2 "$RAW/start-$mode.txt" | tr '\n' ' ')"
  done
  if ((!found)); then
    log "the bundled vkformer cannot start at all"
    finish 1
    return 1
  fi
  echo "$mode" >"$RAW/loader-mode.txt"
  local V=$WORK/vkformer
  ((rehearse)) || pick_icd "$V"
  local vi_ldp
  vi_ldp=$(sed -n 's/^LD_LIBRARY_PATH=\([^ ]*\) exec.*/\1/p' "$V")
  [[ -n $vi_ldp ]] || vi_ldp=$WORK/vkf/lib:$WORK/vkf/lib-missing:$WORK/vkf/lib-cxx
  LD_LIBRARY_PATH=$vi_ldp timeout 30 "$WORK/vkf/bin/vulkaninfo" >"$RAW/vulkaninfo.txt" 2>&1 ||
    log "vulkaninfo failed: $(tail -n 3 "$RAW/vulkaninfo.txt" | tr '\n' ' ')"
  cp "$RAW/vulkaninfo.txt" "$OUT/vulkaninfo.txt" 2>/dev/null

  # The models (CPU only, in the background while the kernels run).
  local py make_pid=
  if py=$(pick_python); then
    log "python: $py"
    py=${py%% *}
    CUDA_VISIBLE_DEVICES="" step make-models "$t_make" "$py" "$ROOT/tools/device/torch_reference.py" make \
      "$WORK/models" --layers "$layers" --vocab "$vocab" &
    make_pid=$!
  else
    log "no python with torch and transformers (set PYTHON=...): no models, no PyTorch reference"
    printf 'python\t-\t0\t0\tskipped: no python with torch and transformers\n' >>"$RAW/steps.tsv"
  fi

  # ---- 1. devices, with the validation layer when it loads
  local validation=0
  if VKFORMER_VALIDATION=1 timeout 30 "$V" devices >/dev/null 2>"$RAW/validation-probe.err" &&
    grep -q 'validation on' "$RAW/validation-probe.err"; then
    validation=1
    log "validation layer: on for devices and the kernel checks"
  else
    log "validation layer: not on (or no device); kernel checks run without it ($(tail -n 2 "$RAW/validation-probe.err" | tr '\n' ' '))"
  fi
  echo "$validation" >"$RAW/validation.txt"
  if ! VKFORMER_VALIDATION=$validation step devices "$t_devices" "$V" devices; then
    # No device: what the loader saw, and what the ICD's library lacks, for the next try.
    log "no Vulkan device: the loader's messages and the ICD library's ldd are in the log"
    VK_LOADER_DEBUG=error,warn,driver timeout 30 "$V" devices >"$RAW/loader-debug.txt" 2>&1
    head -n 80 "$RAW/loader-debug.txt" >>"$LOG"
    local icdlib
    icdlib=$(sed -n 's/.*"library_path" *: *"\([^"]*\)".*/\1/p' "${VK_DRIVER_FILES:-/dev/null}" 2>/dev/null | head -n1)
    if [[ -n $icdlib ]]; then
      [[ $icdlib = /* ]] || icdlib=$(awk -v l="$icdlib" '$1 == l {print $NF; exit}' <<<"$ldcache")
      [[ -n $icdlib ]] && LD_LIBRARY_PATH=$(sed -n 's/^LD_LIBRARY_PATH=\([^ ]*\) exec.*/\1/p' "$V") ldd "$icdlib" >>"$LOG" 2>&1
    fi
  fi
  step devices-json "$t_devices" "$V" -q devices --json

  # ---- 2. every op's variants against its CPU reference
  local ops op dt end
  ops=$("$V" kernel --help | sed -n 's/.*op TEXT:{\([^}]*\)}.*/\1/p' | tr ',' '\n' | grep -v '^peak_')
  [[ -n ${GPU_CHECK_OPS:-} ]] && ops=$GPU_CHECK_OPS
  end=$(phase_end "$t_kernel_phase" "$r_kernels")
  for dt in $kernel_dtypes $quant_dtypes; do
    for op in $ops; do
      case " $kernel_dtypes " in *" $dt "*) ;; *) [[ " $quant_ops " = *" $op "* ]] || continue ;; esac
      if (($(date +%s) >= end)); then
        printf '%s\t-\t0\t0\tskipped: kernel phase out of time\n' "kernel-$op-$dt" >>"$RAW/steps.tsv"
        continue
      fi
      VKFORMER_VALIDATION=$validation step "kernel-$op-$dt" "$t_kernel" "$V" -q kernel "$op" --variant all \
        --dtype "$dt" --warmup 1 --repeat 3 "${kernel_shape[@]}"
    done
  done

  # gemm's edges (M, N, K off every tile, an activation and a residual) and a BERT-sized
  # product, with fp16 W: the tensor-core variant where the device has one.
  if [[ $ops = *gemm* ]] && [[ " $kernel_dtypes " = *" f16 "* ]]; then
    VKFORMER_VALIDATION=$validation step kernel-gemm.edges-f16 "$t_kernel" "$V" -q kernel gemm --variant all \
      --dtype f16 --m 77 --n 200 --k 72 --act gelu --residual --warmup 1 --repeat 3
    ((rehearse)) || VKFORMER_VALIDATION=$validation step kernel-gemm.1024x3072x768-f16 "$t_kernel" "$V" -q kernel gemm \
      --variant all --dtype f16 --m 1024 --n 3072 --k 768 --warmup 1 --repeat 3
  fi
  # flash attention's edges: 77 query rows and 200 keys off every tile, head dim 72 (padded
  # to 80 on the tensor cores), padding and causal masks; coopmat where the device has it.
  if [[ $ops = *flash_attention* ]] && [[ " $kernel_dtypes " = *" f16 "* ]]; then
    VKFORMER_VALIDATION=$validation step kernel-flash_attention.edges-f16 "$t_kernel" "$V" -q kernel flash_attention \
      --variant all --dtype f16 --batch 2 --heads 3 --head-dim 72 --q-len 77 --kv-len 200 --mask both \
      --warmup 1 --repeat 3
  fi

  # ---- 3. every kernel at its standard shapes (checked), against the roofline
  [[ $skip = *" bench-ops "* ]] || step bench-ops "$t_bench_ops" "$V" -q bench ops --json "$RAW/bench-ops.json"

  # ---- 4. tuning, into $WORK/cache/tuning.json, which everything after reads
  [[ $skip = *" tune "* ]] || step tune "$t_tune" "$V" -q tune --budget-s "$tune_budget"

  # ---- 5. the GEMMs PyTorch is compared on, tuned (no CPU check: 4096³ in double takes minutes)
  local shapes=() s
  for s in $gemm_shapes; do
    IFS=x read -r m n k <<<"$s"
    shapes+=(--shape "m=$m,n=$n,k=$k,dtype=f16" --shape "m=$m,n=$n,k=$k,dtype=f32")
  done
  # One token's product with a 4096 × 4096 weight in each format: decode reads the weights
  # once, so the block formats' fewer bytes are the speed where it is bound by memory (issue 27).
  local gemv=${gemm_shapes%% *}
  ((rehearse)) || gemv=1x4096x4096
  IFS=x read -r m n k <<<"$gemv"
  for s in $quant_dtypes; do shapes+=(--shape "m=1,n=$n,k=$k,dtype=$s"); done
  ((rehearse)) || shapes+=(--shape "m=1,n=$n,k=$k,dtype=f16" --shape "m=1,n=$n,k=$k,dtype=f32")
  step bench-gemm "$t_gemm" "$V" -q bench ops --op gemm "${shapes[@]}" --no-check --warmup 2 --repeat 5 \
    --json "$RAW/bench-gemm.json"

  # ---- 5b. tensor cores against the kernel the engine runs without them (tuned, unchecked),
  # where the issue's goals compare them: gemm at 4096³ (coopmat against tiled), and flash
  # attention's prefill, 12 heads × 64, 1024 causal rows, fp16 K/V (coopmat against online).
  # One variant a step: the others (register blocks for CPUs, gemv) would take long at 4096³.
  local vg=4096 vq=1024 variant
  ((rehearse)) && { vg=256; vq=64; }
  for variant in tiled coopmat; do
    step "bench-variants-gemm-$variant" "$t_gemm" "$V" -q bench ops --op gemm --variant "$variant" --no-check \
      --warmup 2 --repeat 5 --shape "m=$vg,n=$vg,k=$vg,dtype=f16" --shape "m=$vg,n=$vg,k=$vg,dtype=f32" \
      --json "$RAW/bench-variants-gemm-$variant.json"
  done
  for variant in online coopmat; do
    step "bench-variants-flash-$variant" "$t_gemm" "$V" -q bench ops --op flash_attention --variant "$variant" \
      --no-check --warmup 2 --repeat 5 --shape "batch=1,heads=12,head_dim=64,q_len=$vq,kv_len=$vq,mask=causal,dtype=f16" \
      --json "$RAW/bench-variants-flash-$variant.json"
  done

  # ---- 6. models
  if [[ -n $make_pid ]]; then
    wait "$make_pid"
    local models=$WORK/models/models.json prec name ctx src
    if [[ -f $models ]]; then
      end=$(phase_end "$t_model_phase" "$r_models")
      for prec in fp16 fp32; do
        for name in $models_run; do
          [[ -d $WORK/models/$name ]] || continue
          if [[ $name = bert-base || $name = minilm-l6 ]]; then
            if (($(date +%s) >= end)); then
              printf '%s\t-\t0\t0\tskipped: model phase out of time\n' "model-$name-$prec" >>"$RAW/steps.tsv"
              continue
            fi
            step "model-$name-$prec" "$t_model" "$V" -q bench model --model "$WORK/models/$name" \
              --precision "$prec" --batch "$enc_batch" --src-len "$enc_seq" --json "$RAW/model-$name-$prec.json"
            continue
          fi
          for ctx in $contexts; do
            # The prompt and torch's new tokens stay within the positions (GPT-2: 1024).
            src=$("$PYTHON_ANY" -c 'import json, sys; m = json.load(open(sys.argv[1]))[sys.argv[2]]["max_positions"]; c, n = int(sys.argv[3]), int(sys.argv[4]); print(min(c, m - n - 1) if m else c)' \
              "$models" "$name" "$ctx" "$new_tokens")
            if (($(date +%s) >= end)); then
              printf '%s\t-\t0\t0\tskipped: model phase out of time\n' "model-$name-$prec-$ctx" >>"$RAW/steps.tsv"
              continue
            fi
            step "model-$name-$prec-$ctx" "$t_model" "$V" -q bench model --model "$WORK/models/$name" \
              --precision "$prec" --batch 1 --src-len "$src" --tgt-len 0 --json "$RAW/model-$name-$prec-$ctx.json"
          done
        done
      done

      # ---- 7. PyTorch on the same GPU, the same shapes and models
      local gemm_list=() tw=3 tr=10 trg=3
      ((rehearse)) && { tw=1; tr=2; trg=1; }
      read -r -a gemm_list <<<"$gemm_shapes"
      # torch stops starting measurements 25 s before its limit, so its JSON is complete.
      local tl=$((DEADLINE - $(date +%s) - RESERVE_S))
      ((tl > t_torch)) && tl=$t_torch
      # shellcheck disable=SC2086  # $contexts: a list of numbers
      step torch "$tl" "$py" "$ROOT/tools/device/torch_reference.py" bench "$WORK/models" \
        --out "$RAW/torch.json" --gemm "${gemm_list[@]}" --batch "$enc_batch" --seq "$enc_seq" \
        --contexts $contexts --new-tokens "$new_tokens" --warmup "$tw" --repeat "$tr" --repeat-generate "$trg" \
        --budget-s $((tl - 25))
    else
      log "no models (make-models failed): no bench model, no PyTorch reference"
    fi
    cp "$WORK/models/models.json" "$RAW/models.json" 2>/dev/null
  fi

  finish 0
}

# summary.md and results.json from raw/, raw/ as one tarball; at most 4 files in $OUT.
finish() {
  local rc=$1
  log "writing the summary"
  if [[ -n ${PYTHON_ANY:-} ]]; then
    "$PYTHON_ANY" "$ROOT/tools/device/gpu_check_summary.py" "$RAW" "$OUT/summary.md" "$OUT/results.json" 2>>"$LOG" ||
      log "gpu_check_summary.py failed"
  else
    log "no python3: no summary.md (raw.tar.gz has everything)"
  fi
  tar -C "$WORK" -czf "$OUT/raw.tar.gz" raw 2>>"$LOG" || log "cannot write raw.tar.gz"
  log "done in $(($(date +%s) - T0))s: $(find "$OUT" -maxdepth 1 -type f -printf '%f ')"
  [[ -n ${GPU_CHECK_KEEP:-} ]] || rm -rf "$WORK"  # the models: up to 1.6 GB
  return "$rc"
}

case ${1:-} in
  bundle) shift; bundle "$@"; exit $? ;;
  run) shift; run "$@"; exit $? ;;
  *) echo "usage: $0 bundle [BUILD_DIR] | run [--rehearse]   (docs/gpu-check.md)" >&2; exit 2 ;;
esac
