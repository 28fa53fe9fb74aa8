// Capability profiles: what the engine may use, clamped below what the device
// offers, so that one machine can exercise the code paths of weaker devices
// (docs/device-profiles.md). Everything downstream -- kernel choice, tiles,
// bindings, enabled device features -- reads the clamped Capabilities.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "vk/context_impl.hpp"

namespace vkf {
namespace {

// Canonical order: a combined profile is always spelled the same way.
const std::vector<std::string> kProfiles = {"full", "min", "no-fp16", "no-subgroup", "gpu", "no-coopmat"};

std::string valid_list() {
  std::string s;
  for (const auto& p : kProfiles) s += (s.empty() ? "" : ", ") + p;
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

std::vector<std::string> device_profiles() { return kProfiles; }

std::string resolve_profile(const ContextOptions& o) {
  std::string spec = o.device_profile;
  const char* source = "device_profile";
  if (spec.empty())
    if (const char* e = std::getenv("VKFORMER_DEVICE_PROFILE")) {
      spec = e;
      source = "VKFORMER_DEVICE_PROFILE";
    }
  std::vector<bool> on(kProfiles.size(), false);
  size_t start = 0;
  while (start <= spec.size() && !spec.empty()) {
    size_t comma = spec.find(',', start);
    const std::string name = trim(spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    auto it = std::find(kProfiles.begin(), kProfiles.end(), name);
    if (it == kProfiles.end())
      throw Error(std::string(source) + ": unknown device profile \"" + name + "\" in \"" + spec +
                  "\"; valid profiles are " + valid_list() + " (several may be joined by commas)");
    on[size_t(it - kProfiles.begin())] = true;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (o.disable_fp16) on[2] = true;
  if (o.disable_subgroups) on[3] = true;
  std::string out;
  for (size_t i = 1; i < kProfiles.size(); ++i)
    if (on[i]) out += (out.empty() ? "" : ",") + kProfiles[i];
  return out.empty() ? "full" : out;
}

void apply_profile(const std::string& profile, Capabilities& c) {
  c.profile = profile;
  size_t start = 0;
  for (;;) {
    size_t comma = profile.find(',', start);
    const std::string p = profile.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (p == "no-fp16") {
      c.storage_16bit = c.shader_float16 = c.f16_packed = c.texel_f16 = c.coopmat = false;
    } else if (p == "no-subgroup") {
      // The subgroup size stays: it is a property of the hardware that
      // workgroup sizes still round to; only subgroup operations are off, and
      // with them the choice of their size.
      c.subgroup_arithmetic = c.subgroup_shuffle = false;
      c.subgroup_size_control = c.compute_full_subgroups = c.coopmat = false;
    } else if (p == "gpu") {
      // A discrete GPU as the engine sees one: its rules for GPUs choose the
      // kernels and tiles (staged tiles, the split decode attention), shared
      // memory at most 48 KiB, and memory the host cannot map (finish_setup()),
      // so every upload, input and output takes the staging path. What a CPU
      // driver cannot pretend to have (subgroups of 32, cooperative matrices)
      // stays as the device reports it.
      c.device_type = "discrete";
      c.max_shared_memory = std::min(c.max_shared_memory, 49152u);
    } else if (p == "no-coopmat") {
      // Tensor cores off, everything else as the device reports: the escape
      // hatch where a driver's cooperative matrices misbehave, and the
      // comparison of the coopmat kernels with the ones they replace.
      c.coopmat = false;
    } else if (p == "min") {
      // Vulkan's required minimums for compute (and the alignment's maximum),
      // except maxStorageBufferRange (2^27 required) lowered to 64 MiB so that
      // buffer splitting runs on lavapipe's 128 MiB too.
      c.max_shared_memory = std::min(c.max_shared_memory, 16384u);
      c.max_workgroup_invocations = std::min(c.max_workgroup_invocations, 128u);
      const uint32_t size_min[3] = {128, 128, 64};
      for (int i = 0; i < 3; ++i) {
        c.max_workgroup_size[i] = std::min(c.max_workgroup_size[i], size_min[i]);
        c.max_workgroup_count[i] = std::min(c.max_workgroup_count[i], 65535u);
      }
      c.max_storage_buffer_range = std::min<uint64_t>(c.max_storage_buffer_range, 64ull << 20);
      c.min_storage_buffer_offset_alignment = std::max<uint64_t>(c.min_storage_buffer_offset_alignment, 256);
      c.max_texel_buffer_elements = std::min<uint64_t>(c.max_texel_buffer_elements, 65536);
      c.min_texel_buffer_offset_alignment = std::max<uint64_t>(c.min_texel_buffer_offset_alignment, 256);
      // Subgroup size control is optional in Vulkan 1.2, the version vkformer requires.
      c.subgroup_size_control = c.compute_full_subgroups = false;
      c.coopmat = false;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

uint32_t resolve_max_dispatches(const ContextOptions& o) {
  if (o.max_dispatches_per_submit) return o.max_dispatches_per_submit;
  const char* e = std::getenv("VKFORMER_MAX_DISPATCHES_PER_SUBMIT");
  if (!e || !*e) return 0;
  char* end = nullptr;
  const unsigned long v = std::strtoul(e, &end, 10);
  if (*end || v > 0xffffffffu || e[0] == '-')
    throw Error("VKFORMER_MAX_DISPATCHES_PER_SUBMIT must be a whole number (0: never split), got \"" +
                std::string(e) + "\"");
  return uint32_t(v);
}

}  // namespace vkf
