// The model commands: `vkformer forward` (a model directory, token ids in, an
// .npy file out; `generate` is in generate_command.hpp), `vkformer
// profile` and `vkformer bench model` (timing on random ids, bench_model.cpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "vkformer/context.hpp"
#include "vkformer/model.hpp"
#include "vkformer/session.hpp"

namespace vkf::tools {

struct ModelRunOptions {
  std::string model_dir;
  std::vector<std::string> src_ids, tgt_ids;  ///< "5,17,42", one per sequence
  std::vector<std::string> type_ids;          ///< forward: token types, one per source
  std::string output;                         ///< forward: RunOptions::output
  std::string precision = "fp32";
  std::string out;                            ///< forward: the .npy path
};

struct QuantizeOptions {
  std::string in, out, type;
};
/// `vkformer quantize IN OUT --type q4_0` (vkf::quantize_model).
int run_quantize(const QuantizeOptions& o);

/// "5,17,42" per argument -> ids; `option` names the argument in errors.
/// @throws vkf::Error for anything but non-negative 32-bit integers.
std::vector<Ids> parse_ids(const std::vector<std::string>& args, const char* option);

/// "fp32" or "fp16" (also "f32", "f16"), or "q8_0", "q4_0", "q4_1" (linear
/// layers quantized at load). @throws vkf::Error otherwise.
Precision parse_precision(const std::string& p);

/// Model::load, then each of the model's warnings on stderr as "vkformer: warning: ...".
std::shared_ptr<Model> load_model(Context& ctx, const std::string& dir, const std::string& precision);

/// Each returns the process exit code; errors are thrown as vkf::Error.
int run_forward(const ContextOptions& ctx_opts, const ModelRunOptions& o);
struct ProfileOptions {
  std::string model_dir, precision = "fp32";
  unsigned batch = 1, src_len = 64, tgt_len = 64, repeat = 5;
  std::string kv_cache = "auto";  ///< --kv-cache of the decode step's cache
};
/// `vkformer profile`: forward time, and decode-step time with the KV cache
/// against a full recompute at the same position, with submission counts.
int run_profile(const ContextOptions& ctx_opts, const ProfileOptions& o);

/// The inputs of one measurement: a forward pass, and a decode step at
/// `position` (tgt_len - 1 for enc–dec: the last target position of the forward
/// pass; src_len + tgt_len for decoder-only) with
/// the cache, against a forward pass over the same prefix (a step without it).
struct Workload {
  bool encdec = false, decodes = false;
  std::vector<Ids> src, tgt;                  ///< the forward pass
  std::vector<Ids> prefix_src, prefix_tgt;    ///< positions [0, position]: the full recompute
  uint32_t position = 0, max_new_tokens = 0;  ///< generate()'s last step is at `position`
  uint64_t tokens = 0;                        ///< positions one forward pass runs through
  KvCacheType kv_cache = KvCacheType::Auto;   ///< the decode step's cache (--kv-cache)
};

/// The workload of `profile`, `bench model` and `tune --model`: random ids
/// (never pad, bos or eos) of the given batch and lengths. @throws UsageError for
/// sizes of 0 or beyond the model's max_positions.
Workload make_workload(const Model& model, const ProfileOptions& o);

struct BenchModelOptions : ProfileOptions {
  std::string json, svg;  ///< output files; empty: none
};
/// `vkformer bench model`: what `profile` measures, plus device time per layer
/// and per op kind (timestamp queries) for a forward pass and a decode step,
/// as a table, JSON and SVG bar charts.
int run_bench_model(const ContextOptions& ctx_opts, const BenchModelOptions& o);
/// `bench model --tuning compare`: the forward pass and the decode step with the
/// engine's rules and with the tuning database, alternating in one process.
int run_bench_model_compare(const ContextOptions& ctx_opts, const BenchModelOptions& o);
/// "batch 1, src 64, tgt 64".
std::string shape_text(const ProfileOptions& o, const Workload& w);
/// "41.2 MiB (q4_0 30.1 MiB, f16 11.1 MiB)": the weights' device memory per storage type.
std::string weight_memory_text(const Model& m);
/// "model DIR: 6+6 layers, d_model 512, ..., q4_0 weights: 41.2 MiB (...)".
void print_model(const Model& m, const ProfileOptions& o);

/// `vkformer devices [--json]`.
int run_devices(const ContextOptions& ctx_opts, bool json);

}  // namespace vkf::tools
