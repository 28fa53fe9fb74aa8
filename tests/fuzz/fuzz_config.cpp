// Any text is either a config.json that parse_config accepts, satisfying the
// invariants the engine relies on, or a vkf::Error. Anything else (a crash, a
// sanitizer report, another exception) is a finding.
#include <cmath>
#include <cstdint>
#include <string>

#include "families/t5/config.hpp"
#include "model/config.hpp"

namespace {

/// Attention heads the kernels can run: d_model split into heads of ≤ 256, or
/// T5's own head width d_kv (≤ 256), whose heads need not divide d_model.
bool heads_fit(const vkf::ModelConfig& c) {
  if (c.n_heads == 0) return false;
  if (c.model_type == "t5") return vkf::t5_config(c).d_kv <= 256;
  return c.d_model % c.n_heads == 0 && c.d_model / c.n_heads <= 256;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const vkf::ModelConfig c =
        vkf::parse_config("fuzz/config.json", std::string(reinterpret_cast<const char*>(data), size));
    const bool ok = c.d_model > 0 && heads_fit(c) && c.d_ff > 0 && c.encoder_layers > 0 &&
                    c.max_positions > 0 && c.src_vocab_size > 0 && c.layer_norm_eps > 0 &&
                    std::isfinite(c.layer_norm_eps) &&
                    !(c.causal && c.encoder_decoder()) &&
                    // -1: no padding token (GPT-2 pads by position); else an id of the vocabulary
                    (c.pad_id == -1 || (c.pad_id >= 0 && uint32_t(c.pad_id) < c.src_vocab_size)) && c.bos_id >= 0 &&
                    uint32_t(c.bos_id) < c.out_vocab() && c.eos_id >= 0 && uint32_t(c.eos_id) < c.out_vocab();
    if (!ok) __builtin_trap();  // accepted a config the engine cannot run
  } catch (const vkf::Error& e) {
    // Messages are one line of reasonable length, whatever the input.
    const std::string msg = e.what();
    if (msg.find('\n') != std::string::npos || msg.size() > 1000) __builtin_trap();
  }
  return 0;
}
