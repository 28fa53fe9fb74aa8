// Any byte string is either a safetensors file that SafeTensorsFile accepts,
// with every tensor readable and sized as its shape says, or a vkf::Error.
// Accepted files also go through the weights checks (check_weights) against
// the configs of the test models, so a seed built from a real model reaches
// the name and shape checks. Anything else (a crash, a sanitizer report,
// another exception) is a finding.
#include <cstdint>
#include <string>
#include <vector>

#include "model/safetensors.hpp"
#include "model/weights.hpp"
#include "vkformer/model.hpp"

namespace {

const std::vector<vkf::ModelConfig>& test_configs() {
  static const std::vector<vkf::ModelConfig> configs = [] {
    std::vector<vkf::ModelConfig> v;
    for (const char* m : {"decoder_only", "encdec_fp16", "encdec_postln_relu", "encdec_preln_gelu",
                          "encoder_bf16", "encoder_learned"})
      v.push_back(vkf::load_config(std::string(VKF_MODELS_DIR) + "/" + m + "/config.json"));
    return v;
  }();
  return configs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& configs = test_configs();
  try {
    // An exactly sized copy, so ASan sees any read past the end of the file.
    const auto file = vkf::SafeTensorsFile::from_memory("fuzz.safetensors", std::vector<uint8_t>(data, data + size));
    for (const auto& [name, t] : file.tensors()) {
      if (!vkf::is_float_dtype(t.dtype)) continue;  // valid, but not convertible
      uint64_t n = 1;
      for (int64_t d : t.shape) n *= uint64_t(d);
      if (file.to_f32(name).size() != n) __builtin_trap();  // parser and reader disagree
    }
    for (const auto& c : configs) {
      try {
        vkf::check_weights(c, file);
      } catch (const vkf::Error&) {
      }
    }
  } catch (const vkf::Error& e) {
    // Messages are one line of reasonable length, whatever the input.
    const std::string msg = e.what();
    if (msg.find('\n') != std::string::npos || msg.size() > 1000) __builtin_trap();
  }
  return 0;
}
