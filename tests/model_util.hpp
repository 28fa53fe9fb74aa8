// The small PyTorch-made models in tests/models/ (tools/make_test_models.py)
// and their golden outputs.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "test_util.hpp"
#include "vk/context_impl.hpp"
#include "vkformer/model.hpp"
#include "vkformer/session.hpp"

namespace vkf::test {

inline std::string model_dir(const std::string& name) { return VKF_MODELS_DIR "/" + name; }

/// A directory of `make hf-test-models` (tools/hf/make_tiny_models.py): under the
/// environment variable VKF_HF_MODELS if set, else the CMake cache variable of
/// that name. @throws vkf::Error saying what to run when it is missing.
inline std::string hf_model_dir(const std::string& name) {
  const char* env = std::getenv("VKF_HF_MODELS");
  const std::string dir = std::string(env && *env ? env : VKF_HF_MODELS_DIR) + "/" + name;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw Error(dir + " is missing: run `make hf-test-models` (or set VKF_HF_MODELS to its output)");
  return dir;
}

/// golden.json of a directory of `make hf-test-models`.
inline nlohmann::json hf_golden(const std::string& dir) {
  std::ifstream in(dir + "/golden.json");
  if (!in) throw Error("cannot open " + dir + "/golden.json");
  return nlohmann::json::parse(in);
}

/// A golden's per-sequence rows, flattened: [seq][pos][dim] or [seq][dim] -> [seq][...].
inline std::vector<std::vector<float>> golden_rows(const nlohmann::json& j) {
  std::vector<std::vector<float>> out;
  for (const nlohmann::json& seq : j) {
    std::vector<float> v;
    for (const nlohmann::json& r : seq) {
      if (r.is_array())
        for (const nlohmann::json& x : r) v.push_back(x.get<float>());
      else
        v.push_back(r.get<float>());
    }
    out.push_back(std::move(v));
  }
  return out;
}

/// The bound of an HF model's outputs (test_bert.cpp's header justifies it): 1e-4, but
/// 1e-2 for an F32 file stored as fp16 (its golden is of the unrounded weights).
inline double hf_bound(const std::string& name, Precision p) {
  const bool rounded_file = name.find("_f16") != std::string::npos || name.find("_bf16") != std::string::npos;
  return p == Precision::F16 && !rounded_file ? 1e-2 : 1e-4;
}

inline nlohmann::json golden(const std::string& name) {
  std::ifstream in(model_dir(name) + "/golden.json");
  if (!in) throw Error("cannot open " + model_dir(name) + "/golden.json");
  return nlohmann::json::parse(in);
}

inline std::vector<Ids> ids_of(const nlohmann::json& j) { return j.get<std::vector<Ids>>(); }

/// max |got − want| / max(1, max |want|) over the valid positions of each sequence.
inline double forward_error(const ForwardOutput& got, const std::vector<std::vector<float>>& want) {
  double err = 0, scale = 1;
  for (uint32_t b = 0; b < got.batch; ++b) {
    const size_t n = size_t(got.lengths[b]) * got.dim;
    if (want[b].size() != n) return INFINITY;
    for (size_t i = 0; i < n; ++i) {
      const double g = got.data[size_t(b) * got.len * got.dim + i];
      if (!std::isfinite(g)) return INFINITY;
      err = std::max(err, std::fabs(g - want[b][i]));
      scale = std::max(scale, std::fabs(double(want[b][i])));
    }
  }
  return err / scale;
}

/// Models every engine test runs on; the generating ones have a generator.
inline std::vector<std::string> all_models() {
  return {"encdec_postln_relu", "encdec_preln_gelu", "encoder_learned", "decoder_only", "encdec_fp16",
          "encoder_bf16"};
}
inline std::vector<std::string> generating_models() {
  return {"encdec_postln_relu", "encdec_preln_gelu", "decoder_only", "encdec_fp16"};
}

}  // namespace vkf::test
