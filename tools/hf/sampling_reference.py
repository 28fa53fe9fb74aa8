"""The Python side of vkformer's sampling (docs/cli.md#sampling), with Hugging Face's own
logits processors (transformers 4.44.2, tools/hf/.venv) in HF's order.

As a module (tests/cli_generate_sampling.py): SplitMix64, draw(), processors(), step().
As a script, in the venv: writes tests/data/sampling_reference.json, each HF processor
alone on hand-made logits, which tests/test_sampling.cpp compares with src/run/sampling.cpp:

    tools/hf/.venv/bin/python tools/hf/sampling_reference.py tests/data/sampling_reference.json
"""
import json
import math
import sys

MASK64 = (1 << 64) - 1


class SplitMix64:
    """splitmix64: state += 0x9E3779B97F4A7C15, mix; uniform() = (next() >> 11) * 2**-53."""

    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def uniform(self):
        return (self.next() >> 11) * 2.0 ** -53


def draw(scores, u):
    """Inverse CDF over ids in order: w_i = exp(s_i - max s); the first id whose running
    sum of w exceeds u * sum(w). math.exp is the C library's exp, as std::exp."""
    m = max(scores)
    w = [0.0 if m == -math.inf else math.exp(s - m) for s in scores]
    total = 0.0
    for x in w:
        total += x
    if not total > 0:
        return max(range(len(scores)), key=lambda i: (scores[i], -i))
    target, acc, last = u * total, 0.0, -1
    for i, x in enumerate(w):
        if x == 0:
            continue
        acc += x
        last = i
        if acc > target:
            return i
    return last


def processors(o):
    """HF's LogitsProcessorList for options `o` (GenerateOptions' names), built by HF's own
    GenerationMixin._get_logits_processor, then (with do_sample) _get_logits_warper (4.44):
    repetition penalty, no-repeat n-gram; temperature, top-k, top-p, min-p."""
    from transformers import GenerationConfig
    from transformers.generation.logits_process import LogitsProcessorList
    from transformers.generation.utils import GenerationMixin

    class Builder(GenerationMixin):  # the two methods need no model
        pass

    gc = GenerationConfig(do_sample=o.get("do_sample", False), temperature=o.get("temperature", 1.0),
                          top_k=o.get("top_k", 50), top_p=o.get("top_p", 1.0), min_p=o.get("min_p") or None,
                          repetition_penalty=o.get("repetition_penalty", 1.0),
                          no_repeat_ngram_size=o.get("no_repeat_ngram_size", 0))
    gc._eos_token_tensor = None  # set by generate() itself; no EOS-dependent processor here
    b = Builder()
    out = b._get_logits_processor(gc, input_ids_seq_length=0, encoder_input_ids=None, prefix_allowed_tokens_fn=None,
                                  logits_processor=LogitsProcessorList(), device="cpu")
    if gc.do_sample:
        out += b._get_logits_warper(gc, device="cpu")
    return out


def apply(procs, history, logits):
    """The processors on one row of logits, in float64; a list of floats back."""
    import torch
    ids = torch.tensor([history], dtype=torch.long)
    scores = torch.tensor([logits], dtype=torch.float64)
    return procs(ids, scores)[0].tolist()


def step(o, history, logits, rng):
    """The next token: processed scores, then argmax (greedy) or a draw."""
    s = apply(processors(o), history, logits)
    if o.get("do_sample", False):
        return draw(s, rng.uniform())
    return max(range(len(s)), key=lambda i: (s[i], -i))


def reference_cases():
    from transformers.generation import logits_process as lp
    logits = [1.5, -0.25, 3.0, 0.75, -2.0, 2.25, 0.1, -1.1, 1.2, 0.0]
    history = [2, 4, 7, 2, 9, 4]
    singles = [
        ("repetition_penalty", 1.3, lp.RepetitionPenaltyLogitsProcessor(penalty=1.3)),
        ("repetition_penalty", 0.7, lp.RepetitionPenaltyLogitsProcessor(penalty=0.7)),
        ("no_repeat_ngram", 2, lp.NoRepeatNGramLogitsProcessor(2)),
        ("temperature", 0.5, lp.TemperatureLogitsWarper(0.5)),
        ("temperature", 2.0, lp.TemperatureLogitsWarper(2.0)),
        ("top_k", 3, lp.TopKLogitsWarper(3)),
        ("top_k", 1, lp.TopKLogitsWarper(1)),
        ("top_k", 20, lp.TopKLogitsWarper(20)),
        ("top_p", 0.9, lp.TopPLogitsWarper(0.9)),
        ("top_p", 0.5, lp.TopPLogitsWarper(0.5)),
        ("top_p", 0.01, lp.TopPLogitsWarper(0.01)),
        ("min_p", 0.1, lp.MinPLogitsWarper(0.1)),
        ("min_p", 0.5, lp.MinPLogitsWarper(0.5)),
    ]
    cases = []
    for name, param, proc in singles:
        cases.append({"processor": name, "param": param, "history": history, "logits": logits,
                      "expected": apply(lp.LogitsProcessorList([proc]), history, logits)})
    # n-gram bans for other sizes and histories
    for n, hist in [(3, [4, 5, 6, 4, 5]), (2, [1, 2, 3, 1, 2]), (4, [1, 2, 3]), (1, [3, 8])]:
        cases.append({"processor": "no_repeat_ngram", "param": n, "history": hist, "logits": logits,
                      "expected": apply(lp.LogitsProcessorList([lp.NoRepeatNGramLogitsProcessor(n)]), hist,
                                        logits)})
    pipelines = []
    for o in [{"do_sample": True, "repetition_penalty": 1.2, "no_repeat_ngram_size": 2, "temperature": 0.8,
               "top_k": 6, "top_p": 0.9, "min_p": 0.05},
              {"do_sample": True, "temperature": 1.7, "top_k": 0, "top_p": 0.75},
              {"do_sample": False, "repetition_penalty": 1.5, "no_repeat_ngram_size": 3}]:
        pipelines.append({"options": o, "history": history, "logits": logits,
                          "expected": apply(processors(o), history, logits)})
    rng = SplitMix64(42)
    prng = {"seed": 42, "next": [str(rng.next()) for _ in range(4)],
            "uniform": [SplitMix64(7).uniform()]}
    return {"cases": cases, "pipelines": pipelines, "prng": prng}


def main():
    out = reference_cases()
    def row(x):  # -inf (a filtered token) as null
        return json.dumps(x).replace("-Infinity", "null")
    lines = ['{"cases": [', ",\n".join(row(c) for c in out["cases"]), '],\n"pipelines": [',
             ",\n".join(row(c) for c in out["pipelines"]), '],\n"prng": ' + row(out["prng"]) + "}"]
    with open(sys.argv[1], "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
