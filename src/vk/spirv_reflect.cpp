#include "vk/spirv_reflect.hpp"

#include <map>
#include <set>

#include "vkformer/tensor.hpp"  // Error

namespace vkf {
namespace {

enum : uint32_t {
  kName = 5, kDecorate = 71, kMemberDecorate = 72,
  kSpecId = 1, kBlock = 2, kBufferBlock = 3, kBinding = 33, kDescriptorSet = 34, kOffset = 35,
  kTypeBool = 20, kTypeInt = 21, kTypeFloat = 22, kTypeVector = 23, kTypeMatrix = 24,
  kTypeImage = 25, kTypeSampledImage = 27, kTypeArray = 28, kTypeStruct = 30, kTypePointer = 32,
  kDimBuffer = 5,
  kConstantTrue = 41, kConstantFalse = 42, kConstant = 43, kConstantComposite = 44,
  kSpecConstantTrue = 48, kSpecConstantFalse = 49, kSpecConstant = 50,
  kSpecConstantComposite = 51, kSpecConstantOp = 52, kVariable = 59,
  // storage classes
  kUniformConstant = 0, kUniform = 2, kWorkgroup = 4, kPushConstant = 9, kStorageBuffer = 12,
};

/// A literal string operand (nul-terminated, packed little-endian in words).
std::string literal_string(const uint32_t* w, uint32_t n) {
  std::string s;
  for (uint32_t i = 0; i < n; ++i)
    for (int b = 0; b < 4; ++b) {
      const char c = char((w[i] >> (8 * b)) & 0xff);
      if (!c) return s;
      s += c;
    }
  return s;
}

using Value = std::optional<int64_t>;

/// The integer and boolean operations glslang emits for array sizes.
Value eval(uint32_t op, const std::vector<Value>& a) {
  auto all = [&](size_t n) {
    if (a.size() < n) return false;
    for (size_t i = 0; i < n; ++i)
      if (!a[i]) return false;
    return true;
  };
  const auto u = [&](size_t i) { return uint32_t(*a[i]); };
  const auto s = [&](size_t i) { return int32_t(uint32_t(*a[i])); };
  switch (op) {
    case 113: case 114: return all(1) ? a[0] : Value{};            // UConvert, SConvert
    case 126: return all(1) ? Value{uint32_t(-s(0))} : Value{};     // SNegate
    case 128: return all(2) ? Value{uint32_t(u(0) + u(1))} : Value{};
    case 130: return all(2) ? Value{uint32_t(u(0) - u(1))} : Value{};
    case 132: return all(2) ? Value{uint32_t(u(0) * u(1))} : Value{};
    case 134: return all(2) && u(1) ? Value{u(0) / u(1)} : Value{};
    case 135: return all(2) && s(1) ? Value{uint32_t(s(0) / s(1))} : Value{};
    case 137: return all(2) && u(1) ? Value{u(0) % u(1)} : Value{};
    case 164: return all(2) ? Value{(*a[0] != 0) == (*a[1] != 0)} : Value{};
    case 165: return all(2) ? Value{(*a[0] != 0) != (*a[1] != 0)} : Value{};
    case 166: return all(2) ? Value{*a[0] || *a[1]} : Value{};
    case 167: return all(2) ? Value{*a[0] && *a[1]} : Value{};
    case 168: return all(1) ? Value{!*a[0]} : Value{};
    case 169: return all(3) ? (*a[0] ? a[1] : a[2]) : Value{};     // Select
    case 170: return all(2) ? Value{u(0) == u(1)} : Value{};
    case 171: return all(2) ? Value{u(0) != u(1)} : Value{};
    case 172: return all(2) ? Value{u(0) > u(1)} : Value{};
    case 173: return all(2) ? Value{s(0) > s(1)} : Value{};
    case 174: return all(2) ? Value{u(0) >= u(1)} : Value{};
    case 175: return all(2) ? Value{s(0) >= s(1)} : Value{};
    case 176: return all(2) ? Value{u(0) < u(1)} : Value{};
    case 177: return all(2) ? Value{s(0) < s(1)} : Value{};
    case 178: return all(2) ? Value{u(0) <= u(1)} : Value{};
    case 179: return all(2) ? Value{s(0) <= s(1)} : Value{};
    case 194: return all(2) ? Value{u(0) >> (u(1) & 31)} : Value{};
    case 196: return all(2) ? Value{uint32_t(u(0) << (u(1) & 31))} : Value{};
    case 197: return all(2) ? Value{u(0) | u(1)} : Value{};
    case 198: return all(2) ? Value{u(0) ^ u(1)} : Value{};
    case 199: return all(2) ? Value{u(0) & u(1)} : Value{};
    default: return {};
  }
}

}  // namespace

ShaderInterface spirv_interface(const uint32_t* words, size_t count, const std::string& name) {
  const std::string where = "internal: " + name + ": ";
  if (count < 5 || words[0] != 0x07230203u) throw Error(where + "not SPIR-V");
  std::map<uint32_t, std::string> names;
  std::map<uint32_t, uint32_t> binding, set;
  std::set<uint32_t> buffer_block;                         // struct types decorated BufferBlock
  std::map<uint32_t, std::map<uint32_t, uint32_t>> offset; // struct -> member -> Offset
  std::map<uint32_t, uint32_t> scalar_bits;                // int and float types
  std::map<uint32_t, std::vector<uint32_t>> members;       // struct types
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> pointer;  // type -> (storage class, pointee)
  std::set<uint32_t> texel_type;                           // sampled buffer images, and samplers of them
  std::vector<std::pair<uint32_t, uint32_t>> variables;    // (id, pointer type)
  for (size_t i = 5; i < count;) {
    const uint32_t n = words[i] >> 16, op = words[i] & 0xffff;
    if (n == 0 || i + n > count) throw Error(where + "truncated SPIR-V");
    const uint32_t* w = words + i;
    switch (op) {
      case kName: if (n >= 3) names[w[1]] = literal_string(w + 2, n - 2); break;
      case kDecorate:
        if (n >= 4 && w[2] == kBinding) binding[w[1]] = w[3];
        if (n >= 4 && w[2] == kDescriptorSet) set[w[1]] = w[3];
        if (n >= 3 && w[2] == kBufferBlock) buffer_block.insert(w[1]);
        break;
      case kMemberDecorate:
        if (n >= 5 && w[3] == kOffset) offset[w[1]][w[2]] = w[4];
        break;
      case kTypeInt: case kTypeFloat: scalar_bits[w[1]] = w[2]; break;
      case kTypeStruct: members[w[1]].assign(w + 2, w + n); break;
      case kTypePointer: pointer[w[1]] = {w[2], w[3]}; break;
      case kTypeImage: if (n >= 8 && w[3] == kDimBuffer && w[7] == 1) texel_type.insert(w[1]); break;
      case kTypeSampledImage: if (n >= 3 && texel_type.count(w[2])) texel_type.insert(w[1]); break;
      case kVariable: variables.push_back({w[2], w[1]}); break;
      default: break;
    }
    i += n;
  }

  ShaderInterface iface;
  bool have_push = false;
  std::set<uint32_t> used;
  std::map<uint32_t, bool> texels;  // binding -> is a samplerBuffer
  for (const auto& [id, type] : variables) {
    const auto [storage, pointee] = pointer[type];
    if (storage == kPushConstant) {
      if (have_push) throw Error(where + "more than one push-constant block");
      have_push = true;
      iface.push_block = names[pointee];
      const std::vector<uint32_t>& m = members[pointee];
      for (uint32_t k = 0; k < m.size(); ++k) {
        auto bits = scalar_bits.find(m[k]);
        auto off = offset[pointee].find(k);
        if (bits == scalar_bits.end() || bits->second != 32 || off == offset[pointee].end() || off->second != 4 * k)
          throw Error(where + "member " + std::to_string(k) + " of push-constant block " + iface.push_block +
                      " is not a 4-byte scalar at offset " + std::to_string(4 * k) +
                      ": C++ would lay it out differently (shaders/push/push.h)");
      }
      iface.push_size = uint32_t(4 * m.size());
      continue;
    }
    if (storage != kStorageBuffer && storage != kUniform && storage != kUniformConstant) continue;
    auto b = binding.find(id);
    if (b == binding.end()) continue;  // not a resource (cannot happen in valid Vulkan SPIR-V)
    if (set.count(id) && set[id] != 0)
      throw Error(where + "binding " + std::to_string(b->second) + " is in descriptor set " +
                  std::to_string(set[id]) + "; pipelines have set 0 only");
    const bool texel = storage == kUniformConstant && texel_type.count(pointee);
    if (storage != kStorageBuffer && !(storage == kUniform && buffer_block.count(pointee)) && !texel)
      throw Error(where + "binding " + std::to_string(b->second) +
                  " is not a storage buffer or samplerBuffer; pipelines bind only those");
    if (texels.count(b->second) && texels[b->second] != texel)
      throw Error(where + "binding " + std::to_string(b->second) + " is both a samplerBuffer and a storage buffer");
    texels[b->second] = texel;
    used.insert(b->second);
  }
  // Several blocks may alias one binding (X and X4): bindings are counted once.
  iface.bindings = used.empty() ? 0 : *used.rbegin() + 1;
  iface.texel.assign(iface.bindings, false);
  for (const auto& [k, t] : texels) iface.texel[k] = t;
  if (used.size() != iface.bindings)
    for (uint32_t k = 0; k < iface.bindings; ++k)
      if (!used.count(k))
        throw Error(where + "bindings run to " + std::to_string(iface.bindings - 1) + " but " +
                    std::to_string(k) + " is missing; a dispatch binds tensors 0..n-1");
  return iface;
}

std::optional<uint64_t> spirv_shared_bytes(const uint32_t* words, size_t count,
                                           const std::vector<uint32_t>& spec) {
  if (count < 5) return std::nullopt;
  std::map<uint32_t, uint32_t> spec_id;               // result id -> SpecId
  std::map<uint32_t, Value> value;                    // constants
  std::map<uint32_t, std::vector<uint32_t>> composite;
  std::map<uint32_t, std::optional<uint64_t>> size;   // type id -> bytes
  std::map<uint32_t, uint32_t> pointee;               // Workgroup pointer type -> type
  uint64_t total = 0;
  bool known = true;

  auto spec_value = [&](uint32_t id, int64_t dflt) -> Value {
    auto it = spec_id.find(id);
    if (it != spec_id.end() && it->second < spec.size()) return int64_t(spec[it->second]);
    return dflt;
  };
  auto operand = [&](uint32_t id) -> Value {
    auto it = value.find(id);
    return it == value.end() ? Value{} : it->second;
  };

  for (size_t i = 5; i < count;) {
    const uint32_t n = words[i] >> 16, op = words[i] & 0xffff;
    if (n == 0 || i + n > count) return std::nullopt;
    const uint32_t* w = words + i;
    switch (op) {
      case kDecorate:
        if (n >= 4 && w[2] == kSpecId) spec_id[w[1]] = w[3];
        break;
      case kTypeBool: size[w[1]] = 4; break;
      case kTypeInt: case kTypeFloat: size[w[1]] = w[2] / 8; break;
      case kTypeVector: case kTypeMatrix: {
        auto e = size[w[2]];
        size[w[1]] = e ? std::optional<uint64_t>(*e * w[3]) : std::nullopt;
        break;
      }
      case kTypeArray: {
        auto e = size[w[2]];
        Value len = operand(w[3]);
        size[w[1]] = e && len ? std::optional<uint64_t>(*e * uint64_t(uint32_t(*len))) : std::nullopt;
        break;
      }
      case kTypeStruct: {
        std::optional<uint64_t> s = 0;
        for (uint32_t k = 2; k < n; ++k) {
          auto m = size[w[k]];
          s = s && m ? std::optional<uint64_t>(*s + *m) : std::nullopt;
        }
        size[w[1]] = s;
        break;
      }
      case kTypePointer:
        if (w[2] == kWorkgroup) pointee[w[1]] = w[3];
        break;
      case kConstantTrue: value[w[2]] = 1; break;
      case kConstantFalse: value[w[2]] = 0; break;
      case kConstant: value[w[2]] = int64_t(w[3]); break;
      case kSpecConstantTrue: value[w[2]] = spec_value(w[2], 1).value() ? 1 : 0; break;
      case kSpecConstantFalse: value[w[2]] = spec_value(w[2], 0).value() ? 1 : 0; break;
      case kSpecConstant: value[w[2]] = spec_value(w[2], int64_t(w[3])); break;
      case kConstantComposite: case kSpecConstantComposite:
        composite[w[2]].assign(w + 3, w + n);
        break;
      case kSpecConstantOp: {
        const uint32_t inner = w[3];
        if (inner == 81) {  // CompositeExtract: composite, literal index
          auto it = composite.find(w[4]);
          value[w[2]] = it != composite.end() && n > 5 && w[5] < it->second.size()
                            ? operand(it->second[w[5]]) : Value{};
        } else {
          std::vector<Value> args;
          for (uint32_t k = 4; k < n; ++k) args.push_back(operand(w[k]));
          value[w[2]] = eval(inner, args);
        }
        break;
      }
      case kVariable:
        if (n >= 4 && w[3] == kWorkgroup) {
          auto p = pointee.find(w[1]);
          auto s = p == pointee.end() ? std::nullopt : size[p->second];
          if (s) total += *s; else known = false;
        }
        break;
      default: break;
    }
    i += n;
  }
  if (!known) return std::nullopt;
  return total;
}

}  // namespace vkf
