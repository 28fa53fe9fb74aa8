"""Tiny random Llama-architecture decoders (LlamaForCausalLM, MistralForCausalLM,
Qwen2ForCausalLM) with their goldens, for tests/test_llama.cpp: part of
`make hf-test-models` (make_tiny_models.py calls make_all).

Each directory covers what the llama family reads differently: grouped-query and
multi-query attention, each rope_scaling type transformers 4.44 computes
(linear, dynamic, llama3), tied and separate LM heads, Qwen2's q/k/v biases,
Mistral's sliding window shorter than the prompt, an explicit head_dim, BF16
weights. golden.json is GPT-2's format (make_tiny_models.py): "ids" (prompts of
LLAMA_LENGTHS), "outputs": {"logits": [seq][position][vocab]} of each prompt alone,
"greedy" (generate(do_sample=False), each prompt alone, EOS cut), "greedy_margin", "eos".
Eager attention: the reference's own softmax(QKᵀ/√d)·V with its masks."""
import copy
import os

import torch
from transformers import (LlamaConfig, LlamaForCausalLM, LlamaModel, MistralConfig, MistralForCausalLM,
                          Qwen2Config, Qwen2ForCausalLM)

LLAMA_LENGTHS = [6, 2, 9]


def base(cls, **kw):
    c = dict(vocab_size=157, hidden_size=48, intermediate_size=64, num_hidden_layers=2, num_attention_heads=6,
             num_key_value_heads=2, max_position_embeddings=64, bos_token_id=1, eos_token_id=2,
             initializer_range=0.2, attn_implementation="eager")
    c.update(kw)
    return cls(**c)


# name: (seed, model class, config)
LLAMA_MODELS = {
    "llama_gqa": (40, LlamaForCausalLM, lambda: base(LlamaConfig, rope_theta=10000.0)),
    "llama_mqa_llama3": (41, LlamaForCausalLM, lambda: base(
        LlamaConfig, num_key_value_heads=1, tie_word_embeddings=True, rope_theta=500000.0,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 16})),
    "llama_linear": (42, LlamaForCausalLM, lambda: base(
        LlamaConfig, rope_scaling={"type": "linear", "factor": 2.0}, rms_norm_eps=1e-5)),
    "llama_dynamic": (43, LlamaForCausalLM, lambda: base(
        LlamaConfig, rope_scaling={"rope_type": "dynamic", "factor": 2.0})),
    "qwen2_bias": (44, Qwen2ForCausalLM, lambda: base(Qwen2Config, tie_word_embeddings=True, rope_theta=1000000.0)),
    "mistral_window": (45, MistralForCausalLM, lambda: base(MistralConfig, sliding_window=4)),
    "mistral_head_dim": (46, MistralForCausalLM, lambda: base(MistralConfig, head_dim=16, sliding_window=None)),
    "llama_model": (47, LlamaModel, lambda: base(LlamaConfig, num_key_value_heads=3)),
}
LLAMA_ROUNDED = {"llama_gqa_bf16": torch.bfloat16}


def make_llama(out, name, manifest, made, randomize, write_golden, choose_eos, golden):
    if name in LLAMA_ROUNDED:  # llama_gqa's weights rounded and saved so; the golden from them, in fp32
        model, seqs = made["llama_gqa"]
        low = copy.deepcopy(model).to(LLAMA_ROUNDED[name])
        d = os.path.join(out, name)
        low.save_pretrained(d, safe_serialization=True)
        # Read back as a user would, in fp32: .to(bfloat16) above also rounded the rotary
        # inv_freq buffer, which from_pretrained computes anew in fp32.
        ref = type(model).from_pretrained(d, torch_dtype=torch.float32, attn_implementation="eager")
        write_golden(d, golden(ref.eval(), seqs, model.config.eos_token_id))
        manifest[name] = {"copy_of": "llama_gqa", "dtype": name.rsplit("_", 1)[1].upper()}
        return
    seed, cls, config = LLAMA_MODELS[name]
    torch.manual_seed(seed)
    model = cls(config())
    randomize(model, seed)
    model.eval()
    g = torch.Generator().manual_seed(seed)
    seqs = [torch.randint(3, model.config.vocab_size, (n,), generator=g).tolist() for n in LLAMA_LENGTHS]
    if hasattr(model, "lm_head"):
        choose_eos(model, seqs)  # as for GPT-2: stops some prompt's greedy run early
    d = os.path.join(out, name)
    model.save_pretrained(d, safe_serialization=True)
    write_golden(d, golden(model, seqs, model.config.eos_token_id))
    manifest[name] = {"class": cls.__name__, "seed": seed, "dtype": "F32"}
    made[name] = (model, seqs)




# llama_chat/: a Qwen2 with a byte-level BPE tokenizer (trained here, with ChatML's
# special tokens) and Qwen2's documented ChatML chat template in tokenizer_config.json.
# golden.json: {"chats": [{"messages", "text": apply_chat_template(tokenize=False,
# add_generation_prompt=True), "ids": the same tokenized, "greedy_ids": generate's new
# ids before <|im_end|> (CHAT_NEW at most), "greedy": their text (skip_special_tokens)}]};
# the last chat continues the first with its answer (a second turn).
CHATML = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
          "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
          "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
          "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
CHAT_WORDS = ("hello world the quick brown fox jumps over a lazy dog you are helpful assistant what is "
              "your name tell me about vulkan shaders and models be brief yes no").split()
CHAT_NEW = 12


def make_chat(out, manifest, randomize, seed=48):
    import json
    import random
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    rng = random.Random(seed)
    d = os.path.join(out, "llama_chat")
    corpus = [" ".join(rng.choice(CHAT_WORDS) for _ in range(rng.randrange(3, 12))) for _ in range(300)]
    corpus.append("".join(chr(c) for c in range(32, 127)) + "\n")  # every printable ASCII character a token
    # Byte-level BPE over the corpus's own characters only (no 256-byte alphabet), so
    # that whatever the random model picks decodes to whole ASCII text.
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=300, min_frequency=1, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=[], show_progress=False))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                  chat_template=CHATML)
    tok.save_pretrained(d)
    tok = PreTrainedTokenizerFast.from_pretrained(d)
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(base(Qwen2Config, vocab_size=len(tok), bos_token_id=None, eos_token_id=im_end,
                                  tie_word_embeddings=True, max_position_embeddings=128))
    randomize(model, seed)
    model.eval()
    model.save_pretrained(d, safe_serialization=True)
    model.generation_config.save_pretrained(d)
    convs = [[{"role": "user", "content": "hello world"}],
             [{"role": "system", "content": "be brief"}, {"role": "user", "content": "tell me about vulkan shaders"}]]
    chats = []
    with torch.no_grad():
        for i in range(3):
            msgs = convs[i] if i < 2 else convs[0] + [{"role": "assistant", "content": chats[0]["greedy"]},
                                                        {"role": "user", "content": "what is your name"}]
            text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
            ids = tok.apply_chat_template(msgs, tokenize=True, add_generation_prompt=True)
            g = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                               do_sample=False, max_new_tokens=CHAT_NEW, eos_token_id=im_end, pad_token_id=im_end)
            new = g[0, len(ids):].tolist()
            new = new[:new.index(im_end)] if im_end in new else new
            chats.append({"messages": msgs, "text": text, "ids": ids, "greedy_ids": new,
                          "greedy": tok.decode(new, skip_special_tokens=True)})
    with open(os.path.join(d, "golden.json"), "w") as f:
        json.dump({"chats": chats, "end_of_turn": im_end}, f, ensure_ascii=False)
    manifest["llama_chat"] = {"class": "Qwen2ForCausalLM", "seed": seed, "dtype": "F32",
                              "tokenizer": "byte-level BPE (vocab 300, ChatML tokens) → PreTrainedTokenizerFast"}


def make_all(out, manifest, randomize, write_golden, choose_eos, golden):
    made = {}
    for name in list(LLAMA_MODELS) + list(LLAMA_ROUNDED):
        make_llama(out, name, manifest, made, randomize, write_golden, choose_eos, golden)
    make_chat(out, manifest, randomize)
