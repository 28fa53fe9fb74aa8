// The tokenizer of a GGUF file (llama.cpp's tokenizer.ggml.* metadata), built as the
// tokenizer.json of Hugging Face's `tokenizers` 0.19 pipeline (src/text/hf/), the way
// transformers 4.44.2's GGUF conversion (transformers/integrations/ggml.py) builds one,
// but following llama.cpp (src/llama-vocab.cpp) where the two differ, since llama.cpp
// is what the file's creator tokenized with. docs/tokenizer.md, "GGUF files".
//
// encode(text) returns what llama.cpp's llama_tokenize(text, add_special=true,
// parse_special=true) returns:
//  - special tokens in the text: tokens of type CONTROL (3), USER_DEFINED (4) and
//    UNKNOWN (2) are matched in the text ("<|im_start|>" becomes its id); CONTROL and
//    UNKNOWN ones are special (decode() leaves them out).
//  - BOS: added when tokenizer.ggml.add_bos_token is true; absent, llama.cpp's default:
//    true for "llama", for "gpt2" true only with the pre-tokenizers of the llama3 family
//    (llama3, llama-v3, llama-bpe, falcon3, falcon-h1, pixtral) and tekken. EOS likewise
//    with add_eos_token (default false).
//  - "gpt2": the pre-tokenizer regexes of llama.cpp for tokenizer.ggml.pre, applied one
//    after the other (each splits the pieces of the previous one, keeping the text between
//    matches), then GPT-2's byte-to-unicode mapping; byte-level BPE by merge rank.
//  - "llama": SentencePiece BPE as llama.cpp's SPM tokenizer: spaces become U+2581, one
//    U+2581 in front of the text and after each special token (add_space_prefix, default
//    true), pairs merged by the score of the merged piece (highest first, ties leftmost),
//    characters without a piece as their <0xXX> byte tokens (else unk).
//
// How transformers 4.44.2's AutoTokenizer.from_pretrained(dir, gguf_file=F) differs:
//  - it ignores tokenizer.ggml.add_bos_token and always adds BOS (LlamaTokenizerFast); its
//    bos_token *and* eos_token are both tokens[bos_token_id] (a bug in GGUFLlamaConverter),
//    so SmolLM2's GGUF gives "<|im_start|>" for both and prepends id 1;
//  - it ignores tokenizer.ggml.pre: a "gpt2" vocab gets plain ByteLevel (GPT-2's regex),
//    no Digits; for SmolLM2 ("smollm") its ids differ on texts with a \p{N} character
//    (" 12" is one piece there, " " + "1" + "2" in llama.cpp; "½", "١", "①" likewise);
//  - only CONTROL tokens are added tokens; UNKNOWN ("<unk>") and USER_DEFINED are not
//    matched in text;
//  - for "llama" without merges it builds merges from the scores with distinct ranks,
//    so two pairs of equal score are not always merged leftmost first.
//
// decode(ids) is HF's decode(skip_special_tokens=true) of that tokenizer.json; llama.cpp's
// llama_detokenize additionally cleans spaces (" ." -> ".") for the pre-tokenizers that
// set clean_spaces (default, llama3, gpt-2, ...; not smollm, qwen2): not done here.
// Not followed either: llama.cpp's LSTRIP/RSTRIP attributes for a few named models, the
// EOT/EOG token lists, and the default ids llama.cpp assumes for "gpt2" without
// bos/eos keys (11).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vkformer/tokenizer.hpp"

namespace vkf::text {

/// A GGUF file's tokenizer.ggml.* metadata (the integrator fills it from the GGUF reader).
struct GgufVocab {
  std::string path;                 ///< the .gguf file, for messages
  std::string model;                ///< tokenizer.ggml.model
  std::string pre;                  ///< tokenizer.ggml.pre ("" when absent)
  std::vector<std::string> tokens;
  std::vector<float> scores;        ///< may be empty
  std::vector<int32_t> token_types; ///< may be empty
  std::vector<std::string> merges;  ///< may be empty
  std::optional<int64_t> bos_id, eos_id, unk_id, pad_id, sep_id, cls_id, mask_id;
  std::optional<bool> add_bos, add_eos, add_space_prefix;
};

/// The tokenizer llama.cpp would use for it; throws vkf::Error naming path and the key.
/// special_token("bos_token", "eos_token", "unk_token", "pad_token", "sep_token",
/// "cls_token", "mask_token") answers tokens[id] of the matching *_token_id key.
std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufVocab& v);

/// The HF tokenizer.json load_gguf_tokenizer builds for `v` (for "llama" the model's
/// merges are left empty: they are ranked by score, which tokenizer.json cannot say).
/// @throws vkf::Error as load_gguf_tokenizer.
nlohmann::json gguf_tokenizer_json(const GgufVocab& v);

/// The tokenizer.ggml.pre values load_gguf_tokenizer accepts for "gpt2", comma-separated.
std::string gguf_supported_pre_tokenizers();

}  // namespace vkf::text
