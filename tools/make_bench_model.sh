#!/bin/sh
# Writes the random 6+6-layer model the figures in docs/performance.md are measured on
# (d_model 512, 8 heads, d_ff 2048, ReLU, post-LN, vocabularies of 1000, fp32):
#   tools/make_bench_model.sh /tmp/m6
#   build/vkformer bench model --model /tmp/m6 --src-len 64 --tgt-len 64
set -eu
out=${1:?usage: make_bench_model.sh OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
cfg=$(mktemp)
trap 'rm -f "$cfg"' EXIT
cat > "$cfg" <<'JSON'
{"model_type": "transformer", "d_model": 512, "n_heads": 8, "d_ff": 2048,
 "encoder_layers": 6, "decoder_layers": 6, "activation": "relu", "norm_first": false,
 "layer_norm_eps": 1e-5, "src_vocab_size": 1000, "tgt_vocab_size": 1000,
 "max_positions": 256, "positional_encoding": "sinusoidal", "scale_embeddings": true,
 "causal": false, "pad_id": 0, "bos_id": 1, "eos_id": 2}
JSON
/usr/bin/python3 "$here/export_model.py" --config "$cfg" --random-seed 1 --out "$out"
