#include "model/loader.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "model/json_text.hpp"
#include "model/safetensors.hpp"
#include "vkformer/reference.hpp"
#include "vk/context_impl.hpp"

namespace vkf {
namespace {

std::string tensor_what(const std::string& name, const std::vector<int64_t>& shape, DType dtype) {
  return "tensor \"" + printable(name) + "\" " + shape_string(shape) + " " + dtype_name(dtype);
}

}  // namespace

std::vector<float> transposed(const std::vector<float>& v, int64_t rows, int64_t cols) {
  std::vector<float> t(v.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[size_t(j * rows + i)] = v[size_t(i * cols + j)];
  return t;
}

const SafeTensor& Loader::checked(const std::string& name, const std::vector<int64_t>& shape,
                                  const std::string& dims, const std::string& why) {
  used_.insert(name);
  if (!files_.has(name))
    throw Error(files_.path_of(name) + ": missing tensor \"" + printable(name) + "\" " + shape_string(shape) + " = " +
                dims + " (expected because " + why + ")");
  const SafeTensor& t = files_.get(name);
  if (t.shape != shape)
    throw Error(files_.path_of(name) + ": tensor \"" + printable(name) + "\" has shape " + shape_string(t.shape) +
                ", expected " + shape_string(shape) + " = " + dims);
  return t;
}

std::optional<DType> Loader::stored_blocks(const std::string& name) const {
  if (!files_.has(name)) return std::nullopt;
  return block_dtype_named(files_.get(name).dtype);  // GGUF's names: "Q4_1"
}

std::vector<uint8_t> Loader::fetch_blocks(const std::string& name, const std::vector<int64_t>& shape,
                                          const std::string& dims, const std::string& why) {
  const SafeTensor& t = checked(name, shape, dims, why);
  if (dry_ || !stored_blocks(name)) return {};
  const uint8_t* p = files_.bytes(name);
  return std::vector<uint8_t>(p, p + t.bytes);
}

Tensor Loader::load_stored(const std::string& name, const std::vector<int64_t>& shape, const std::string& dims,
                           const std::string& why) {
  const DType dt = *stored_blocks(name);
  const SafeTensor& t = checked(name, shape, dims, why);
  return upload_blocks(shape, weight_format_of(dt), dry_ ? nullptr : files_.bytes(name), t.bytes, name);
}

std::vector<float> Loader::fetch(const std::string& name, const std::vector<int64_t>& shape,
                                 const std::string& dims, const std::string& why) {
  const SafeTensor& t = checked(name, shape, dims, why);
  const std::string& path = files_.path_of(name);
  const std::optional<DType> blocks = stored_blocks(name);
  if (!is_float_dtype(t.dtype) && !blocks) throw Error(path + ": " + unsupported_dtype(name, t.dtype));
  if (dry_) return {};
  std::vector<float> v = blocks ? ref::dequantize(weight_format_of(*blocks), files_.bytes(name), size_t(t.bytes) /
                                                      dtype_block_bytes(*blocks) * dtype_block(*blocks))
                                : files_.to_f32(name);
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
    warn_in(path, "tensor \"" + printable(name) + "\" holds " + std::to_string(nan) + " NaN and " + std::to_string(inf) +
         " Inf values");
  if (overflow)
    warn_in(path, "tensor \"" + printable(name) + "\" has " + std::to_string(overflow) +
         " values beyond the fp16 range; they become Inf in fp16 precision");
  return v;
}

Tensor Loader::upload(const std::vector<int64_t>& shape, const std::vector<float>& v, const std::string& name,
                      DType dtype) {
  if (dry_) {
    // Saturating: a config can ask for absurd sizes (the sinusoidal table is not in the file).
    constexpr uint64_t kCap = uint64_t(1) << 62;
    uint64_t n = 1;
    for (int64_t d : shape) n = d > 0 && n > kCap / uint64_t(d) ? kCap : n * uint64_t(d);
    n = n >= kCap / 4 ? kCap : is_block_dtype(dtype) ? (dtype_bytes(dtype, n) + 3) / 4 * 4 : dtype_bytes(dtype, n);
    planned_ = std::min(kCap, planned_ + (ctx_ ? internals(*ctx_).memory->footprint(n) : n));
    return {};
  }
  if (!ctx_) return {};  // checking only
  return with_context([&] { return "uploading " + tensor_what(name, shape, dtype); },
                      [&] { return counted(ctx_->tensor(shape, v, dtype)); });
}

Tensor Loader::upload_matrix(const std::vector<int64_t>& shape, const std::vector<float>& v,
                             const std::string& name) {
  if (!is_block_dtype(matrices_)) return upload(shape, v, name);
  const uint32_t block = dtype_block(matrices_);
  if (shape.empty() || shape.back() % block)
    throw Error(files_.path() + ": " + tensor_what(name, shape, matrices_) + ": " + dtype_name(matrices_) +
                " quantizes rows in blocks of " + std::to_string(block) + " values, and the rows of this linear layer have " +
                std::to_string(shape.empty() ? 0 : shape.back()) + " (not a multiple); load the model in f16 or f32");
  if (dry_ || !ctx_) return upload(shape, v, name, matrices_);
  return with_context([&] { return "quantizing and uploading " + tensor_what(name, shape, matrices_); }, [&] {
    const std::vector<uint8_t> b = ref::quantize(weight_format_of(matrices_), v.data(), v.size());
    Tensor t = ctx_->tensor(shape, matrices_);
    ctx_->write_bytes(t, b.data(), b.size());
    return counted(std::move(t));
  });
}

Tensor Loader::upload_blocks(const std::vector<int64_t>& shape, WeightFormat format, const uint8_t* bytes, size_t n,
                             const std::string& name) {
  const DType dt = weight_format_info(format).dtype;
  uint64_t values = shape.empty() ? 0 : 1;
  for (int64_t d : shape) values *= uint64_t(std::max<int64_t>(d, 0));
  const uint32_t block = dtype_block(dt);
  if (shape.empty() || shape.back() <= 0 || shape.back() % block)
    throw Error(files_.path() + ": " + tensor_what(name, shape, dt) + ": the innermost dim must be a multiple of the " +
                dtype_name(dt) + " block of " + std::to_string(block) + " values");
  if (n != dtype_bytes(dt, values))
    throw Error(files_.path() + ": " + tensor_what(name, shape, dt) + " takes " +
                std::to_string(dtype_bytes(dt, values)) + " bytes, got " + std::to_string(n));
  if (dry_ || !ctx_) return upload(shape, {}, name, dt);
  return with_context([&] { return "uploading " + tensor_what(name, shape, dt); }, [&] {
    Tensor t = ctx_->tensor(shape, dt);
    ctx_->write_bytes(t, bytes, n);
    return counted(std::move(t));
  });
}

Tensor Loader::upload_part(const std::vector<int64_t>& shape, const std::vector<float>& v, size_t begin,
                           size_t end, const std::string& name) {
  if (dry_) return upload(shape, {}, name);
  return upload(shape, {v.begin() + std::ptrdiff_t(begin), v.begin() + std::ptrdiff_t(end)}, name);
}

Tensor Loader::upload_matrix_part(const std::vector<int64_t>& shape, const std::vector<float>& v, size_t begin,
                                  size_t end, const std::string& name) {
  if (dry_) return upload_matrix(shape, {}, name);
  return upload_matrix(shape, {v.begin() + std::ptrdiff_t(begin), v.begin() + std::ptrdiff_t(end)}, name);
}

Tensor Loader::load_transposed_matrix(const std::string& name, int64_t out, int64_t in, const std::string& out_dims,
                                      const std::string& in_dims, const std::string& why) {
  note_matrix(name, true);
  if (stored_blocks(name)) return load_stored(name, {out, in}, "[" + out_dims + ", " + in_dims + "]", why);
  const std::vector<float> w = fetch(name, {in, out}, "[" + in_dims + ", " + out_dims + "]", why);
  return upload_matrix({out, in}, w.empty() ? w : transposed(w, in, out), name + " (transposed)");
}

LinearWeights Loader::stacked_matrix(const std::vector<MatrixPart>& parts, int64_t in, const std::string& why,
                                     const std::string& name) {
  std::set<std::optional<DType>> stored;
  for (const MatrixPart& part : parts) {
    note_matrix(part.name, false);
    stored.insert(stored_blocks(part.name));
  }
  LinearWeights out;
  if (stored.size() > 1) {  // formats differ: one matrix each, as stored where a block format
    for (const MatrixPart& part : parts) {
      const std::vector<int64_t> shape{part.rows, in};
      const std::string dims = "[" + part.dims + "]";
      out.parts.push_back(stored_blocks(part.name) ? load_stored(part.name, shape, dims, why)
                                                   : upload_matrix(shape, fetch(part.name, shape, dims, why), part.name));
    }
    return out;
  }
  // One storage for all: a block format (stacked as stored) or none (floats, stored as upload_matrix does).
  const bool blocks = !stored.empty() && stored.begin()->has_value();
  const DType dt = blocks ? **stored.begin() : DType::F32;
  int64_t rows = 0;
  std::vector<float> w;
  std::vector<uint8_t> wb;
  for (const MatrixPart& part : parts) {
    const std::string dims = "[" + part.dims + "]";
    if (blocks) {
      const std::vector<uint8_t> b = fetch_blocks(part.name, {part.rows, in}, dims, why);
      wb.insert(wb.end(), b.begin(), b.end());
    } else {
      const std::vector<float> v = fetch(part.name, {part.rows, in}, dims, why);
      w.insert(w.end(), v.begin(), v.end());
    }
    rows += part.rows;
  }
  if (!blocks) {
    out.w = upload_matrix({rows, in}, w, name);
  } else {
    const size_t n = dry_ ? size_t(dtype_bytes(dt, uint64_t(rows) * uint64_t(in))) : wb.size();
    out.w = upload_blocks({rows, in}, weight_format_of(dt), wb.data(), n, name);
  }
  return out;
}

LinearWeights Loader::linear(const std::string& prefix, int64_t out, int64_t in, const std::string& out_name,
                             const std::string& in_name, const std::string& why) {
  return {load_matrix(prefix + ".weight", {out, in}, "[" + out_name + ", " + in_name + "]", why),
          load(prefix + ".bias", {out}, "[" + out_name + "]", why)};
}

NormWeights Loader::norm(const std::string& prefix, int64_t d, const std::string& why) {
  return {load(prefix + ".weight", {d}, "[d_model]", why), load(prefix + ".bias", {d}, "[d_model]", why)};
}

bool Loader::present(const std::string& prefix, std::string& why) const {
  for (const char* s : {".weight", ".bias"})
    if (files_.has(prefix + s)) {
      why = "\"" + prefix + s + "\" is present";
      return true;
    }
  return false;
}

void Loader::check_position_table(const ModelConfig& cfg, int64_t width, std::optional<DType> dtype) {
  if (!ctx_ || !dry_ || !binding_error_.empty()) return;
  const Capabilities& caps = ctx_->caps();
  const uint64_t row = uint64_t(width) * dtype_size(dtype.value_or(dtype_));
  const uint64_t range = caps.max_storage_buffer_range;
  if (row == 0 || uint64_t(cfg.max_positions) <= range / row) return;
  const std::string& weights = files_.path();
  const size_t slash = weights.rfind('/');
  const std::string config = (slash == std::string::npos ? "" : weights.substr(0, slash + 1)) + "config.json";
  binding_error_ = config + ": \"" + cfg.positions_key + "\" " + std::to_string(cfg.max_positions) +
                   " needs a position table [" + std::to_string(cfg.max_positions) + ", " + std::to_string(width) +
                   "] " + dtype_name(dtype.value_or(dtype_)) + " of " +
                   format_bytes(uint64_t(cfg.max_positions) * row) +
                   ", more than one binding of the device covers (maxStorageBufferRange " + format_bytes(range) +
                   ", profile " + caps.profile + "): at most " + std::to_string(range / row) + " positions";
}

void Loader::warn_in(const std::string& path, const std::string& what) const {
  if (warnings_) warnings_->push_back(path + ": " + what);
}

void Loader::warn_unused() const {
  // One line per unexpected tensor up to a few, then a count: a file of 200,000
  // stray tensors must not bury the other warnings under megabytes of them.
  constexpr size_t kShown = 8;
  for (const SafeTensorsFile* f : files_.files()) {
    size_t n = 0;
    for (const auto& [name, t] : f->tensors())
      if (!used_.count(name) && n++ < kShown)
        warn_in(f->path(), "unexpected tensor \"" + printable(name) + "\" " + shape_string(t.shape) + " " +
                               t.dtype + " is ignored");
    if (n > kShown)
      warn_in(f->path(), "... and " + std::to_string(n - kShown) + " more unexpected tensors are ignored");
  }
}

}  // namespace vkf
