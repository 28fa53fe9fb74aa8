#!/usr/bin/python3
"""vkformer's model in PyTorch: the module whose state_dict() names are the tensor
names of a vkformer model directory, and the computations vkformer must reproduce
(forward pass, greedy decoding, beam search), written plainly so they are the
reference. docs/model-format.md describes the format; tools/export_model.py writes it.

    import vkformer_torch as vt
    m = vt.build_model(config)            # or: m, config = vt.load_model("tests/models/x")
    outs = vt.forward(m, config, [[5, 6, 7], [8]])     # one [len, dim] tensor per sequence
    ids = vt.greedy(m, config, [5, 6, 7], max_new_tokens=8)

torch 1.13 (Debian): run with /usr/bin/python3.
"""
import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# config.json: key -> accepted Python types.
CONFIG_KEYS = {
    "model_type": (str,), "d_model": (int,), "n_heads": (int,), "d_ff": (int,),
    "encoder_layers": (int,), "decoder_layers": (int,), "activation": (str,),
    "norm_first": (bool,), "layer_norm_eps": (float, int), "src_vocab_size": (int,),
    "tgt_vocab_size": (int,), "max_positions": (int,), "positional_encoding": (str,),
    "scale_embeddings": (bool,), "causal": (bool,), "pad_id": (int,), "bos_id": (int,),
    "eos_id": (int,),
}
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu")
POSITIONAL = ("sinusoidal", "learned", "none")


def check_config(config):
    """Raises ValueError naming the first key that is missing or wrong."""
    for key, types in CONFIG_KEYS.items():
        if key not in config:
            raise ValueError(f"config: missing key '{key}'")
        v = config[key]
        if isinstance(v, bool) and bool not in types:
            raise ValueError(f"config: '{key}' must be {types[0].__name__}, got {v!r}")
        if not isinstance(v, types):
            raise ValueError(f"config: '{key}' must be {types[0].__name__}, got {v!r}")
    c = config
    if c["model_type"] != "transformer":
        raise ValueError(f"config: model_type must be 'transformer', got {c['model_type']!r}")
    if c["activation"] not in ACTIVATIONS:
        raise ValueError(f"config: activation must be one of {ACTIVATIONS}, got {c['activation']!r}")
    if c["positional_encoding"] not in POSITIONAL:
        raise ValueError(f"config: positional_encoding must be one of {POSITIONAL}, "
                         f"got {c['positional_encoding']!r}")
    for key in ("d_model", "n_heads", "d_ff", "encoder_layers", "src_vocab_size", "max_positions"):
        if c[key] <= 0:
            raise ValueError(f"config: '{key}' must be > 0, got {c[key]}")
    if c["decoder_layers"] < 0:
        raise ValueError("config: 'decoder_layers' must be >= 0")
    if c["d_model"] % c["n_heads"]:
        raise ValueError(f"config: d_model {c['d_model']} is not a multiple of n_heads {c['n_heads']}")
    if c["positional_encoding"] == "sinusoidal" and c["d_model"] % 2:
        raise ValueError("config: sinusoidal positions need an even d_model")
    if c["decoder_layers"] > 0:
        if c["causal"]:
            raise ValueError("config: 'causal' is for encoder-only stacks (decoder_layers = 0)")
        if c["tgt_vocab_size"] <= 0:
            raise ValueError("config: an encoder-decoder model needs tgt_vocab_size > 0")
    if not c["layer_norm_eps"] > 0:
        raise ValueError("config: 'layer_norm_eps' must be > 0")
    vocab = out_vocab(c)
    for key in ("pad_id", "bos_id", "eos_id"):
        if not 0 <= c[key] < min(vocab, c["src_vocab_size"]):
            raise ValueError(f"config: '{key}' {c[key]} is outside the vocabulary")


def encoder_decoder(config):
    return config["decoder_layers"] > 0


def out_vocab(config):
    """The generator's output vocabulary: tgt for enc–dec, src otherwise."""
    return config["tgt_vocab_size"] if encoder_decoder(config) else config["src_vocab_size"]


def activation_fn(name):
    """What nn.Transformer gets: strings for relu/gelu (erf), callables for the others."""
    return {"relu": "relu", "gelu": "gelu",
            "gelu_tanh": functools.partial(F.gelu, approximate="tanh"),
            "silu": F.silu}[name]


def sinusoidal_table(max_positions, d):
    """PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(same); computed in
    float64, rounded once to float32."""
    p = torch.arange(max_positions, dtype=torch.float64).unsqueeze(1)
    two_i = torch.arange(0, d, 2, dtype=torch.float64)
    angle = p / torch.pow(torch.tensor(10000.0, dtype=torch.float64), two_i / d)
    pe = torch.zeros(max_positions, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.float()


class EncoderOnly(nn.Module):
    """The `transformer` of encoder-only and decoder-only models: just an encoder, so
    its tensors are named transformer.encoder.* as in nn.Transformer."""

    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder


class VkformerModel(nn.Module):
    """Attributes (and so state_dict() names): src_embed, tgt_embed (enc–dec),
    transformer, src_pos / tgt_pos (learned positions), generator (optional)."""

    def __init__(self, config, generator=True, final_norm=None):
        super().__init__()
        check_config(config)
        c = config
        d = c["d_model"]
        self.src_embed = nn.Embedding(c["src_vocab_size"], d)
        if encoder_decoder(c):
            self.tgt_embed = nn.Embedding(c["tgt_vocab_size"], d)
            self.transformer = nn.Transformer(
                d, c["n_heads"], c["encoder_layers"], c["decoder_layers"], c["d_ff"],
                dropout=0.0, activation=activation_fn(c["activation"]), batch_first=True,
                norm_first=c["norm_first"], layer_norm_eps=float(c["layer_norm_eps"]))
        else:
            layer = nn.TransformerEncoderLayer(
                d, c["n_heads"], c["d_ff"], dropout=0.0, activation=activation_fn(c["activation"]),
                layer_norm_eps=float(c["layer_norm_eps"]), batch_first=True,
                norm_first=c["norm_first"])
            if final_norm is None:
                final_norm = c["norm_first"]
            norm = nn.LayerNorm(d, eps=float(c["layer_norm_eps"])) if final_norm else None
            self.transformer = EncoderOnly(nn.TransformerEncoder(layer, c["encoder_layers"], norm=norm))
        if c["positional_encoding"] == "learned":
            self.src_pos = nn.Embedding(c["max_positions"], d)
            if encoder_decoder(c):
                self.tgt_pos = nn.Embedding(c["max_positions"], d)
        if generator:
            self.generator = nn.Linear(d, out_vocab(c))
        # Not part of the file (persistent=False): vkformer computes the same table.
        self.register_buffer("sinusoidal", sinusoidal_table(c["max_positions"], d), persistent=False)
        self.eval()


def build_model(config, generator=True, final_norm=None):
    """A model with PyTorch's default initialization, in eval mode.
    generator: add the output projection (to tgt_vocab for enc–dec, src_vocab otherwise).
    final_norm: encoder-only/decoder-only stacks only: add transformer.encoder.norm
    (default: if norm_first). nn.Transformer (enc–dec) always has both final norms."""
    return VkformerModel(config, generator=generator, final_norm=final_norm)


def load_model(model_dir):
    """(module, config) from a model directory; weights converted to float32."""
    import json
    import os

    import export_model
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    tensors, _ = export_model.read_safetensors(os.path.join(model_dir, "model.safetensors"))
    module = build_model(config, generator="generator.weight" in tensors,
                         final_norm="transformer.encoder.norm.weight" in tensors)
    module.load_state_dict(tensors, strict=True)
    return module.eval(), config


def causal_mask(n):
    """[n, n] bool, True where attention is forbidden (key after query)."""
    return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)


def _embed(module, config, ids, side):
    table = module.src_embed if side == "src" else module.tgt_embed
    x = table(ids)
    if config["scale_embeddings"]:
        x = x * math.sqrt(config["d_model"])
    n = ids.shape[1]
    if n > config["max_positions"]:
        raise ValueError(f"sequence of {n} tokens is longer than max_positions {config['max_positions']}")
    pe = config["positional_encoding"]
    if pe == "sinusoidal":
        x = x + module.sinusoidal[:n]
    elif pe == "learned":
        pos = module.src_pos if side == "src" else module.tgt_pos
        x = x + pos(torch.arange(n))
    return x


def pad_batch(seqs, pad_id):
    """Right-pads lists of ids with pad_id: LongTensor [B, max_len]."""
    if not seqs or any(len(s) == 0 for s in seqs):
        raise ValueError("every sequence needs at least one token")
    n = max(len(s) for s in seqs)
    return torch.tensor([list(s) + [pad_id] * (n - len(s)) for s in seqs], dtype=torch.long)


def run(module, config, src, tgt=None, fast_path=False):
    """The whole model on padded id tensors [B, L] (and [B, Lt]): [B, L(t), dim].
    fast_path=False runs PyTorch's plain (composite) code path; True lets torch 1.13
    use its fused encoder kernels and nested tensors (which write 0 at padded
    positions). Values at valid positions agree either way."""
    c = config
    ctx = torch.no_grad() if fast_path else torch.enable_grad()
    with ctx:
        src_pad = src == c["pad_id"]
        x = _embed(module, c, src, "src")
        mask = causal_mask(src.shape[1]) if c["causal"] else None
        memory = module.transformer.encoder(x, mask=mask, src_key_padding_mask=src_pad)
        if encoder_decoder(c):
            if tgt is None:
                raise ValueError("an encoder-decoder model needs target ids")
            y = _embed(module, c, tgt, "tgt")
            out = module.transformer.decoder(
                y, memory, tgt_mask=causal_mask(tgt.shape[1]),
                tgt_key_padding_mask=tgt == c["pad_id"], memory_key_padding_mask=src_pad)
        else:
            out = memory
        if hasattr(module, "generator"):
            out = module.generator(out)
    return out.detach()


def forward(module, config, src_batch, tgt_batch=None, fast_path=False):
    """src_batch (and tgt_batch for enc–dec): lists of id lists, unequal lengths allowed,
    right-padded with pad_id here. Returns one float32 tensor [len_b, dim] per sequence:
    the output at its valid positions (target positions for enc–dec)."""
    src = pad_batch(src_batch, config["pad_id"])
    tgt = None
    valid = [len(s) for s in src_batch]
    if encoder_decoder(config):
        if tgt_batch is None or len(tgt_batch) != len(src_batch):
            raise ValueError("an encoder-decoder model needs one target per source")
        tgt = pad_batch(tgt_batch, config["pad_id"])
        valid = [len(t) for t in tgt_batch]
    out = run(module, config, src, tgt, fast_path=fast_path)
    return [out[b, :n].clone() for b, n in enumerate(valid)]


def _check_generating(module, config):
    if not hasattr(module, "generator"):
        raise ValueError("generation needs a generator")
    if not encoder_decoder(config) and not config["causal"]:
        raise ValueError("generation needs an encoder-decoder or a causal (decoder-only) model")


def next_logits(module, config, src_ids, generated):
    """fp32 logits [V] of the last position, by a full forward pass.
    enc–dec: source src_ids, target [bos] + generated; decoder-only: prompt src_ids + generated."""
    if encoder_decoder(config):
        out = forward(module, config, [src_ids], [[config["bos_id"]] + list(generated)])
    else:
        out = forward(module, config, [list(src_ids) + list(generated)])
    return out[0][-1]


def greedy(module, config, src_ids, max_new_tokens, margins=None):
    """Greedy decoding by full recompute. Returns the generated ids (after BOS for
    enc–dec, after the prompt for decoder-only), stopping at EOS (excluded) or after
    max_new_tokens. If margins is a list, appends top1 - top2 logit of every step."""
    _check_generating(module, config)
    toks = []
    for _ in range(max_new_tokens):
        logits = next_logits(module, config, src_ids, toks)
        top = torch.topk(logits, 2)
        if margins is not None:
            margins.append(float(top.values[0] - top.values[1]))
        v = int(torch.argmax(logits))
        if v == config["eos_id"]:
            break
        toks.append(v)
    return toks


def beam_search(module, config, src_ids, beam, max_new_tokens, alpha, trace=None):
    """Beam search by full recompute, exactly as docs/model-format.md states it.
    Scores are float64 sums of log_softmax(float64(fp32 logits of the last position)).
    A hypothesis ending in EOS is finished when its candidate ranks < beam among all
    candidates of the step; its score is sum / len(tokens incl. EOS)^alpha. Stops when
    beam hypotheses are finished or after max_new_tokens steps (then the alive ones are
    scored too, sum / len^alpha). Returns the best tokens (without EOS); first on ties.
    If trace is a dict, it gets: "score", "finished" (best one ended with EOS),
    "cut_margins" (relative score gaps at each step's selection cutoff and EOS rank
    boundary) and "final_margin" (relative gap between the best two results)."""
    _check_generating(module, config)
    eos = config["eos_id"]
    if max_new_tokens <= 0:
        return []
    alive = [(0.0, [])]
    finished = []  # (normalized score, tokens without EOS, ended with EOS)
    cut_margins = []
    for _ in range(max_new_tokens):
        cands = []
        for bi, (s, toks) in enumerate(alive):
            lp = torch.log_softmax(next_logits(module, config, src_ids, toks).double(), dim=-1)
            for v, l in enumerate(lp.tolist()):
                cands.append((s + l, bi, v))
        cands.sort(key=lambda c: (-c[0], c[1], c[2]))
        new_alive = []
        last = len(cands) - 1
        for rank, (s, bi, v) in enumerate(cands):
            toks = alive[bi][1] + [v]
            if v == eos:
                if rank < beam:
                    finished.append((s / len(toks) ** alpha, toks[:-1], True))
            else:
                new_alive.append((s, toks))
            if len(new_alive) == beam:
                last = rank
                break
        # Where a perturbation of the scores would change the outcome.
        if last + 1 < len(cands):
            cut_margins.append((cands[last][0] - cands[last + 1][0]) / abs(cands[last][0]))
        if beam < len(cands) and eos in (cands[beam - 1][2], cands[beam][2]):
            cut_margins.append((cands[beam - 1][0] - cands[beam][0]) / abs(cands[beam - 1][0]))
        alive = new_alive
        if len(finished) >= beam:
            break
    else:
        for s, toks in alive:
            finished.append((s / len(toks) ** alpha, toks, False))
    best = max(finished, key=lambda f: f[0])
    if trace is not None:
        scores = sorted((f[0] for f in finished), reverse=True)
        trace["score"] = best[0]
        trace["finished"] = best[2]
        trace["cut_margins"] = cut_margins
        trace["final_margin"] = ((scores[0] - scores[1]) / abs(scores[0]) if len(scores) > 1
                                 else math.inf)
    return best[1]
