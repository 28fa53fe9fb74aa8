#include "model_commands.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

#include "npy.hpp"
#include "terminal_text.hpp"
#include "usage_error.hpp"
#include "vk/memory.hpp"
#include "vkformer/model.hpp"
#include "vkformer/session.hpp"
#include "vkformer/tuning.hpp"

namespace vkf::tools {

std::vector<Ids> parse_ids(const std::vector<std::string>& args, const char* option) {
  std::vector<Ids> out;
  for (size_t n = 0; n < args.size(); ++n) {
    const std::string& s = args[n];
    const std::string where = std::string(option) + " #" + std::to_string(n + 1) + " \"" + s + "\"";
    Ids ids;
    size_t i = 0;
    while (i <= s.size()) {
      size_t j = s.find(',', i);
      if (j == std::string::npos) j = s.size();
      std::string tok = s.substr(i, j - i);
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(tok, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (tok.empty() || used != tok.size())
        throw UsageError(where + ": \"" + tok + "\" is not an integer token id (expected e.g. 5,17,42)");
      if (v < 0 || v > INT32_MAX) throw UsageError(where + ": id " + tok + " is out of range (ids are 0 to 2147483647)");
      ids.push_back(int32_t(v));
      i = j + 1;
    }
    out.push_back(std::move(ids));
  }
  return out;
}

Precision parse_precision(const std::string& p) {
  if (p == "fp32" || p == "f32") return Precision::F32;
  if (p == "fp16" || p == "f16") return Precision::F16;
  // Block formats: the linear layers' matrices quantized at load (GGUF's layouts).
  if (p == "q8_0") return Precision::Q8_0;
  if (p == "q4_0") return Precision::Q4_0;
  if (p == "q4_1") return Precision::Q4_1;
  if (p == "q4_k" || p == "q6_k")
    throw UsageError("--precision " + p + ": weights in " + p + " come only from GGUF files (no quantizer); "
                     "quantizing at load takes q8_0, q4_0 or q4_1");
  throw UsageError("--precision must be fp32, fp16, q8_0, q4_0 or q4_1, got \"" + p + "\"");
}

std::shared_ptr<Model> load_model(Context& ctx, const std::string& dir, const std::string& precision) {
  auto model = Model::load(ctx, dir, parse_precision(precision));
  // At most kShown lines: a file with 200,000 unexpected tensors must not write megabytes.
  constexpr size_t kShown = 20;
  const auto& warnings = model->warnings();
  for (size_t i = 0; i < warnings.size() && i < kShown; ++i)
    std::fprintf(stderr, "vkformer: warning: %s\n", printable(warnings[i]).c_str());
  if (warnings.size() > kShown)
    std::fprintf(stderr, "vkformer: warning: %zu more warnings about %s not shown\n", warnings.size() - kShown, printable(dir).c_str());
  return model;
}

int run_quantize(const QuantizeOptions& o) {
  const Precision format = parse_precision(o.type);
  if (!is_block_format(format)) throw UsageError("--type must be q8_0, q4_0 or q4_1, got \"" + o.type + "\"");
  const QuantizeReport r = quantize_model(o.in, o.out, format);
  std::printf("wrote %s: %llu of %llu tensors quantized to %s (the linear layers' matrices), %s -> %s\n",
              o.out.c_str(), (unsigned long long)r.quantized, (unsigned long long)r.tensors, o.type.c_str(),
              format_bytes(r.bytes_in).c_str(), format_bytes(r.bytes_out).c_str());
  return 0;
}

int run_forward(const ContextOptions& ctx_opts, const ModelRunOptions& o) {
  std::vector<Ids> src = parse_ids(o.src_ids, "--src-ids");
  std::vector<Ids> tgt = parse_ids(o.tgt_ids, "--tgt-ids");
  if (o.out.empty()) throw Error("--out FILE.npy is required");
  Context ctx(ctx_opts);
  auto model = load_model(ctx, o.model_dir, o.precision);
  if (tgt.empty() && model->config().encoder_decoder()) {
    // As generate's first step: each target is the decoder start token alone.
    tgt.assign(src.size(), Ids{model->config().bos_id});
    std::fprintf(stderr, "vkformer: no --tgt-ids: each target is the decoder start token %d\n", model->config().bos_id);
  }
  Session session(model);
  RunOptions ro;
  ro.type_ids = parse_ids(o.type_ids, "--type-ids");
  ro.output = o.output;
  ForwardOutput out = session.forward(src, tgt, ro);
  write_npy(o.out, {out.batch, out.len, out.dim}, out.data);
  const bool hidden = o.output == "hidden" || (o.output.empty() && model->output_dim() == model->config().d_model &&
                                               out.dim == model->config().d_model);
  std::fprintf(stderr, "vkformer: wrote %s [%u, %u, %u] (%s), %llu submission(s)\n", o.out.c_str(), out.batch,
               out.len, out.dim, o.output == "pooler" ? "pooler output" : hidden ? "hidden state" : "logits",
               (unsigned long long)session.stats().submissions);
  return 0;
}

namespace {

// "subgroup 8 (sizes 8..8, size control yes, arithmetic yes)": the default size,
// the range a pipeline may require, and whether it may (the tuning knob SGS).
std::string subgroup_text(const Capabilities& c) {
  return "subgroup " + std::to_string(c.subgroup_size) + " (sizes " + std::to_string(c.min_subgroup_size) + ".." +
         std::to_string(c.max_subgroup_size) + ", size control " + (c.subgroup_size_control ? "yes" : "no") +
         ", arithmetic " + (c.subgroup_arithmetic ? "yes" : "no") + ")";
}

// Whether a tuning database applies to the picked device, and what it holds.
std::string tuning_line(const Context& ctx) {
  const TuningTable& t = tuning_table(ctx);
  if (t.path.empty()) return "tuning: off (the engine's own rules)";
  if (!t.warning.empty()) return "tuning: " + t.path + " ignored (damaged)";
  if (t.size() == 0) return "tuning: no entries for this device in " + t.path + " (`vkformer tune` makes them)";
  return "tuning: " + std::to_string(t.size()) + " tuned op shapes for this device from " + t.path;
}

}  // namespace

int run_devices(const ContextOptions& ctx_opts, bool json) {
  auto devs = list_devices();
  Context ctx(ctx_opts);
  const Capabilities& picked = ctx.caps();
  auto is_picked = [&](const DeviceDescription& d) {
    return d.caps.device_id == picked.device_id && d.caps.vendor_id == picked.vendor_id &&
           d.name == picked.device_name;
  };
  // The limits the engine works within: the picked device's, clamped by the profile.
  const Capabilities& c = picked;
  if (json) {
    // The limits both lists give, for one device's capabilities.
    auto limits = [](const Capabilities& c) {
      return nlohmann::json{
          {"subgroup_size", c.subgroup_size},
          {"subgroup_arithmetic", c.subgroup_arithmetic},
          {"subgroup_size_range", {c.min_subgroup_size, c.max_subgroup_size}},
          {"subgroup_size_control", c.subgroup_size_control},
          {"max_shared_memory", c.max_shared_memory},
          {"max_workgroup_invocations", c.max_workgroup_invocations},
          {"max_workgroup_count", {c.max_workgroup_count[0], c.max_workgroup_count[1], c.max_workgroup_count[2]}},
          {"max_storage_buffer_range", c.max_storage_buffer_range},
          {"fp16_storage", c.storage_16bit},
          {"fp16_packed", c.f16_packed},
          {"shader_float16", c.shader_float16},
          {"coopmat", c.coopmat},
          {"coopmat_shapes", c.coopmat_shapes}};
    };
    nlohmann::json active = limits(c);
    active["profile"] = c.profile;
    active["min_storage_buffer_offset_alignment"] = c.min_storage_buffer_offset_alignment;
    active["texel_buffers"] = {{"max_texels", c.max_texel_buffer_elements},
                               {"f32", c.texel_f32},
                               {"f16", c.texel_f16},
                               {"u32", c.texel_u32}};
    if (c.driver_name == "llvmpipe") active["lavapipe_vector_width"] = lavapipe_vector_width(c);
    active["tuning"] = {{"database", tuning_table(ctx).path}, {"entries", tuning_table(ctx).size()},
                        {"key", tuning_device_key(c)}};
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& d : devs) {
      const Capabilities& c = d.caps;
      nlohmann::json dev = limits(c);
      dev.update({{"index", d.index},
                  {"name", d.name},
                  {"type", d.type},
                  {"driver", d.driver},
                  {"api_version", std::to_string(c.api_version >> 22) + "." +
                                      std::to_string((c.api_version >> 12) & 0x3ff) + "." +
                                      std::to_string(c.api_version & 0xfff)},
                  {"timestamps", c.timestamps},
                  {"device_local_bytes", c.device_local_bytes},
                  {"picked", is_picked(d)}});
      arr.push_back(dev);
    }
    std::printf("%s\n", nlohmann::json{{"devices", arr}, {"active", active}}.dump(2).c_str());
    return 0;
  }
  for (const auto& d : devs) {
    const Capabilities& c = d.caps;
    std::printf("%u: %s (%s, driver %s, Vulkan %u.%u)%s\n", d.index, d.name.c_str(), d.type.c_str(),
                d.driver.c_str(), c.api_version >> 22, (c.api_version >> 12) & 0x3ff,
                is_picked(d) ? "  <- picked" : "");
    std::printf("   %s, shared memory %u KiB, max invocations %u, max workgroups %u x %u x %u\n",
                subgroup_text(c).c_str(), c.max_shared_memory / 1024, c.max_workgroup_invocations,
                c.max_workgroup_count[0], c.max_workgroup_count[1], c.max_workgroup_count[2]);
    std::printf("   maxStorageBufferRange %llu MiB, fp16 storage %s, timestamps %s, "
                "device-local memory %llu MiB\n",
                (unsigned long long)(c.max_storage_buffer_range >> 20), c.f16_storage(),
                c.timestamps ? "yes" : "no", (unsigned long long)(c.device_local_bytes >> 20));
  }
  std::printf("profile %s: the picked device as the engine uses it\n", c.profile.c_str());
  std::printf("   %s, shared memory %u KiB, max invocations %u, max workgroups %u x %u x %u\n",
              subgroup_text(c).c_str(), c.max_shared_memory / 1024, c.max_workgroup_invocations,
              c.max_workgroup_count[0], c.max_workgroup_count[1], c.max_workgroup_count[2]);
  std::printf("   maxStorageBufferRange %llu MiB, minStorageBufferOffsetAlignment %llu, fp16 storage %s\n",
              (unsigned long long)(c.max_storage_buffer_range >> 20),
              (unsigned long long)c.min_storage_buffer_offset_alignment, c.f16_storage());
  std::printf("   texel buffers: up to %llu texels, f32 %s, f16 %s, u32 %s (GEMM, GEMV and attention read "
              "through them on CPU devices; u32: block-format weights)\n",
              (unsigned long long)c.max_texel_buffer_elements, c.texel_f32 ? "yes" : "no", c.texel_f16 ? "yes" : "no",
              c.texel_u32 ? "yes" : "no");
  std::string shapes;
  for (const auto& s : c.coopmat_shapes) shapes += (shapes.empty() ? "" : ", ") + s;
  std::printf("   fp16 arithmetic %s; cooperative matrices (VK_NV_cooperative_matrix) %s%s%s\n",
              c.shader_float16 ? "yes" : "no", c.coopmat ? "used by gemm's coopmat variant" : "not used",
              shapes.empty() ? "" : "; the driver lists ", shapes.c_str());
  if (c.driver_name == "llvmpipe") {
    const std::string w = lavapipe_vector_width(c);
    std::printf("   lavapipe vector width %s; 512 bits (LP_NATIVE_VECTOR_WIDTH=512) measured ~10%% faster on large "
                "GEMMs but 1.3-2.3x slower on GEMV, LayerNorm and softmax (docs/performance.md)\n",
                w.empty() ? "default (256 bits)" : (w + " bits (LP_NATIVE_VECTOR_WIDTH)").c_str());
  }
  std::printf("   %s\n", tuning_line(ctx).c_str());
  return 0;
}

}  // namespace vkf::tools
