// quantize_model (`vkformer quantize`): a model directory rewritten with its
// linear layers' matrices in a block format, as `--precision` would quantize them
// at load, so that loading it uploads them as stored. Which tensors are the
// matrices is the family's own weight map's answer (a dry run of build_weights
// that records them), not a rule on names here.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/family.hpp"
#include "model/gguf_model.hpp"
#include "model/json_text.hpp"
#include "model/loader.hpp"
#include "model/tensor_files.hpp"
#include "vkformer/model.hpp"
#include "vkformer/reference.hpp"

namespace vkf {
namespace {

namespace fs = std::filesystem;

/// One tensor of the output file: where its bytes come from and how they are stored.
struct OutTensor {
  std::string name;
  std::string dtype;             ///< safetensors dtype as written ("U8" for blocks)
  std::vector<int64_t> shape;    ///< as written
  uint64_t bytes = 0;
  std::optional<DType> blocks;   ///< a block tensor: its format (__metadata__ names it)
  bool quantize = false;         ///< made here from a float tensor
  bool transposed = false;       ///< the file's [in, out] (GPT-2's Conv1D) quantized as [out, in]
};

/// Whether the tensor `where` names, of type `stored` ("F16", "Q4_1") and rows of `row`
/// values, is quantized into `format`: a linear layer's float matrix is; one already in
/// `format` is kept as it is. @throws vkf::Error for a matrix in another block format,
/// one not of floats, and rows that are not whole blocks.
bool quantizes(const std::string& where, bool matrix, const std::string& stored, int64_t row, DType format) {
  if (!matrix) return false;
  const std::optional<DType> blocks = block_dtype_named(stored);
  if (blocks && *blocks != format)
    throw Error(where + " is stored in " + stored + " already; quantize from an F32, F16 or BF16 checkpoint");
  if (!blocks && !is_float_dtype(stored))
    throw Error(where + " " + stored + ": a linear layer's matrix must be F32, F16 or BF16");
  if (row <= 0 || row % dtype_block(format))
    throw Error(where + ": rows of " + std::to_string(row) + " values are not whole " + dtype_name(format) +
                " blocks of " + std::to_string(dtype_block(format)) + " (keep this model in f16 or f32)");
  return !blocks;
}

/// The output entry of file tensor `name` (`matrix`: a linear layer's, with its transposition).
OutTensor plan(const TensorFiles& files, const std::string& name, const std::optional<bool>& matrix, DType format) {
  const SafeTensor& t = files.get(name);
  const std::string where = files.path_of(name) + ": tensor \"" + printable(name) + "\" " + shape_string(t.shape);
  OutTensor o{name, t.dtype, t.shape, t.bytes, block_dtype_named(t.dtype), false, matrix.value_or(false)};
  if (o.transposed && t.shape.size() == 2 && !o.blocks) o.shape = {t.shape[1], t.shape[0]};
  o.quantize = quantizes(where, matrix.has_value(), t.dtype, o.shape.empty() ? 0 : o.shape.back(), format);
  if (o.quantize) o.blocks = format;
  if (!o.blocks) return o;
  // Blocks are written as U8 rows of their bytes: [rows, bytes of a row].
  const int64_t row = o.shape.back();
  uint64_t rows = 1;
  for (size_t i = 0; i + 1 < o.shape.size(); ++i) rows *= uint64_t(o.shape[i]);
  o.bytes = dtype_bytes(*o.blocks, rows * uint64_t(row));
  o.dtype = "U8";
  o.shape = {int64_t(rows), int64_t(o.bytes / rows)};
  return o;
}

/// The blocks of float tensor o.name, transposed first when o says so.
std::vector<uint8_t> quantized(const TensorFiles& files, const OutTensor& o) {
  std::vector<float> v = files.to_f32(o.name);
  if (o.transposed) v = transposed(v, files.get(o.name).shape[0], files.get(o.name).shape[1]);  // [in, out]
  return ref::quantize(weight_format_of(*o.blocks), v.data(), v.size());
}

/// Writes OUT/model.safetensors: the header, then each tensor's bytes in order.
void write_safetensors(const std::string& path, const TensorFiles& files, const std::vector<OutTensor>& out,
                       DType format) {
  nlohmann::ordered_json h;
  h["__metadata__"] = {{"format", "pt"}, {"vkformer.quantized", dtype_name(format)}};
  uint64_t offset = 0;
  for (const OutTensor& o : out) {
    h[o.name] = {{"dtype", o.dtype}, {"shape", o.shape}, {"data_offsets", {offset, offset + o.bytes}}};
    offset += o.bytes;
    if (o.blocks) h["__metadata__"][kBlockFormatKey + o.name] = block_dtype_spelled(*o.blocks);
  }
  std::string header = h.dump();
  header.append((8 - header.size() % 8) % 8, ' ');  // the data section 8-aligned, as safetensors writes it
  std::ofstream f(path, std::ios::binary);
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(header.size()) >> (8 * i));
  f.write(reinterpret_cast<const char*>(len), 8);
  f.write(header.data(), std::streamsize(header.size()));
  for (const OutTensor& o : out) {
    if (o.quantize) {
      const std::vector<uint8_t> b = quantized(files, o);
      f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    } else {
      f.write(reinterpret_cast<const char*>(files.bytes(o.name)), std::streamsize(o.bytes));
    }
    if (!f) break;
  }
  f.close();
  if (!f) throw Error(path + ": cannot write (disk full?)");
}

/// The linear layers' matrices among `files` (true: stored transposed), by the
/// family's own weight map: a dry run of build_weights that records them.
std::map<std::string, bool> linear_matrices(const ModelConfig& config, const TensorFiles& files, DType format) {
  std::map<std::string, bool> matrices;
  Loader L(nullptr, files, DType::F32, true, nullptr, format);
  L.record_matrices(&matrices);
  family_of(config).build_weights(L, config);
  return matrices;
}

/// llama.cpp's general.file_type of a file whose matrices are in `format` (LLAMA_FTYPE_MOSTLY_*).
uint32_t llama_file_type(DType format) {
  return format == DType::Q8_0 ? 7 : format == DType::Q4_0 ? 2 : 3;
}

/// A GGUF file's tensors, the linear layers' float matrices quantized: a GGUF file.
QuantizeReport write_gguf(const std::shared_ptr<const GgufFile>& in, const std::string& path, DType format) {
  const SafeTensorsFile view = gguf_tensors(in);
  const std::map<std::string, bool> matrices = linear_matrices(gguf_model_config(*in), view, format);
  const GgmlType out_type = format == DType::Q8_0 ? GgmlType::Q8_0 : format == DType::Q4_0 ? GgmlType::Q4_0
                                                                                            : GgmlType::Q4_1;
  QuantizeReport r;
  std::vector<GgufTensorOut> out;
  std::vector<bool> quantize;
  for (const GgufTensor& t : in->tensors()) {
    const std::string hf = gguf_hf_name(t.name);
    const std::string where = in->path() + ": tensor \"" + printable(t.name) + "\" " + shape_string(t.shape);
    const bool q = quantizes(where, matrices.count(hf.empty() ? t.name : hf) != 0, ggml_type_name(t.type),
                             t.shape.back(), format);
    out.push_back({t.name, q ? out_type : t.type, t.shape, q ? dtype_bytes(format, t.elements) : t.bytes});
    quantize.push_back(q);
    r.quantized += q;
    r.bytes_in += t.bytes;
    r.bytes_out += out.back().bytes;
  }
  r.tensors = out.size();
  const std::string head = in->head({{"general.file_type", GgufValue::uint32(llama_file_type(format))}}, out);
  std::ofstream f(path, std::ios::binary);
  f.write(head.data(), std::streamsize(head.size()));
  const std::string pad(in->alignment(), '\0');
  for (size_t i = 0; i < out.size() && f; ++i) {
    const GgufTensor& t = in->tensors()[i];
    if (quantize[i]) {
      const std::vector<float> v = in->to_f32(t.name);
      const std::vector<uint8_t> b = ref::quantize(weight_format_of(format), v.data(), v.size());
      f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    } else {
      f.write(reinterpret_cast<const char*>(t.data), std::streamsize(t.bytes));
    }
    f.write(pad.data(), std::streamsize((in->alignment() - out[i].bytes % in->alignment()) % in->alignment()));
  }
  f.close();
  if (!f) throw Error(path + ": cannot write (disk full?)");
  return r;
}

/// A model directory's tensors, the linear layers' float matrices quantized: DIR/model.safetensors.
QuantizeReport write_dir_weights(const TensorFiles& files, const ModelConfig& config, const std::string& path,
                                 DType format) {
  const std::map<std::string, bool> matrices = linear_matrices(config, files, format);
  std::vector<OutTensor> out;
  QuantizeReport r;
  for (const SafeTensorsFile* f : files.files())
    for (const auto& [name, t] : f->tensors()) {
      const auto m = matrices.find(name);
      out.push_back(plan(files, name, m == matrices.end() ? std::nullopt : std::optional<bool>(m->second), format));
      r.bytes_in += t.bytes;
      r.bytes_out += out.back().bytes;
      r.quantized += out.back().quantize;
    }
  r.tensors = out.size();
  std::sort(out.begin(), out.end(), [](const OutTensor& a, const OutTensor& b) { return a.name < b.name; });
  write_safetensors(path, files, out, format);
  return r;
}

}  // namespace

QuantizeReport quantize_model(const std::string& in_dir, const std::string& out_dir, Precision format) {
  if (format != Precision::Q8_0 && format != Precision::Q4_0 && format != Precision::Q4_1)
    throw Error(std::string("quantize: no quantizer for ") + weight_format_name(format) + " (q8_0, q4_0 or q4_1)");
  std::error_code ec;
  if (out_dir.empty()) throw Error("quantize: the output path is empty");
  if (fs::exists(out_dir, ec) || fs::is_symlink(out_dir, ec))
    throw Error(out_dir + ": already exists; quantize writes a new one and never overwrites");
  const bool gguf = is_gguf_file(in_dir);
  std::shared_ptr<const GgufFile> in_gguf;
  std::optional<WeightFiles> weights;
  ModelConfig config;
  if (gguf) {
    in_gguf = std::make_shared<const GgufFile>(in_dir);
  } else {
    config = load_config((fs::path(in_dir) / "config.json").string());
    weights.emplace(weights_path(in_dir));
  }
  const DType dt = weight_format_info(format).dtype;
  QuantizeReport r;

  // Into a sibling path, renamed at the end: OUT appears whole or not at all.
  const fs::path target(out_dir);
  const fs::path tmp = target.parent_path() / (target.filename().string() + ".partial-" + std::to_string(::getpid()));
  fs::remove_all(tmp, ec);
  try {
    if (gguf) {
      r = write_gguf(in_gguf, tmp.string(), dt);
      fs::rename(tmp, target);
      return r;
    }
    fs::create_directories(tmp);
    // Everything but the weights (config, tokenizer, sentence-transformers' modules) as it is.
    for (const fs::directory_entry& e : fs::directory_iterator(in_dir)) {
      const std::string n = e.path().filename().string();
      const bool weights_file = n.size() > 12 && (n.rfind(".safetensors") == n.size() - 12 ||
                                                  n.find(".safetensors.index.json") != std::string::npos);
      // OUT_DIR may be inside IN_DIR: never copy the output being written into itself.
      if (!weights_file && !fs::equivalent(e.path(), tmp, ec)) fs::copy(e.path(), tmp / n, fs::copy_options::recursive);
    }
    r = write_dir_weights(weights->view(), config, (tmp / "model.safetensors").string(), dt);
    fs::rename(tmp, target);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp, ec);
    throw Error(out_dir + ": cannot write: " + e.code().message());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  return r;
}

}  // namespace vkf
