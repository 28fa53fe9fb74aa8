// Models: a directory with config.json and model.safetensors (docs/model-format.md),
// loaded once onto the device, then run: forward passes and generation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vkformer/context.hpp"
#include "vkformer/ops.hpp"
#include "vkformer/weight_format.hpp"

namespace vkf {

/// Sinusoidal: the paper's, sin and cos interleaved (sinusoidal_table()); SinusoidalHalves:
/// Marian's, sines in the first half of the dimensions, cosines in the second
/// (halves_sinusoidal_table()). RelativeBias: nothing is added to the embedding;
/// each stack adds T5's bucketed relative-position bias to every layer's scores
/// (ModelConfig::relative_buckets). Rotary: nothing is added to the embedding;
/// every layer rotates its queries and keys by their position (RoPE, HF's
/// rotate_half form, with the family's inverse frequencies).
enum class PositionalEncoding { Sinusoidal, Learned, None, SinusoidalHalves, RelativeBias, Rotary };

/// The norm of every block: LayerNorm (mean and variance, γ and β) or RMSNorm
/// (root mean square only, γ only: T5's T5LayerNorm, Llama's LlamaRMSNorm).
enum class NormKind { LayerNorm, RMSNorm };

/// A family's own config.json settings (internal: src/families/family.hpp).
struct FamilyConfig;

/// config.json of a model directory. `model_type` names the family
/// (known_model_types()): "transformer" (torch.nn.Transformer stacks) or
/// "use_lite" (Universal Sentence Encoder lite, docs/model-format.md), which
/// sets the fields below from its own keys (vocab_size -> src_vocab_size,
/// layers -> encoder_layers; always pre-LN, no decoder) and keeps the rest
/// (embed_dim, embedding_scale, l2_eps) in family_config.
struct ModelConfig {
  std::string model_type = "transformer";
  uint32_t d_model = 0, n_heads = 0, d_ff = 0;
  uint32_t encoder_layers = 0, decoder_layers = 0;  ///< decoder_layers 0: encoder-only (or decoder-only if causal)
  Activation activation = Activation::ReLU;
  bool norm_first = false;                          ///< true: pre-LN; false: post-LN
  float layer_norm_eps = 1e-5f;
  uint32_t src_vocab_size = 0, tgt_vocab_size = 0, max_positions = 0;
  PositionalEncoding positional_encoding = PositionalEncoding::Sinusoidal;
  bool scale_embeddings = false;                    ///< token embeddings × √d_model
  bool causal = false;                              ///< encoder-only stack as a decoder-only LM
  int32_t pad_id = 0, bos_id = 1, eos_id = 2;       ///< pad_id < 0: no padding token (masked by position)
  /// Every token that ends generation, when config.json lists several
  /// ("eos_token_id": [a, b]); eos_id is the first. Empty: just eos_id.
  std::vector<int32_t> end_ids;
  /// The config.json key max_positions came from ("n_positions" for GPT-2), named in errors.
  std::string positions_key = "max_positions";
  /// Internal: the family's own settings, when it has any.
  std::shared_ptr<const FamilyConfig> family_config;

  // What the families' blocks differ in beyond the fields above; every family
  // but use_lite records its layers with the one block of src/families/transformer/.
  NormKind norm = NormKind::LayerNorm;
  uint32_t head_dim = 0;     ///< width of a head; 0: d_model / n_heads (T5's d_kv may differ)
  uint32_t kv_heads = 0;     ///< heads of K and V; 0: n_heads (fewer: grouped-query attention)
  bool gated_ffn = false;    ///< FFN ff2(act(ff1(x)) ⊙ ff_up(x)) (T5's gated-ACT, SwiGLU) instead of ff2(act(ff1(x)))
  bool scale_scores = true;  ///< scores × 1/√head_dim; false: T5, whose weights have it folded in
  uint32_t relative_buckets = 0, relative_max_distance = 0;  ///< RelativeBias: T5's buckets
  /// Padding is masked by position, never by id (T5, whose pad id is also the decoder's start token).
  bool pad_by_position = false;
  /// Self-attention sees only the last `sliding_window` keys (Mistral: query i sees
  /// keys j with i − W < j ≤ i); 0: all of them.
  uint32_t sliding_window = 0;
  /// Rotary: rotate (x[2i], x[2i+1]) rather than HF's halves (x[i], x[i + d/2]).
  /// GGUF "llama" files: llama.cpp's converter reorders Q and K rows for that layout.
  bool rope_interleaved = false;
  /// The family's choice for generation's KV cache under KvCacheType::Auto
  /// (vkformer/session.hpp): true for fp16 where the device can store it.
  bool kv_cache_f16_default = false;

  bool encoder_decoder() const { return decoder_layers > 0; }
  uint32_t head_width() const { return head_dim ? head_dim : d_model / n_heads; }
  uint32_t kv_head_count() const { return kv_heads ? kv_heads : n_heads; }
  /// Columns of the queries (and of attention's output): n_heads · head_width().
  uint32_t q_width() const { return n_heads * head_width(); }
  /// Columns of the keys, and of the values: kv_head_count() · head_width().
  uint32_t kv_width() const { return kv_head_count() * head_width(); }
  /// Output vocabulary of the generator: tgt for enc–dec, src otherwise.
  uint32_t out_vocab() const { return encoder_decoder() ? tgt_vocab_size : src_vocab_size; }
};

/// The "model_type" values load_config accepts, one per registered family
/// (src/families/families.cmake); the one list every message and check uses.
const std::vector<std::string>& known_model_types();

/// Reads and checks config.json.
/// @throws vkf::Error naming the file and the field that is missing or wrong.
ModelConfig load_config(const std::string& path);

class Tokenizer;
/// Checks config.json's special ids against the tokenizer of the same model
/// directory `dir`. For the project's own "transformer" family, "bos_id",
/// "eos_id" and "pad_id" must be the ids of the tokenizer's BOS, EOS and
/// padding tokens: a model given other ids starts from the wrong token, never
/// sees its end, or masks real tokens as padding, and writes wrong text without
/// an error. (pad_id may equal eos_id or bos_id when the tokenizer's do.) The
/// Hugging Face families are not checked: their config ids legitimately differ
/// from the tokenizer's roles (BART starts decoding from EOS, GPT-2 pads with EOS).
/// ModelDir::open (model_dir.hpp) runs it whenever it reads a tokenizer.
/// @throws vkf::Error "DIR/config.json: "eos_id" 0 is not the tokenizer's EOS ...".
void check_special_ids(const ModelConfig& cfg, const Tokenizer& tok, const std::string& dir);

/// Storage precision of the weights on the device: the WeightFormat they are
/// uploaded in. Kept as another name of WeightFormat (vkformer/weight_format.hpp)
/// so that `Model::load(ctx, dir, Precision::F16)` keeps compiling; new code
/// may say WeightFormat.
using Precision = WeightFormat;

/// Device bytes of a model's weights stored in one type (Model::weight_memory).
struct WeightMemory {
  DType dtype;
  uint64_t bytes;
};

/// What quantize_model wrote.
struct QuantizeReport {
  uint64_t tensors = 0;    ///< tensors in the output file
  uint64_t quantized = 0;  ///< of them quantized here (the linear layers' float matrices)
  uint64_t bytes_in = 0, bytes_out = 0;  ///< the tensors' bytes read and written
};

/// `vkformer quantize`: writes OUT_DIR, model directory IN_DIR with its linear layers'
/// matrices in `format` (Q8_0, Q4_0 or Q4_1, quantized as `Model::load(..., format)`
/// does at load: ggml's reference quantizers) in one model.safetensors, and its other
/// files (config, tokenizer, sentence-transformers' modules) copied. A block tensor is
/// stored as U8 rows of its bytes and named in `__metadata__` ("vkformer.format.NAME":
/// "Q4_0"), so the file stays valid safetensors; Model::load uploads such tensors as
/// stored, under any precision. IN_DIR may be a GGUF file: OUT_DIR is then a GGUF file
/// with its metadata (general.file_type set) and tensors, the matrices in `format`.
/// OUT_DIR must not exist; it appears whole or not at all.
/// @throws vkf::Error naming the file and tensor (rows not whole blocks, a matrix already
/// in another block format) or OUT_DIR.
QuantizeReport quantize_model(const std::string& in_dir, const std::string& out_dir, Precision format);

/// What a Session can be asked to do with a model; each family supports some.
enum class Task { Forward, Generate, Embed };

/// What a model's output means and what text it takes, for the commands that
/// tokenize and print (classify, fill-mask, embed). Families without these
/// notions leave the defaults.
struct ModelInfo {
  std::string architecture;         ///< HF's class name (architectures[0]), e.g. "BertForSequenceClassification"
  /// "" (hidden states or the family's own), "sequence_classification",
  /// "token_classification" or "masked_lm".
  std::string head;
  std::vector<std::string> labels;  ///< a classifier's id2label, by id
  std::string score;                ///< a classifier's scores: "softmax", "sigmoid" or "none" (regression)
  uint32_t max_tokens = 0;          ///< the longest sequence forward() and embed() take; 0: the family's own rule
  uint32_t max_seq_length = 0;      ///< sentence-transformers' max_seq_length; 0: not given
  bool lowercase = false;           ///< sentence-transformers' do_lower_case: lowercase texts before tokenizing
  std::string pooling;              ///< sentence-transformers' pooling ("mean", "cls", ...); "": none
  bool normalize = false;           ///< sentence-transformers' Normalize module
};

struct ModelWeights;  // internal: the device tensors, layer by layer (src/model/weights.hpp)
class Family;         // internal: what the model_type means (src/families/family.hpp)

/// A model on the device. Weights are uploaded once, at load.
class Model {
 public:
  /// Loads DIR/config.json and DIR/model.safetensors, or, without it, the
  /// shards that DIR/model.safetensors.index.json names (Hugging Face's sharded
  /// checkpoint). Checks every file and tensor, and that the weights fit in the
  /// device memory left, before uploading. PyTorch pickles (pytorch_model.bin)
  /// are refused with the command that converts them.
  /// @throws vkf::Error naming the file, tensor or field and what was expected;
  /// out of device memory and device loss name the model and the tensor.
  static std::shared_ptr<Model> load(Context& ctx, const std::string& dir,
                                     Precision precision = Precision::F32);
  ~Model();
  const ModelConfig& config() const { return config_; }
  Precision precision() const { return precision_; }
  Context& context() const { return *ctx_; }
  /// Width of forward()'s output: the output vocabulary with a generator, else
  /// d_model (for "use_lite", the width of embed()'s vectors).
  uint32_t output_dim() const;
  /// Whether Session::forward, generate or embed can run this model (by its family).
  bool supports(Task task) const;
  /// What its output means and which texts it takes (ModelInfo).
  ModelInfo info() const;
  /// Internal: the weights.
  const ModelWeights& weights() const { return *weights_; }
  /// Internal: the model's family.
  const Family& family() const { return *family_; }
  /// What loading went on despite, one line each, naming the file and tensor:
  /// tensors the config does not use (ignored), NaN or Inf values (with their
  /// count), values beyond the fp16 range in fp16 precision. The library does
  /// not print them; the CLI prints each as "vkformer: warning: ...".
  const std::vector<std::string>& warnings() const;
  /// Device bytes of the weights per storage type, largest first: under
  /// --precision q4_0, the linear layers' matrices in q4_0 and the embeddings,
  /// norms and biases in f16 (a tied head is its embedding table, counted once).
  std::vector<WeightMemory> weight_memory() const;

  Model(Context& ctx, ModelConfig config, Precision precision, std::unique_ptr<ModelWeights> w);

 private:
  Context* ctx_;
  ModelConfig config_;
  const Family* family_;
  Precision precision_;
  std::unique_ptr<ModelWeights> weights_;
};

}  // namespace vkf
