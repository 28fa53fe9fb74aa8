#!/usr/bin/python3
"""Trains the dates model: human-written dates -> ISO 8601 (YYYY-MM-DD).

The architecture of "Attention Is All You Need" at a small size: encoder-decoder,
post-LN, ReLU, sinusoidal positions, embeddings scaled by sqrt(d), one character-level
vocabulary for source and target (docs/tokenizer.md, "## char"). It is the module of
tools/vkformer_torch.py, trained on CPU and written with tools/export_model.py.

    /usr/bin/python3 tools/train_dates.py                 # writes models/dates/
    /usr/bin/python3 tools/train_dates.py --steps 50 --out /tmp/dates-tiny   # a quick check

Data: dates uniform over 1900-01-01 .. 2099-12-31, written in one of the FORMS below,
letters cased lower / UPPER / Title / random per letter / as written. The held-out set
(2000 examples, its own seed) is excluded from training by date: no held-out date is
ever seen in training, in any form. Everything is seeded; with the same torch build and
thread count a run gives the same weights.

Outputs in --out: config.json, model.safetensors, tokenizer.json, heldout.json (every
held-out input, its expected output and the greedy prediction of
vkformer_torch.greedy on the exported weights, with its smallest top-1 - top-2 logit
margin) and training.json (settings, loss curve, times, accuracies).
"""
import argparse
import datetime
import json
import math
import os
import random
import string
import sys
import time

# Idle OpenMP threads sleep instead of spinning: on a shared 2-core machine spinning
# threads cost 2-3x the CPU time per step (measured). Must be set before torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vkformer_torch as vt  # noqa: E402
from export_model import export  # noqa: E402

# ---- tokenizer --------------------------------------------------------------
PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]
CHARS = " ,-./0123456789" + string.ascii_uppercase + string.ascii_lowercase
VOCAB = SPECIALS + list(CHARS)
CHAR_ID = {c: i for i, c in enumerate(VOCAB) if i >= len(SPECIALS)}


def tokenizer_json():
    return {"type": "char", "vocab": VOCAB, "pad_id": PAD, "bos_id": BOS, "eos_id": EOS, "unk_id": UNK}


def write_tokenizer(path):
    """tokenizer.json, one field per line (the vocabulary on one line: id = index)."""
    j = tokenizer_json()
    lines = [f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in j.items()]
    with open(path, "w", encoding="utf-8") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")


def encode(text):
    """One id per Unicode code point; characters outside the vocabulary are UNK."""
    return [CHAR_ID.get(c, UNK) for c in text]


def decode(ids):
    return "".join("\ufffd" if i == UNK else VOCAB[i] for i in ids if i not in (PAD, BOS, EOS))


# ---- data -------------------------------------------------------------------
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
ABBR = [m[:3] for m in MONTHS]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
FIRST = datetime.date(1900, 1, 1).toordinal()
LAST = datetime.date(2099, 12, 31).toordinal()


def ordinal(n):
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def day(d, rng):
    """Day of month as people write it in words: mostly 5, sometimes 05."""
    return f"{d.day:02d}" if rng.random() < 0.15 else str(d.day)


def num(n, rng):
    """Month or day in numeric forms: 05 or 5."""
    return f"{n:02d}" if rng.random() < 0.7 else str(n)


# Each form: (name, function(date, rng) -> text as usually written).
FORMS = [
    ("22 November 2026", lambda d, r: f"{day(d, r)} {MONTHS[d.month - 1]} {d.year}"),
    ("November 22, 2026", lambda d, r: f"{MONTHS[d.month - 1]} {day(d, r)}, {d.year}"),
    ("Nov 22, 2026", lambda d, r: f"{ABBR[d.month - 1]} {day(d, r)}, {d.year}"),
    ("22 Nov 2026", lambda d, r: f"{day(d, r)} {ABBR[d.month - 1]} {d.year}"),
    ("2026/11/22", lambda d, r: f"{d.year}/{num(d.month, r)}/{num(d.day, r)}"),
    ("22.11.2026", lambda d, r: f"{num(d.day, r)}.{num(d.month, r)}.{d.year}"),
    ("Sunday, 22 November 2026",
     lambda d, r: f"{WEEKDAYS[d.weekday()]}, {day(d, r)} {MONTHS[d.month - 1]} {d.year}"),
    ("the 22nd of November 2026", lambda d, r: f"the {ordinal(d.day)} of {MONTHS[d.month - 1]} {d.year}"),
    ("november 22nd 2026", lambda d, r: f"{MONTHS[d.month - 1].lower()} {ordinal(d.day)} {d.year}"),
]
CASINGS = ["as written", "lower", "upper", "title", "random"]


def recase(text, casing, rng):
    if casing == "lower":
        return text.lower()
    if casing == "upper":
        return text.upper()
    if casing == "title":  # first letter of each word up, the rest down ("22nd" stays)
        return " ".join(w[:1].upper() + w[1:].lower() for w in text.split(" "))
    if casing == "random":
        return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in text)
    return text


def render(d, rng):
    """(text, form name, casing) of date d."""
    form, fn = FORMS[rng.randrange(len(FORMS))]
    casing = CASINGS[rng.randrange(len(CASINGS))]
    return recase(fn(d, rng), casing, rng), form, casing


def iso(d):
    return d.isoformat()


def random_date(rng):
    return datetime.date.fromordinal(rng.randint(FIRST, LAST))


def make_set(seed, n, exclude=()):
    """n examples with n distinct dates, none in `exclude` (ordinals)."""
    rng = random.Random(seed)
    seen, out = set(exclude), []
    while len(out) < n:
        d = random_date(rng)
        if d.toordinal() in seen:
            continue
        seen.add(d.toordinal())
        text, form, casing = render(d, rng)
        out.append({"input": text, "expected": iso(d), "form": form, "casing": casing})
    return out


# ---- model ------------------------------------------------------------------
def make_config(a):
    return {"model_type": "transformer", "d_model": a.d_model, "n_heads": a.heads, "d_ff": a.d_ff,
            "encoder_layers": a.encoder_layers, "decoder_layers": a.decoder_layers,
            "activation": "relu", "norm_first": False, "layer_norm_eps": 1e-5,
            "src_vocab_size": len(VOCAB), "tgt_vocab_size": len(VOCAB),
            "max_positions": a.max_positions, "positional_encoding": "sinusoidal",
            "scale_embeddings": True, "causal": False, "pad_id": PAD, "bos_id": BOS, "eos_id": EOS}


def train_logits(model, config, src, tgt_in):
    """vkformer_torch.run's computation, differentiable (run() detaches its output)."""
    scale = math.sqrt(config["d_model"])
    x = model.src_embed(src) * scale + model.sinusoidal[:src.shape[1]]
    y = model.tgt_embed(tgt_in) * scale + model.sinusoidal[:tgt_in.shape[1]]
    src_pad = src == PAD
    out = model.transformer(x, y, tgt_mask=vt.causal_mask(tgt_in.shape[1]),
                            src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_in == PAD,
                            memory_key_padding_mask=src_pad)
    return model.generator(out)


def batch_tensors(examples):
    src = vt.pad_batch([encode(e["input"]) for e in examples], PAD)
    tgt = torch.tensor([[BOS] + encode(e["expected"]) + [EOS] for e in examples], dtype=torch.long)
    return src, tgt


@torch.no_grad()
def fast_greedy(model, config, examples, max_new=11):
    """Batched greedy for monitoring during training (the reported figures use vt.greedy)."""
    src, _ = batch_tensors(examples)
    out = torch.full((len(examples), 1), BOS, dtype=torch.long)
    for _ in range(max_new):
        nxt = train_logits(model, config, src, out)[:, -1].argmax(-1, keepdim=True)
        out = torch.cat([out, nxt], 1)
    preds = []
    for row in out[:, 1:].tolist():
        preds.append(decode(row[:row.index(EOS)] if EOS in row else row))
    return preds


@torch.no_grad()
def reference_greedy(model, config, srcs, max_new_tokens, margins):
    """vkformer_torch.greedy for a whole batch at once: every step is a full forward pass
    of vkformer_torch.forward (the reference computation) on the right-padded batch, as
    vkformer runs a batch; each sequence stops at its EOS. margins[b] gets sequence b's
    smallest top-1 - top-2 logit gap. main() checks it against vt.greedy on a sample."""
    gen = [[] for _ in srcs]
    done = [False] * len(srcs)
    for _ in range(max_new_tokens):
        if all(done):
            break
        outs = vt.forward(model, config, srcs, [[config["bos_id"]] + g for g in gen])
        for b, out in enumerate(outs):
            if done[b]:
                continue
            top = torch.topk(out[-1], 2)
            margins[b] = min(margins[b], float(top.values[0] - top.values[1]))
            v = int(top.indices[0])
            if v == config["eos_id"]:
                done[b] = True
            else:
                gen[b].append(v)
    return gen


def write_heldout(path, h):
    """heldout.json with one example per line."""
    head = {k: v for k, v in h.items() if k != "examples"}
    lines = [json.dumps(e, ensure_ascii=False) for e in h["examples"]]
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(head)[:-1] + ', "examples": [\n' + ",\n".join(lines) + "\n]}\n")


def accuracy(preds, examples):
    return sum(p == e["expected"] for p, e in zip(preds, examples)) / len(examples)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "dates"))
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=1.5e-3)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--d-ff", type=int, default=256)
    p.add_argument("--encoder-layers", type=int, default=2)
    p.add_argument("--decoder-layers", type=int, default=2)
    p.add_argument("--max-positions", type=int, default=64)
    p.add_argument("--seed", type=int, default=1, help="weights and training data")
    p.add_argument("--heldout-seed", type=int, default=2)
    p.add_argument("--heldout", type=int, default=2000)
    p.add_argument("--dev-seed", type=int, default=3, help="the monitoring set (not the held-out one)")
    p.add_argument("--log-every", type=int, default=250)
    p.add_argument("--check-reference", type=int, default=40,
                   help="held-out examples also decoded one by one with vt.greedy (must agree)")
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = random.Random(a.seed)
    config = make_config(a)
    model = vt.build_model(config)
    # N(0, 1/d) so that the sqrt(d)-scaled embeddings have unit variance, like the positions.
    for emb in (model.src_embed, model.tgt_embed):
        torch.nn.init.normal_(emb.weight, std=a.d_model ** -0.5)

    heldout = make_set(a.heldout_seed, a.heldout)
    held_dates = {datetime.date.fromisoformat(e["expected"]).toordinal() for e in heldout}
    dev = make_set(a.dev_seed, 500, exclude=held_dates)

    def train_batch():
        ex = []
        while len(ex) < a.batch:
            d = random_date(rng)
            if d.toordinal() in held_dates:
                continue
            ex.append({"input": render(d, rng)[0], "expected": iso(d)})
        return batch_tensors(ex)

    opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, 0.98), eps=1e-9)

    def lr_at(step):  # linear warmup, then cosine down to 0
        if step < a.warmup:
            return a.lr * (step + 1) / a.warmup
        t = (step - a.warmup) / max(1, a.steps - a.warmup)
        return a.lr * 0.5 * (1 + math.cos(math.pi * t))

    model.train()
    log, t0, c0 = [], time.time(), time.process_time()
    for step in range(a.steps):
        src, tgt = train_batch()
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        logits = train_logits(model, config, src, tgt[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if (step + 1) % a.log_every == 0 or step + 1 == a.steps:
            model.eval()
            dev_acc = accuracy(fast_greedy(model, config, dev), dev)
            model.train()
            entry = {"step": step + 1, "loss": round(loss.item(), 5), "dev_accuracy": dev_acc,
                     "seconds": round(time.time() - t0, 1),
                     "cpu_seconds": round(time.process_time() - c0, 1)}
            log.append(entry)
            print(json.dumps(entry), flush=True)
    train_seconds = time.time() - t0
    train_cpu_seconds = time.process_time() - c0
    model.eval()

    os.makedirs(a.out, exist_ok=True)
    export(model, config, a.out, dtype="F32")
    write_tokenizer(os.path.join(a.out, "tokenizer.json"))

    # The reported accuracy: the reference greedy decoding on the weights as exported.
    ref, ref_config = vt.load_model(a.out)
    t1 = time.time()
    srcs = [encode(e["input"]) for e in heldout]
    margins = [math.inf] * len(heldout)
    preds = reference_greedy(ref, ref_config, srcs, 16, margins)
    for e, ids, m in zip(heldout, preds, margins):
        e["torch"] = decode(ids)
        e["min_margin"] = round(m, 4)
    correct = sum(e["torch"] == e["expected"] for e in heldout)
    min_margin = min(margins)
    for e, src, ids in list(zip(heldout, srcs, preds))[:a.check_reference]:
        one = vt.greedy(ref, ref_config, src, max_new_tokens=16)
        if one != ids:
            raise AssertionError(f"vt.greedy {one} != batched {ids} for {e['input']!r}")
    eval_seconds = time.time() - t1
    acc = correct / len(heldout)
    by_form = {}
    for e in heldout:
        c = by_form.setdefault(e["form"], [0, 0])
        c[0] += e["torch"] == e["expected"]
        c[1] += 1
    write_heldout(os.path.join(a.out, "heldout.json"),
                  {"seed": a.heldout_seed, "max_new_tokens": 16, "torch_accuracy": acc,
                   "examples": [{k: e[k] for k in ("input", "expected", "torch", "min_margin", "form")}
                                for e in heldout]})
    params = sum(t.numel() for t in model.state_dict().values())
    summary = {"settings": vars(a) | {"out": None}, "parameters": params,
               "torch_version": torch.__version__, "train_seconds": round(train_seconds, 1),
               "train_cpu_seconds": round(train_cpu_seconds, 1), "load_average": os.getloadavg(),
               "heldout_eval_seconds": round(eval_seconds, 1), "heldout_torch_accuracy": acc,
               "heldout_correct": correct, "heldout_size": len(heldout),
               "heldout_min_margin": round(min_margin, 4),
               "heldout_by_form": {k: f"{v[0]}/{v[1]}" for k, v in by_form.items()}, "log": log}
    with open(os.path.join(a.out, "training.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    print(f"{params} parameters, trained {train_seconds:.1f} s ({train_cpu_seconds:.1f} s CPU); held-out exact match (vt.greedy) "
          f"{correct}/{len(heldout)} = {acc:.4f}; smallest greedy margin {min_margin:.3f}; "
          f"eval {eval_seconds:.1f} s")
    for e in heldout:
        if e["torch"] != e["expected"]:
            print(f"  wrong: {e['input']!r} -> {e['torch']!r}, expected {e['expected']}")


if __name__ == "__main__":
    main()
