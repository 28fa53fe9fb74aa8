// The KV cache's storage: GenerateOptions::kv_cache resolved against the
// model's family and the device (vkformer/session.hpp).
#include "vkformer/session.hpp"

namespace vkf {

const char* kv_cache_type_name(KvCacheType t) {
  switch (t) {
    case KvCacheType::F32: return "f32";
    case KvCacheType::F16: return "f16";
    case KvCacheType::Auto: break;
  }
  return "auto";
}

KvCacheType parse_kv_cache_type(const std::string& s, const std::string& what) {
  if (s == "auto") return KvCacheType::Auto;
  if (s == "f32" || s == "fp32") return KvCacheType::F32;
  if (s == "f16" || s == "fp16") return KvCacheType::F16;
  throw Error(what + " must be auto, f32 or f16, got \"" + s + "\"");
}

DType kv_cache_dtype(KvCacheType t, const ModelConfig& cfg, const Capabilities& caps) {
  switch (t) {
    case KvCacheType::F32: return DType::F32;
    case KvCacheType::F16:
      if (!caps.f16_tensors())
        throw Error("an fp16 KV cache needs fp16 tensors, which the device (profile " + caps.profile +
                    ") cannot store; use the f32 cache (or auto)");
      return DType::F16;
    case KvCacheType::Auto: break;
  }
  return cfg.kv_cache_f16_default && caps.f16_tensors() ? DType::F16 : DType::F32;
}

}  // namespace vkf
