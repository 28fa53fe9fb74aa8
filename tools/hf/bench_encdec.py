#!/usr/bin/env python3
"""PyTorch's time for what `vkformer bench model --src-len S --tgt-len T` calls
generate(): the encoder over S random source ids, then T + 1 greedy decoder
steps with the KV cache (use_cache), no early stop; median of REPEAT runs after
a warm-up, at each thread count (docs/performance.md has the figures).

    tools/hf/.venv/bin/python tools/hf/bench_encdec.py MODEL_DIR [S T REPEAT]
    tools/hf/.venv/bin/python tools/hf/bench_encdec.py --make-opus-shaped DIR

--make-opus-shaped writes a MarianMTModel with random weights (seed 0) in
opus-mt's shape: d_model 512, 6+6 layers, 8 heads, FFN 2048, swish, vocab 58101.
"""
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch  # noqa: E402
from transformers import AutoModelForSeq2SeqLM  # noqa: E402

if sys.argv[1] == "--make-opus-shaped":
    from transformers import MarianConfig, MarianMTModel
    torch.manual_seed(0)
    cfg = MarianConfig(vocab_size=58101, d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                       decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                       max_position_embeddings=512, activation_function="swish", scale_embedding=True,
                       pad_token_id=58100, decoder_start_token_id=58100, eos_token_id=0)
    MarianMTModel(cfg).eval().save_pretrained(sys.argv[2], safe_serialization=True)
    sys.exit(0)
d = sys.argv[1]
S, T, repeat = (int(x) for x in (sys.argv[2:5] + ["32", "32", "3"][len(sys.argv[2:5]):]))
model = AutoModelForSeq2SeqLM.from_pretrained(d).eval()
cfg = model.config
g = torch.Generator().manual_seed(1)
src = torch.randint(1, cfg.vocab_size - 1, (1, S), generator=g)
for threads in (1, 2):
    torch.set_num_threads(threads)
    times = []
    with torch.no_grad():
        for i in range(repeat + 1):
            t0 = time.perf_counter()
            out = model.generate(src, attention_mask=torch.ones_like(src), do_sample=False, num_beams=1,
                                 max_new_tokens=T + 1, min_new_tokens=T + 1, use_cache=True,
                                 forced_eos_token_id=None, bad_words_ids=None)
            if i:
                times.append((time.perf_counter() - t0) * 1000)
    assert out.shape[1] == T + 2, out.shape
    print(f"pytorch {torch.__version__}, {threads} thread(s): generate, encoder + {T + 1} decoder steps: "
          f"{statistics.median(times):.1f} ms (median of {repeat})")
