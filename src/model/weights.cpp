// Maps the state_dict() names of the PyTorch model (docs/model-format.md) onto
// ModelWeights. Every tensor the config implies must be there with its exact
// shape; anything else in the file is reported and ignored.
#include "model/weights.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "model/safetensors.hpp"
#include "vk/context_impl.hpp"

namespace vkf {
namespace {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string tensor_what(const std::string& name, const std::vector<int64_t>& shape, DType dtype) {
  return "tensor \"" + name + "\" " + shape_string(shape) + " " + dtype_name(dtype);
}

/// Checks and uploads. A dry run checks names and shapes and adds up the device
/// memory the uploads will take, without converting or uploading anything, so
/// a bad file or a model too large for the device fails before any upload.
class Loader {
 public:
  /// ctx null: check names, shapes and values only (check_weights), upload nothing.
  Loader(Context* ctx, const SafeTensorsFile& file, DType dtype, bool dry, std::vector<std::string>* warnings)
      : ctx_(ctx), file_(file), dtype_(dtype), dry_(dry), warnings_(warnings) {}

  bool dry() const { return dry_; }
  /// False in a dry run and when only checking: tables computed on the host are not needed.
  bool uploads() const { return ctx_ && !dry_; }
  /// Device bytes the uploads of a dry run would take.
  uint64_t planned() const { return planned_; }

  /// The tensor's values, after checking its shape (empty in a dry run). `dims`
  /// names the shape's config fields; `why` says what makes the config expect this tensor.
  std::vector<float> fetch(const std::string& name, const std::vector<int64_t>& shape,
                           const std::string& dims, const std::string& why) {
    used_.insert(name);
    if (!file_.has(name))
      throw Error(file_.path() + ": missing tensor \"" + name + "\" " + shape_string(shape) + " = " + dims +
                  " (expected because " + why + ")");
    const SafeTensor& t = file_.get(name);
    if (t.shape != shape)
      throw Error(file_.path() + ": tensor \"" + name + "\" has shape " + shape_string(t.shape) +
                  ", expected " + shape_string(shape) + " = " + dims);
    if (dry_) return {};
    std::vector<float> v = file_.to_f32(name);
    size_t nan = 0, inf = 0, overflow = 0;
    for (float x : v) {
      if (std::isnan(x))
        ++nan;
      else if (std::isinf(x))
        ++inf;
      else if (dtype_ == DType::F16 && std::fabs(x) > 65504.f)
        ++overflow;  // rounds to ±inf in fp16
    }
    if (nan || inf)
      warn("tensor \"" + name + "\" holds " + std::to_string(nan) + " NaN and " + std::to_string(inf) +
           " Inf values");
    if (overflow)
      warn("tensor \"" + name + "\" has " + std::to_string(overflow) +
           " values beyond the fp16 range; they become Inf in fp16 precision");
    return v;
  }

  /// Uploads `v` (in a dry run: counts its bytes). `name` says what it is in errors.
  Tensor upload(const std::vector<int64_t>& shape, const std::vector<float>& v, const std::string& name) {
    return upload(shape, v, name, dtype_);
  }
  /// The same in `dtype`, whatever the model's precision.
  Tensor upload(const std::vector<int64_t>& shape, const std::vector<float>& v, const std::string& name,
                DType dtype) {
    if (dry_) {
      // Saturating: a config can ask for absurd sizes (the sinusoidal table is not in the file).
      constexpr uint64_t kCap = uint64_t(1) << 62;
      uint64_t n = dtype_size(dtype);
      for (int64_t d : shape) n = d > 0 && n > kCap / uint64_t(d) ? kCap : n * uint64_t(d);
      planned_ = std::min(kCap, planned_ + (ctx_ ? ctx_->impl().memory->footprint(n) : n));
      return {};
    }
    if (!ctx_) return {};  // checking only
    try {
      return ctx_->tensor(shape, v, dtype);
    } catch (const VulkanError& e) {
      rethrow_with_context(e, "uploading " + tensor_what(name, shape, dtype));
    }
  }
  /// Uploads v[begin, end) as `shape`: one part of a packed tensor.
  Tensor upload_part(const std::vector<int64_t>& shape, const std::vector<float>& v, size_t begin, size_t end,
                     const std::string& name) {
    if (dry_) return upload(shape, {}, name);
    return upload(shape, {v.begin() + std::ptrdiff_t(begin), v.begin() + std::ptrdiff_t(end)}, name);
  }
  Tensor load(const std::string& name, const std::vector<int64_t>& shape, const std::string& dims,
              const std::string& why) {
    return upload(shape, fetch(name, shape, dims, why), name);
  }
  LinearWeights linear(const std::string& prefix, int64_t out, int64_t in, const std::string& out_name,
                       const std::string& in_name, const std::string& why) {
    return {load(prefix + ".weight", {out, in}, "[" + out_name + ", " + in_name + "]", why),
            load(prefix + ".bias", {out}, "[" + out_name + "]", why)};
  }
  NormWeights norm(const std::string& prefix, int64_t d, const std::string& why) {
    return {load(prefix + ".weight", {d}, "[d_model]", why), load(prefix + ".bias", {d}, "[d_model]", why)};
  }
  /// Optional modules come with both tensors or neither: if one is there, the other is expected.
  bool present(const std::string& prefix, std::string& why) const {
    for (const char* s : {".weight", ".bias"})
      if (file_.has(prefix + s)) {
        why = "\"" + prefix + s + "\" is present";
        return true;
      }
    return false;
  }

  void warn(const std::string& what) const {
    if (warnings_) warnings_->push_back(file_.path() + ": " + what);
  }
  void warn_unused() const {
    for (const auto& [name, t] : file_.tensors())
      if (!used_.count(name))
        warn("unexpected tensor \"" + name + "\" " + shape_string(t.shape) + " " + t.dtype + " is ignored");
  }

 private:
  Context* ctx_;
  const SafeTensorsFile& file_;
  DType dtype_;
  bool dry_;
  std::vector<std::string>* warnings_;
  std::set<std::string> used_;
  uint64_t planned_ = 0;
};

UseLiteWeights load_use_lite(Loader& L, const ModelConfig& cfg) {
  const int64_t e = cfg.embed_dim, d = cfg.d_model, ff = cfg.d_ff;
  const std::string why = "model_type is \"use_lite\"";
  UseLiteWeights w;
  w.embed = L.load("embed.weight", {cfg.src_vocab_size, e}, "[vocab_size, embed_dim]", why);
  // The timing table stays f32 in either precision: fp16 would cost ~1e-3 on
  // values up to 1, and it is only read once per token.
  const auto freqs = L.fetch("timing.inv_timescales", {e / 2}, "[embed_dim / 2]", why);
  w.timing = L.upload({cfg.max_positions, e}, !L.uploads() ? std::vector<float>{} : concat_sinusoidal_table(cfg.max_positions, freqs),
                      "timing signal table", DType::F32);
  for (uint32_t i = 0; i < cfg.encoder_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    const std::string why_l = "layers is " + std::to_string(cfg.encoder_layers);
    // The first layer reads the embeddings: its attention works at embed_dim.
    const int64_t win = i == 0 ? e : d;
    const std::string in = i == 0 ? "embed_dim" : "d_model";
    UseLiteLayerWeights l;
    l.attn_norm = {L.load(p + "attn_norm.weight", {win}, "[" + in + "]", why_l),
                   L.load(p + "attn_norm.bias", {win}, "[" + in + "]", why_l)};
    l.qkv = L.linear(p + "attn.qkv", 3 * win, win, "3·" + in, in, why_l);
    l.attn_out = L.linear(p + "attn.out", d, win, "d_model", in, why_l);
    if (win != d) l.residual = L.linear(p + "residual", d, win, "d_model", in, "embed_dim != d_model");
    l.ffn_norm = L.norm(p + "ffn_norm", d, why_l);
    l.ff1 = L.linear(p + "ffn.fc1", ff, d, "d_ff", "d_model", why_l);
    l.ff2 = L.linear(p + "ffn.fc2", d, ff, "d_model", "d_ff", why_l);
    w.layers.push_back(std::move(l));
  }
  w.pooler = L.linear("pooler.dense", d, d, "d_model", "d_model", why);
  return w;
}

/// Every tensor the config implies, through `L` (a dry run or the real one).
std::unique_ptr<ModelWeights> build(Loader& L, const ModelConfig& cfg) {
  auto w = std::make_unique<ModelWeights>();
  if (cfg.use_lite()) {
    w->use_lite = load_use_lite(L, cfg);
    L.warn_unused();
    return w;
  }
  const int64_t d = cfg.d_model, ff = cfg.d_ff;
  const bool encdec = cfg.encoder_decoder();

  w->src_embed = L.load("src_embed.weight", {cfg.src_vocab_size, d}, "[src_vocab_size, d_model]",
                        "every model has a source embedding");
  if (encdec)
    w->tgt_embed = L.load("tgt_embed.weight", {cfg.tgt_vocab_size, d}, "[tgt_vocab_size, d_model]",
                          "decoder_layers > 0 (an encoder-decoder model)");
  switch (cfg.positional_encoding) {
    case PositionalEncoding::Learned: {
      const std::string why = "positional_encoding is \"learned\"";
      w->src_pos = L.load("src_pos.weight", {cfg.max_positions, d}, "[max_positions, d_model]", why);
      if (encdec)
        w->tgt_pos = L.load("tgt_pos.weight", {cfg.max_positions, d}, "[max_positions, d_model]", why);
      break;
    }
    case PositionalEncoding::Sinusoidal: {
      const auto table = !L.uploads() ? std::vector<float>{} : sinusoidal_table(cfg.max_positions, cfg.d_model);
      w->src_pos = L.upload({cfg.max_positions, d}, table, "sinusoidal position table");
      if (encdec) w->tgt_pos = w->src_pos;  // the same read-only table serves both sides
      break;
    }
    case PositionalEncoding::None:
      break;
  }

  // nn.MultiheadAttention packs Q, K and V in one in_proj_weight/in_proj_bias.
  auto in_proj = [&](const std::string& p, const std::string& why) {
    return LinearWeights{L.load(p + ".in_proj_weight", {3 * d, d}, "[3·d_model, d_model]", why),
                         L.load(p + ".in_proj_bias", {3 * d}, "[3·d_model]", why)};
  };

  for (uint32_t i = 0; i < cfg.encoder_layers; ++i) {
    const std::string p = "transformer.encoder.layers." + std::to_string(i);
    const std::string why = "encoder_layers is " + std::to_string(cfg.encoder_layers);
    EncoderLayerWeights l;
    l.qkv = in_proj(p + ".self_attn", why);
    l.attn_out = L.linear(p + ".self_attn.out_proj", d, d, "d_model", "d_model", why);
    l.ff1 = L.linear(p + ".linear1", ff, d, "d_ff", "d_model", why);
    l.ff2 = L.linear(p + ".linear2", d, ff, "d_model", "d_ff", why);
    l.norm1 = L.norm(p + ".norm1", d, why);
    l.norm2 = L.norm(p + ".norm2", d, why);
    w->encoder.push_back(std::move(l));
  }

  for (uint32_t i = 0; i < cfg.decoder_layers; ++i) {
    const std::string p = "transformer.decoder.layers." + std::to_string(i);
    const std::string why = "decoder_layers is " + std::to_string(cfg.decoder_layers);
    DecoderLayerWeights l;
    l.self_qkv = in_proj(p + ".self_attn", why);
    l.self_out = L.linear(p + ".self_attn.out_proj", d, d, "d_model", "d_model", why);
    // Cross-attention: queries come from the decoder, keys and values from the
    // encoder output, so its packed projection is split into Q and KV.
    const auto cw = L.fetch(p + ".multihead_attn.in_proj_weight", {3 * d, d}, "[3·d_model, d_model]", why);
    const auto cb = L.fetch(p + ".multihead_attn.in_proj_bias", {3 * d}, "[3·d_model]", why);
    const std::string cn = p + ".multihead_attn.in_proj_";
    const size_t dd = size_t(d);
    l.cross_q = {L.upload_part({d, d}, cw, 0, dd * dd, cn + "weight"), L.upload_part({d}, cb, 0, dd, cn + "bias")};
    l.cross_kv = {L.upload_part({2 * d, d}, cw, dd * dd, 3 * dd * dd, cn + "weight"),
                  L.upload_part({2 * d}, cb, dd, 3 * dd, cn + "bias")};
    l.cross_out = L.linear(p + ".multihead_attn.out_proj", d, d, "d_model", "d_model", why);
    l.ff1 = L.linear(p + ".linear1", ff, d, "d_ff", "d_model", why);
    l.ff2 = L.linear(p + ".linear2", d, ff, "d_model", "d_ff", why);
    l.norm1 = L.norm(p + ".norm1", d, why);
    l.norm2 = L.norm(p + ".norm2", d, why);
    l.norm3 = L.norm(p + ".norm3", d, why);
    w->decoder.push_back(std::move(l));
  }

  std::string why;
  if (L.present("transformer.encoder.norm", why))
    w->encoder_norm = L.norm("transformer.encoder.norm", d, why);
  if (encdec && L.present("transformer.decoder.norm", why))
    w->decoder_norm = L.norm("transformer.decoder.norm", d, why);
  if (L.present("generator", why))
    w->generator = L.linear("generator", cfg.out_vocab(), d, encdec ? "tgt_vocab_size" : "src_vocab_size",
                            "d_model", why);

  L.warn_unused();
  return w;
}

}  // namespace

std::unique_ptr<ModelWeights> load_weights(Context& ctx, const ModelConfig& cfg, const SafeTensorsFile& file,
                                           Precision precision) {
  if (precision == Precision::F16 && !ctx.caps().storage_16bit)
    throw Error("load_weights: fp16 precision was requested but the device (" + ctx.caps().device_name +
                ", profile " + ctx.caps().profile + ") has no 16-bit storage; load the model in fp32 "
                "(F16 and BF16 files are converted)");
  const DType dtype = precision == Precision::F16 ? DType::F16 : DType::F32;
  Loader plan(&ctx, file, dtype, true, nullptr);
  build(plan, cfg);
  const MemoryStatus mem = ctx.impl().memory->status();
  if (plan.planned() > mem.available())
    throw VulkanError(VK_ERROR_OUT_OF_DEVICE_MEMORY,
                      "out of device memory: the weights need " + format_bytes(plan.planned()) + " in " +
                          dtype_name(dtype) + ", more than the device can give: " + mem.describe());
  std::vector<std::string> warnings;
  Loader L(&ctx, file, dtype, false, &warnings);
  auto w = build(L, cfg);
  w->warnings = std::move(warnings);
  return w;
}

void check_weights(const ModelConfig& cfg, const SafeTensorsFile& file) {
  Loader L(nullptr, file, DType::F32, false, nullptr);
  build(L, cfg);
}

}  // namespace vkf
