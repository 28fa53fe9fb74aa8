// Maps the state_dict() names of the PyTorch model (docs/model-format.md) onto
// ModelWeights. Every tensor the config implies must be there with its exact
// shape; anything else in the file is reported and ignored.
#include "model/weights.hpp"

#include <cmath>
#include <iostream>
#include <set>

#include "model/safetensors.hpp"

namespace vkf {
namespace {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

class Loader {
 public:
  /// ctx null: check names, shapes and values only (check_weights), upload nothing.
  Loader(Context* ctx, const SafeTensorsFile& file, DType dtype) : ctx_(ctx), file_(file), dtype_(dtype) {}

  /// The tensor's values, after checking its shape. `dims` names the shape's
  /// config fields; `why` says what makes the config expect this tensor.
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

  Tensor upload(const std::vector<int64_t>& shape, const std::vector<float>& v) {
    return ctx_ ? ctx_->tensor(shape, v, dtype_) : Tensor();
  }
  Tensor load(const std::string& name, const std::vector<int64_t>& shape, const std::string& dims,
              const std::string& why) {
    return upload(shape, fetch(name, shape, dims, why));
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
    if (!ctx_) return;  // checking only: the caller wants errors, not advice
    std::cerr << "vkformer: warning: " << file_.path() << ": " << what << "\n";
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
  std::set<std::string> used_;
};

}  // namespace

namespace {

std::unique_ptr<ModelWeights> build_weights(Context* ctx, const ModelConfig& cfg, const SafeTensorsFile& file,
                                            Precision precision) {
  Loader L(ctx, file, precision == Precision::F16 ? DType::F16 : DType::F32);
  auto w = std::make_unique<ModelWeights>();
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
      const auto table = sinusoidal_table(cfg.max_positions, cfg.d_model);
      w->src_pos = L.upload({cfg.max_positions, d}, table);
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
    l.cross_q = {L.upload({d, d}, {cw.begin(), cw.begin() + d * d}),
                 L.upload({d}, {cb.begin(), cb.begin() + d})};
    l.cross_kv = {L.upload({2 * d, d}, {cw.begin() + d * d, cw.end()}),
                  L.upload({2 * d}, {cb.begin() + d, cb.end()})};
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
                ") has no 16-bit storage; load the model in fp32");
  return build_weights(&ctx, cfg, file, precision);
}

void check_weights(const ModelConfig& cfg, const SafeTensorsFile& file) {
  build_weights(nullptr, cfg, file, Precision::F32);
}

}  // namespace vkf
