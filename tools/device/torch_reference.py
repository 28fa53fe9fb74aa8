#!/usr/bin/env python3
"""PyTorch's side of tools/device/gpu-check.sh (docs/gpu-check.md), on the same GPU.

  make DIR    random-weight models of real shapes, written by transformers' own classes with
              save_pretrained into DIR/<name> (fp32 safetensors), and DIR/models.json:
              bert-base (BertModel 768/12 layers/12 heads/3072), minilm-l6 (all-MiniLM-L6-v2's
              shape: 384/6/12/1536), gpt2-small (GPT2LMHeadModel(GPT2Config())), smollm-135m
              (LlamaForCausalLM: 30 layers, 576, 9 heads / 3 KV heads, 1536, vocab 49152,
              rope_theta 1e5, tied). --layers N and --vocab N cap every layer count and
              vocabulary (rehearsals on a CPU driver).
  bench DIR   --out FILE: torch.matmul in fp16 and fp32 at --gemm shapes (MxNxK, y = x·w as
              vkformer's Y = X·Wᵀ: 2·M·N·K FLOP); BertModel forward + mean pooling (what
              sentence-transformers does for all-MiniLM-L6-v2) at --batch × --seq, fp16 and fp32;
              GPT-2 and the Llama `generate` (KV cache, batch 1, greedy, --new-tokens tokens)
              after a prompt of each --contexts length, fp16 and fp32: decode tokens/s =
              new tokens / (time of generate(new + 1) - time of generate(1)). CUDA events, warm-up
              runs, medians of --repeat. Without CUDA (a rehearsal on a CPU machine) it runs on the
              CPU, fp32 only, and says so in the JSON. --budget-s: sections that would start after
              it are skipped, each with a note; the JSON is rewritten after every measurement.
"""
import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
import transformers  # noqa: E402

MODELS = {
    "bert-base": ("BertModel", "BertConfig",
                  dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)),
    "minilm-l6": ("BertModel", "BertConfig",
                  dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536)),
    "gpt2-small": ("GPT2LMHeadModel", "GPT2Config", dict()),
    "smollm-135m": ("LlamaForCausalLM", "LlamaConfig",
                    dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=2048,
                         tie_word_embeddings=True, rope_theta=100000.0, bos_token_id=1, eos_token_id=2)),
}
ENCODERS = ["bert-base", "minilm-l6"]
DECODERS = ["gpt2-small", "smollm-135m"]


def make(a):
    torch.manual_seed(0)
    os.makedirs(a.dir, exist_ok=True)
    manifest = {}
    for name, (cls, cfg_cls, kw) in MODELS.items():
        kw = dict(kw)
        layers_key = "n_layer" if cfg_cls == "GPT2Config" else "num_hidden_layers"
        if a.layers:
            kw[layers_key] = min(a.layers, kw.get(layers_key, 12))
        if a.vocab:
            kw["vocab_size"] = min(a.vocab, kw.get("vocab_size", getattr(transformers, cfg_cls)().vocab_size))
        cfg = getattr(transformers, cfg_cls)(**kw)
        for key in ("bos_token_id", "eos_token_id", "pad_token_id"):  # GPT-2's 50256 under --vocab
            if isinstance(getattr(cfg, key, None), int) and getattr(cfg, key) >= cfg.vocab_size:
                setattr(cfg, key, cfg.vocab_size - 1)
        t0 = time.time()
        model = getattr(transformers, cls)(cfg).eval()
        out = os.path.join(a.dir, name)
        model.save_pretrained(out)
        # transformers 5 writes rope_theta inside "rope_parameters"; vkformer reads the
        # top-level key (transformers 4.x's). The value only moves the rotary frequencies.
        path = os.path.join(out, "config.json")
        with open(path) as f:
            j = json.load(f)
        rp = j.get("rope_parameters")
        if isinstance(rp, dict) and "rope_theta" in rp and "rope_theta" not in j:
            j["rope_theta"] = rp["rope_theta"]
            with open(path, "w") as f:
                json.dump(j, f, indent=2)
        params = sum(p.numel() for p in model.parameters())
        max_pos = j.get("max_position_embeddings", j.get("n_positions"))
        manifest[name] = {"dir": out, "class": cls, "layers": getattr(cfg, layers_key, None),
                          "vocab": cfg.vocab_size,
                          "params": params, "max_positions": max_pos,
                          "kind": "encoder" if name in ENCODERS else "decoder"}
        print(f"{name}: {cls}, {params / 1e6:.1f}M parameters, {time.time() - t0:.1f} s -> {out}", flush=True)
    manifest["_transformers"] = transformers.__version__
    manifest["_torch"] = torch.__version__
    with open(os.path.join(a.dir, "models.json"), "w") as f:
        json.dump(manifest, f, indent=2)


class Bench:
    def __init__(self, a):
        self.a = a
        self.t_start = time.time()
        self.cuda = torch.cuda.is_available()
        self.dev = torch.device("cuda" if self.cuda else "cpu")
        self.dtypes = ["fp16", "fp32"] if self.cuda else ["fp32"]
        self.res = {"torch": torch.__version__, "transformers": transformers.__version__,
                    "device": torch.cuda.get_device_name(0) if self.cuda else "cpu",
                    "cuda": self.cuda, "notes": [], "gemm": [], "encoder": [], "decode": []}
        if self.cuda:
            self.res["allow_tf32"] = torch.backends.cuda.matmul.allow_tf32
        else:
            self.note("torch.cuda is unavailable: a rehearsal on the CPU, fp32 only, tiny iteration counts; "
                      "these figures are no GPU reference")
            torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
        self.save()

    def note(self, s):
        print("note: " + s, flush=True)
        self.res["notes"].append(s)

    def save(self):
        tmp = self.a.out + ".partial"
        with open(tmp, "w") as f:
            json.dump(self.res, f, indent=2)
        os.replace(tmp, self.a.out)

    def left(self):
        return self.a.budget_s - (time.time() - self.t_start)

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def time_ms(self, fn, warmup=None, repeat=None):
        warmup = self.a.warmup if warmup is None else warmup
        repeat = self.a.repeat if repeat is None else repeat
        for _ in range(warmup):
            fn()
        self.sync()
        ts = []
        for _ in range(repeat):
            if self.cuda:
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                fn()
                e1.record()
                e1.synchronize()
                ts.append(e0.elapsed_time(e1))
            else:
                t0 = time.perf_counter()
                fn()
                ts.append((time.perf_counter() - t0) * 1000)
        return statistics.median(ts)

    def dtype(self, name):
        return torch.float16 if name == "fp16" else torch.float32

    def gemm(self):
        for shape in self.a.gemm:
            m, n, k = (int(x) for x in shape.lower().split("x"))
            for dt in self.dtypes:
                if self.left() < 0:
                    self.note(f"gemm {shape} {dt}: skipped, out of the time budget")
                    continue
                g = torch.Generator(device=self.dev).manual_seed(0)
                x = torch.randn(m, k, device=self.dev, generator=g).to(self.dtype(dt))
                w = torch.randn(k, n, device=self.dev, generator=g).to(self.dtype(dt))
                ms = self.time_ms(lambda: torch.matmul(x, w))
                self.res["gemm"].append({"shape": f"{m}x{n}x{k}", "m": m, "n": n, "k": k, "dtype": dt,
                                         "ms": ms, "gflops": 2.0 * m * n * k / (ms * 1e6)})
                del x, w
            self.save()

    def load(self, name, dt):
        info = self.models[name]
        # Load in fp32 and cast: the same on transformers 4 and 5 (whose dtype keyword differs).
        if name in ENCODERS:
            m = transformers.BertModel.from_pretrained(info["dir"])
        else:
            m = transformers.AutoModelForCausalLM.from_pretrained(info["dir"])
        return m.to(device=self.dev, dtype=self.dtype(dt)).eval()

    def encoders(self):
        b, s = self.a.batch, self.a.seq
        for name in ENCODERS:
            for dt in self.dtypes:
                if self.left() < 0:
                    self.note(f"{name} {dt}: skipped, out of the time budget")
                    continue
                model = self.load(name, dt)
                g = torch.Generator(device="cpu").manual_seed(0)
                ids = torch.randint(1000, model.config.vocab_size, (b, s), generator=g).to(self.dev)
                mask = torch.ones(b, s, dtype=torch.long, device=self.dev)

                def fwd():
                    h = model(input_ids=ids, attention_mask=mask).last_hidden_state
                    m = mask.unsqueeze(-1).to(h.dtype)
                    return (h * m).sum(1) / m.sum(1)  # sentence-transformers' mean pooling

                with torch.inference_mode():
                    ms = self.time_ms(fwd)
                self.res["encoder"].append({"model": name, "dtype": dt, "batch": b, "seq": s, "ms": ms,
                                            "sequences_per_s": b / ms * 1000, "tokens_per_s": b * s / ms * 1000,
                                            "attn_implementation": getattr(model.config, "_attn_implementation", None)})
                del model
                if self.cuda:
                    torch.cuda.empty_cache()
                self.save()

    def decoders(self):
        n = self.a.new_tokens
        for name in DECODERS:
            for dt in self.dtypes:
                if self.left() < 0:
                    self.note(f"{name} {dt}: skipped, out of the time budget")
                    continue
                model = self.load(name, dt)
                vocab = model.config.vocab_size
                max_pos = self.models[name]["max_positions"]
                for ctx in self.a.contexts:
                    if self.left() < 0:
                        self.note(f"{name} {dt} context {ctx}: skipped, out of the time budget")
                        continue
                    # The same clipping as gpu-check.sh's for vkformer: the prompt and the
                    # new tokens stay within the model's positions (GPT-2: 1024).
                    p = min(ctx, max_pos - n - 1) if max_pos else ctx
                    g = torch.Generator(device="cpu").manual_seed(ctx)
                    prompt = torch.randint(3, vocab, (1, p), generator=g).to(self.dev)
                    mask = torch.ones_like(prompt)

                    def gen(k):
                        return model.generate(prompt, attention_mask=mask, max_new_tokens=k, min_new_tokens=k,
                                              do_sample=False, num_beams=1, use_cache=True, pad_token_id=0)

                    with torch.inference_mode():
                        got = gen(n + 1).shape[1] - p
                        t1 = self.time_ms(lambda: gen(1), warmup=1, repeat=self.a.repeat_generate)
                        tn = self.time_ms(lambda: gen(n + 1), warmup=0, repeat=self.a.repeat_generate)
                    row = {"model": name, "dtype": dt, "context": ctx, "prompt": p, "new_tokens": n,
                           "generated": got, "prefill_plus_one_ms": t1, "generate_ms": tn,
                           "decode_ms_per_token": (tn - t1) / n, "decode_tokens_per_s": n / (tn - t1) * 1000
                           if tn > t1 else None}
                    self.res["decode"].append(row)
                    self.save()
                del model
                if self.cuda:
                    torch.cuda.empty_cache()

    def run(self):
        with open(os.path.join(self.a.dir, "models.json")) as f:
            self.models = json.load(f)
        for section in (self.gemm, self.encoders, self.decoders):
            try:
                section()
            except Exception as e:  # noqa: BLE001 - one section failing must not lose the others
                self.note(f"{section.__name__}: failed: {type(e).__name__}: {e}")
                self.save()
        self.res["seconds"] = time.time() - self.t_start
        self.save()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["make", "bench"])
    ap.add_argument("dir")
    ap.add_argument("--layers", type=int, default=0, help="make: cap every layer count (0: the real shapes)")
    ap.add_argument("--vocab", type=int, default=0, help="make: cap every vocabulary (0: the real shapes)")
    ap.add_argument("--out", help="bench: the JSON file to write")
    ap.add_argument("--gemm", nargs="*", default=[], help="MxNxK shapes")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--contexts", type=int, nargs="*", default=[128, 1024])
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--repeat-generate", type=int, default=3)
    ap.add_argument("--budget-s", type=float, default=1e9)
    a = ap.parse_args()
    if a.what == "make":
        make(a)
    else:
        if not a.out:
            ap.error("bench needs --out FILE")
        Bench(a).run()


if __name__ == "__main__":
    sys.exit(main())
