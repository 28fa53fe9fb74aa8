// Any text is either a config.json that parse_config accepts, satisfying the
// invariants the engine relies on, or a vkf::Error. Anything else (a crash, a
// sanitizer report, another exception) is a finding.
#include <cmath>
#include <cstdint>
#include <string>

#include "model/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const vkf::ModelConfig c =
        vkf::parse_config("fuzz/config.json", std::string(reinterpret_cast<const char*>(data), size));
    const bool ok = c.d_model > 0 && c.n_heads > 0 && c.d_model % c.n_heads == 0 &&
                    c.d_model / c.n_heads <= 256 && c.d_ff > 0 && c.encoder_layers > 0 &&
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
