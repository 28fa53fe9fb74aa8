#!/usr/bin/env bash
# `make demo`: what the engine does today, on this machine's best Vulkan device.
# Every kernel result below is checked against its CPU reference before it is timed.
set -euo pipefail
BUILD=${1:-build}
V="$BUILD/vkformer"

echo "== Vulkan devices"
"$V" devices
echo
echo "== One Transformer layer's kernels at BERT-base width (d=768, 12 heads, 128 tokens)"
"$V" kernel gemm --m 128 --n 2304 --k 768 --repeat 3           # QKV projection
"$V" kernel attention --batch 1 --heads 12 --head-dim 64 --q-len 128 --kv-len 128 --mask padding --repeat 3
"$V" kernel flash_attention --batch 1 --heads 12 --head-dim 64 --q-len 128 --kv-len 128 --mask padding --repeat 3
"$V" kernel gemm --m 128 --n 768 --k 768 --residual --repeat 3  # output projection + residual
"$V" kernel layernorm --m 128 --n 768 --repeat 3
"$V" kernel gemm --m 128 --n 3072 --k 768 --act gelu --repeat 3 # FFN up + GELU
"$V" kernel gemm --m 128 --n 768 --k 3072 --residual --repeat 3 # FFN down + residual
echo
echo "== One decoding step: a token against 768x768 weights, then argmax over a 32000 vocabulary"
"$V" kernel gemm --m 1 --n 768 --k 768 --dtype f16 --repeat 5
"$V" kernel topk --m 1 --n 32000 --topk 1 --repeat 5
echo
echo "== A small PyTorch-made encoder-decoder (tests/models, random weights): greedy, then beam search"
"$V" generate --model tests/models/encdec_postln_relu --src-ids 5,9,13,7,21 --src-ids 8,4 --max-new-tokens 8
"$V" generate --model tests/models/encdec_postln_relu --src-ids 5,9,13,7,21 --src-ids 8,4 --max-new-tokens 8 --beam 3
echo
echo "== A 2-layer decoder-only model continuing two prompts, then its forward logits as .npy"
"$V" generate --model tests/models/decoder_only --src-ids 5,6,7,8 --src-ids 9,10 --max-new-tokens 6 --json
"$V" forward --model tests/models/decoder_only --src-ids 5,6,7,8 --src-ids 9,10 --out "$BUILD/demo_logits.npy"
echo
echo "== A graphics app's frame: the app's own device draws bars from the model's logits (examples/bars)"
"$BUILD/examples/bars" --validation --out "$BUILD/demo_bars.png"
