// How a family's build_weights gets its tensors out of the model's safetensors
// file(s): checked by name and shape, counted in a dry run, then uploaded.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/tensor_files.hpp"
#include "model/weights.hpp"

namespace vkf {

/// A row-major [rows, cols] matrix as [cols, rows] (GPT-2's Conv1D weights as nn.Linear's).
std::vector<float> transposed(const std::vector<float>& v, int64_t rows, int64_t cols);

/// Checks and uploads. A dry run checks names and shapes and adds up the device
/// memory the uploads will take, without converting or uploading anything, so
/// a bad file or a model too large for the device fails before any upload.
class Loader {
 public:
  /// ctx null: check names, shapes and values only (check_weights), upload nothing.
  /// `files` (or a single SafeTensorsFile) must outlive the Loader.
  /// `dtype`: what upload() stores; `matrices`: what upload_matrix() stores
  /// (linear layers' [out, in] matrices, what gemm reads): a block format
  /// (Q8_0, Q4_0, Q4_1) quantizes them on the host, as ggml's reference quantizers do.
  Loader(Context* ctx, TensorFiles files, DType dtype, bool dry, std::vector<std::string>* warnings,
         DType matrices = DType::F32)
      : ctx_(ctx), files_(std::move(files)), dtype_(dtype), matrices_(is_block_dtype(matrices) ? matrices : dtype),
        dry_(dry), warnings_(warnings) {}

  bool dry() const { return dry_; }
  /// False in a dry run and when only checking: tables computed on the host are not needed.
  bool uploads() const { return ctx_ && !dry_; }
  /// Device bytes the uploads of a dry run would take.
  uint64_t planned() const { return planned_; }
  /// Bytes uploaded so far, per storage type.
  const std::map<DType, uint64_t>& uploaded() const { return uploaded_; }

  /// The tensor's values, after checking its shape (empty in a dry run). `dims`
  /// names the shape's config fields; `why` says what makes the config expect this tensor.
  std::vector<float> fetch(const std::string& name, const std::vector<int64_t>& shape,
                           const std::string& dims, const std::string& why);
  /// Uploads `v` (in a dry run: counts its bytes). `name` says what it is in errors.
  Tensor upload(const std::vector<int64_t>& shape, const std::vector<float>& v, const std::string& name) {
    return upload(shape, v, name, dtype_);
  }
  /// The same in `dtype`, whatever the model's precision.
  Tensor upload(const std::vector<int64_t>& shape, const std::vector<float>& v, const std::string& name,
                DType dtype);
  /// Uploads a linear layer's matrix [out, in] (what gemm reads as W): in the
  /// model's matrix format, quantized on the host when that is a block format.
  /// @throws vkf::Error naming the tensor when `in` is not a multiple of the block.
  Tensor upload_matrix(const std::vector<int64_t>& shape, const std::vector<float>& v, const std::string& name);
  /// fetch, then upload_matrix.
  Tensor load_matrix(const std::string& name, const std::vector<int64_t>& shape, const std::string& dims,
                     const std::string& why) {
    note_matrix(name, false);
    if (stored_blocks(name)) return load_stored(name, shape, dims, why);  // as stored, never re-quantized
    return upload_matrix(shape, fetch(name, shape, dims, why), name);
  }
  /// A linear layer's matrix stored transposed, [in, out] (GPT-2's Conv1D), uploaded
  /// as [out, in]. Stored in a block format it holds [out, in] already (blocks run
  /// along a row of the GEMM's W; `vkformer quantize` writes it so).
  Tensor load_transposed_matrix(const std::string& name, int64_t out, int64_t in, const std::string& out_dims,
                                const std::string& in_dims, const std::string& why);
  /// Makes the loader record, by tensor name, each linear layer's matrix it is
  /// asked for (true: stored transposed): what quantize_model quantizes.
  void record_matrices(std::map<std::string, bool>* matrices) { matrices_seen_ = matrices; }
  /// Uploads a tensor that arrives already in a block format (a GGUF tensor):
  /// `n` bytes of `format`'s blocks, byte for byte, as `shape` (values; the
  /// innermost dim a multiple of the block). In a dry run: counts its bytes.
  /// @throws vkf::Error naming the tensor when n is not the shape's bytes.
  Tensor upload_blocks(const std::vector<int64_t>& shape, WeightFormat format, const uint8_t* bytes, size_t n,
                       const std::string& name);
  /// What upload_matrix stores.
  DType matrix_dtype() const { return matrices_; }
  /// One of the matrices stacked_matrix stacks: tensor `name` [rows, in]; `dims` names its shape's config fields.
  struct MatrixPart {
    std::string name;
    int64_t rows;
    std::string dims;
  };
  /// The parts stacked by rows into one [Σ rows, in] linear layer's matrix (a fused
  /// QKV; the bias is the caller's), stored as upload_matrix stores it. Parts all
  /// stored in one block format (a GGUF's) are stacked as stored, whole rows of
  /// blocks, never re-quantized; parts stored in different formats (a Q4_K_M
  /// file's) stay apart, each as stored (LinearWeights::parts).
  LinearWeights stacked_matrix(const std::vector<MatrixPart>& parts, int64_t in, const std::string& why,
                               const std::string& name);
  /// Uploads v[begin, end) as `shape`: one part of a packed tensor.
  Tensor upload_part(const std::vector<int64_t>& shape, const std::vector<float>& v, size_t begin, size_t end,
                     const std::string& name);
  /// upload_matrix of v[begin, end): one linear layer's rows of a packed matrix.
  Tensor upload_matrix_part(const std::vector<int64_t>& shape, const std::vector<float>& v, size_t begin, size_t end,
                            const std::string& name);
  /// fetch, then upload; a tensor stored in a block format (a GGUF's) is uploaded as stored.
  Tensor load(const std::string& name, const std::vector<int64_t>& shape, const std::string& dims,
              const std::string& why) {
    if (stored_blocks(name)) return load_stored(name, shape, dims, why);
    return upload(shape, fetch(name, shape, dims, why), name);
  }
  /// The block format tensor `name` is stored in (a GGUF file's Q8_0, Q4_1...); nullopt
  /// for a float tensor, or one the files lack. fetch() dequantizes such a tensor.
  std::optional<DType> stored_blocks(const std::string& name) const;
  /// A block-format tensor's bytes as stored, after the checks of fetch (empty in a dry run).
  std::vector<uint8_t> fetch_blocks(const std::string& name, const std::vector<int64_t>& shape,
                                    const std::string& dims, const std::string& why);
  /// PREFIX.weight [out, in] and PREFIX.bias [out]; out_name and in_name name the config fields.
  LinearWeights linear(const std::string& prefix, int64_t out, int64_t in, const std::string& out_name,
                       const std::string& in_name, const std::string& why);
  /// PREFIX.weight and PREFIX.bias, [d_model] each.
  NormWeights norm(const std::string& prefix, int64_t d, const std::string& why);
  /// Optional modules come with both tensors or neither: if one is there, the
  /// other is expected. `why` then says which one is there.
  bool present(const std::string& prefix, std::string& why) const;
  /// Marks tensor `name`, if present, as known and not needed: no "unexpected
  /// tensor" warning (Hugging Face's position_ids buffer, which transformers
  /// also ignores on load).
  void ignore(const std::string& name) { used_.insert(name); }
  /// Whether the files hold tensor `name` (e.g. to tell a head's prefixed names from a bare model's).
  bool has(const std::string& name) const { return files_.has(name); }

  /// A position table [cfg.max_positions, width] is bound whole by the embedding
  /// op (position ids are read on the device): in a dry run with a device, notes
  /// a table that no binding can cover (binding_error()), so that load_weights
  /// refuses it, naming cfg.positions_key, before any table is computed or
  /// uploaded. `dtype` defaults to the model's.
  void check_position_table(const ModelConfig& cfg, int64_t width, std::optional<DType> dtype = {});
  /// The first table check_position_table found too large, or "".
  const std::string& binding_error() const { return binding_error_; }

  /// Adds "<file>: what" to the warnings; <file> is the single file or the shards' index.
  void warn(const std::string& what) const { warn_in(files_.path(), what); }
  /// Warns about every tensor of the files that no fetch asked for.
  void warn_unused() const;

 private:
  /// Marks `name` used and checks that it is there with `shape`. @throws vkf::Error as fetch.
  const SafeTensor& checked(const std::string& name, const std::vector<int64_t>& shape, const std::string& dims,
                            const std::string& why);
  /// A block-format tensor uploaded byte for byte (stored_blocks(name) is set).
  Tensor load_stored(const std::string& name, const std::vector<int64_t>& shape, const std::string& dims,
                     const std::string& why);
  /// Adds "<path>: what" to the warnings.
  void warn_in(const std::string& path, const std::string& what) const;
  void note_matrix(const std::string& name, bool transposed) {
    if (matrices_seen_ && files_.has(name)) (*matrices_seen_)[name] = transposed;
  }
  /// Adds an uploaded tensor's bytes to uploaded_.
  Tensor counted(Tensor t) {
    uploaded_[t.dtype()] += t.bytes();
    return t;
  }

  Context* ctx_;
  std::string binding_error_;
  TensorFiles files_;
  DType dtype_;
  DType matrices_;
  bool dry_;
  std::vector<std::string>* warnings_;
  std::set<std::string> used_;
  uint64_t planned_ = 0;
  std::map<DType, uint64_t> uploaded_;
  std::map<std::string, bool>* matrices_seen_ = nullptr;
};

}  // namespace vkf
