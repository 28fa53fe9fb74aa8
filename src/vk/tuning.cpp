// The tuning database: load (forgiving: a damaged file is ignored with one
// warning), look up, and merge-store (write a temporary file, then rename).
#include "vkformer/tuning.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "io/read_file.hpp"
#include "model/json_parse.hpp"
#include "model/json_text.hpp"
#include "vk/context_impl.hpp"
#include "vk/pipelines.hpp"
#include "vk/tuning_hooks.hpp"

namespace vkf {
namespace {

using json = nlohmann::json;
constexpr const char* kFormat = "vkformer-tuning 1";
/// The largest tuning database read (16 MiB; a real one is a few KiB per
/// device): a larger file is ignored with one warning, as a damaged one is.
constexpr uint64_t kMaxTuningFileBytes = 16ull << 20;

/// Guards every context's table against drop_tuned_entry() while ops look entries up.
std::mutex& dropped_mu() {
  static std::mutex mu;
  return mu;
}

json device_json(const json& root, const std::string& key) {
  if (!root.is_object() || !root.contains("devices") || !root["devices"].is_object()) return json::object();
  const json& d = root["devices"];
  return d.contains(key) && d[key].is_object() ? d[key] : json::object();
}

/// Whether a variant or knob name is a plain name ("blocked", "BM"): names
/// from the file reach messages and logs as they are.
bool is_plain_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (const char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

/// One entry of the database. @throws vkf::Error saying what is wrong with it
/// (the caller names the file, op and class): a knob must be an integer from 0
/// to 2^32 - 1, since nlohmann's get<uint32_t> wraps 2^32 + 8 to 8.
TunedConfig config_from(const json& e) {
  if (!e.is_object()) throw Error("must be an object, got " + brief_json(e));
  TunedConfig c;
  if (e.contains("variant")) {
    if (!e["variant"].is_string()) throw Error("\"variant\" must be a string, got " + brief_json(e["variant"]));
    c.variant = e["variant"].get<std::string>();
    if (!c.variant.empty() && !is_plain_name(c.variant))
      throw Error("\"variant\" \"" + printable(c.variant) + "\" is not a variant name (letters, digits, _)");
  }
  if (e.contains("knobs")) {
    if (!e["knobs"].is_object()) throw Error("\"knobs\" must be an object, got " + brief_json(e["knobs"]));
    for (auto& [k, v] : e["knobs"].items()) {
      if (!is_plain_name(k)) throw Error("knob \"" + printable(k) + "\" is not a knob name (letters, digits, _)");
      if (!v.is_number_unsigned() || v.get<uint64_t>() > UINT32_MAX)
        throw Error("knob " + k + "=" + brief_json(v) + " is not an integer from 0 to 4294967295");
      c.knobs.emplace_back(k, uint32_t(v.get<uint64_t>()));
    }
  }
  if (e.contains("checked")) {  // {"error": 1.2e-07, "bound": 0.0001}: an unchecked entry is checked at first use
    const json& k = e["checked"];
    if (!k.is_object() || !k.contains("error") || !k["error"].is_number() || !k.contains("bound") ||
        !k["bound"].is_number() || !(k["error"].get<double>() >= 0))
      throw Error("\"checked\" must be {\"error\": number >= 0, \"bound\": number}, got " + brief_json(k));
    c.checked_error = k["error"].get<double>();
    c.checked_bound = k["bound"].get<double>();
  }
  for (const char* t : {"ms", "default_ms"})
    if (e.contains(t) && !e[t].is_number()) throw Error("\"" + std::string(t) + "\" must be a number");
  c.ms = e.value("ms", 0.0);
  c.default_ms = e.value("default_ms", 0.0);
  return c;
}

json config_to(const TunedConfig& c) {
  json k = json::object();
  for (auto& [n, v] : c.knobs) k[n] = v;
  json e = {{"variant", c.variant}, {"knobs", k}, {"ms", c.ms}, {"default_ms", c.default_ms}};
  if (c.checked_error >= 0) e["checked"] = {{"error", c.checked_error}, {"bound", c.checked_bound}};
  return e;
}

// Reads the file as JSON: null when missing, throws on damage. Every command
// reads it, so its size is capped before a byte is read (a sparse 3 GB file
// took 11 s and 3.2 GB each time).
json read_root(const std::string& path) {
  if (!std::filesystem::exists(path)) return nullptr;
  json root = parse_json_bounded(io::read_file(path, "the tuning database", kMaxTuningFileBytes));
  if (!root.is_object() || root.value("format", "") != kFormat)
    throw Error(path + ": not a vkformer tuning database (expected \"format\": \"" + std::string(kFormat) + "\")");
  return root;
}

}  // namespace

uint32_t TunedConfig::knob(const std::string& name, uint32_t fallback) const {
  for (auto& [n, v] : knobs)
    if (n == name) return v;
  return fallback;
}

bool TunedConfig::has(const std::string& name) const {
  for (auto& kv : knobs)
    if (kv.first == name) return true;
  return false;
}

std::string TunedConfig::text() const {
  std::string s = variant.empty() ? "default" : variant;
  for (auto& [n, v] : knobs) s += " " + n + "=" + std::to_string(v);
  return s;
}

std::string tuning_device_key(const Capabilities& c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "vendor=0x%x device=0x%x driver=%u version=0x%x uuid=", c.vendor_id, c.device_id,
                c.driver_id, c.driver_version);
  std::string key = buf;
  for (uint8_t b : c.pipeline_cache_uuid) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    key += buf;
  }
  // lavapipe's vector width changes the code it generates (and its subgroup
  // size) without changing its pipeline-cache UUID.
  if (const std::string w = lavapipe_vector_width(c); !w.empty()) key += " lp_native_vector_width=" + w;
  return key;
}

std::string lavapipe_vector_width(const Capabilities& c) {
  const char* w = std::getenv("LP_NATIVE_VECTOR_WIDTH");
  return w && *w && c.driver_name == "llvmpipe" ? w : "";
}

size_t TuningTable::size() const {
  size_t n = 0;
  for (auto& [op, m] : best) n += m.size();
  return n;
}

const TunedConfig* TuningTable::find(const std::string& op, const std::string& shape_class) const {
  auto o = best.find(op);
  if (o == best.end()) return nullptr;
  auto e = o->second.find(shape_class);
  return e == o->second.end() ? nullptr : &e->second;
}

namespace {

/// load_tuning(), and each malformed entry left out said in `rejected`
/// ("entry gemm \"m=...\": knob BM=4294967304 is not an integer ...").
TuningTable load_entries(const std::string& path, const Capabilities& caps, std::vector<std::string>& rejected) {
  TuningTable t;
  t.path = path;
  try {
    const json root = read_root(path);
    if (root.is_null()) return t;
    const json dev = device_json(root, tuning_device_key(caps));
    if (dev.contains("ops"))
      for (auto& [op, shapes] : dev.at("ops").items())
        for (auto& [cls, e] : shapes.items()) {
          TunedConfig c;
          try {
            c = config_from(e);
          } catch (const Error& err) {  // this entry is left out; the rest of the file is used
            rejected.push_back("entry " + printable(op) + " \"" + printable(cls) + "\": " + err.what());
            continue;
          }
          // An empty configuration records that the engine's own choice won: no entry to use.
          if (c.variant.empty() && c.knobs.empty()) continue;
          const uint32_t sgs = c.knob("SGS", 0);
          if (sgs && !subgroup_size_problem(caps, sgs, c.knob("WG", sgs)).empty()) {
            ++t.skipped_sgs;  // the op would refuse it; its own rules apply instead
            continue;
          }
          t.best[op][cls] = c;
        }
    if (dev.contains("unusable"))
      for (auto& [op, shapes] : dev.at("unusable").items())
        for (auto& [cls, list] : shapes.items()) t.unusable[op][cls] = list.get<std::vector<std::string>>();
  } catch (const std::exception& e) {  // nlohmann's errors and ours: the file is not used
    t.best.clear();
    t.unusable.clear();
    t.skipped_sgs = 0;
    rejected.clear();
    t.warning = std::string(e.what()).substr(0, 300);
  }
  return t;
}

}  // namespace

TuningTable load_tuning(const std::string& path, const Capabilities& caps) {
  std::vector<std::string> rejected;
  return load_entries(path, caps, rejected);
}

void check_tuning_file(const std::string& path) {
  // Renaming over a symlink, a device or a directory would replace it: refuse.
  const auto st = std::filesystem::symlink_status(path);
  if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    throw Error(path + ": the tuning database must be a regular file or nothing (it is replaced by renaming)");
}

void store_tuning(const std::string& path, const Capabilities& caps, const TuningTable& results) {
  json root;
  try {
    root = read_root(path);
  } catch (const std::exception&) {
    root = nullptr;  // a damaged file is replaced, as it was ignored when read
  }
  if (!root.is_object()) root = {{"format", kFormat}, {"devices", json::object()}};
  const std::string key = tuning_device_key(caps);
  json dev = device_json(root, key);
  dev["device"] = caps.device_name;
  dev["driver"] = caps.driver_name;
  for (auto& [op, shapes] : results.best)
    for (auto& [cls, c] : shapes) dev["ops"][op][cls] = config_to(c);
  for (auto& [op, shapes] : results.unusable)
    for (auto& [cls, list] : shapes) dev["unusable"][op][cls] = list;
  root["devices"][key] = dev;

  check_tuning_file(path);
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << root.dump(1) << "\n";
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw Error(path + ": cannot write the tuning database (" + tmp + ")");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(path + ": cannot replace the tuning database");
  }
}

// ---- the context's side ----

std::string tuning_choice(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* e = std::getenv("VKFORMER_TUNING"); e && *e) return e;
  return "auto";
}

namespace {

// "auto" is the user's own results, beside the pipeline cache; "off" is none.
std::string file_for(const std::string& choice, const std::string& cache_file) {
  if (choice == "off") return "";
  if (choice == "compare")
    throw Error("tuning \"compare\" is only for `vkformer bench ops` and `vkformer bench model` (elsewhere: off, "
                "auto or a file)");
  if (choice != "auto") return choice;
  return cache_file.empty() ? "" : cache_file.substr(0, cache_file.rfind('/')) + "/tuning.json";
}

}  // namespace

std::string tuning_file(const Context& ctx, const std::string& choice) {
  return file_for(choice, ctx.pipeline_cache_file());
}

void Context::Impl::load_tuning_table() {
  const std::string path = file_for(tuning_choice(options.tuning), pipelines->cache_file());
  if (path.empty()) return;
  std::vector<std::string> rejected;
  tuning = load_entries(path, caps, rejected);
  if (!tuning.warning.empty())
    std::fprintf(stderr, "vkformer: warning: ignoring the tuning database %s: %s\n", path.c_str(),
                 tuning.warning.c_str());
  constexpr size_t kShown = 3;  // a file of a million bad entries is not a million lines
  for (size_t i = 0; i < rejected.size() && i < kShown; ++i)
    std::fprintf(stderr, "vkformer: warning: %s: ignoring the %s\n", path.c_str(), rejected[i].c_str());
  if (rejected.size() > kShown)
    std::fprintf(stderr, "vkformer: warning: %s: ignoring %zu more bad entries\n", path.c_str(),
                 rejected.size() - kShown);
  if (tuning.skipped_sgs)
    std::fprintf(stderr,
                 "vkformer: warning: %s: %zu tuned entries require a subgroup size this device cannot require "
                 "(no subgroup size control); the engine's own choice is used for them\n",
                 path.c_str(), tuning.skipped_sgs);
}

const TunedConfig* Context::Impl::tuned(const std::string& op, const std::string& shape_class) {
  if (tuning_capture) tuning_capture->insert({op, shape_class});
  auto f = tuning_forced.find(op);
  if (f != tuning_forced.end())  // an empty configuration forces the engine's own rules
    return f->second.variant.empty() && f->second.knobs.empty() ? nullptr : &f->second;
  if (tuning_suspended) return nullptr;
  const TunedConfig* entry = tuning.find(op, shape_class);
  if (!entry) return nullptr;
  // An entry an op dropped is listed among the class's unusable configurations.
  std::lock_guard<std::mutex> lock(dropped_mu());
  auto o = tuning.unusable.find(op);
  if (o == tuning.unusable.end()) return entry;
  auto c = o->second.find(shape_class);
  if (c == o->second.end()) return entry;
  return std::find(c->second.begin(), c->second.end(), entry->text()) == c->second.end() ? entry : nullptr;
}

// Declared in src/ops/tuning_util.hpp, beside plan_tuned(), which ops call it through.
bool drop_tuned_entry(Context::Impl& ctx, const std::string& op, const std::string& shape_class,
                      const TunedConfig* config, const std::string& why) {
  if (!config || config != ctx.tuning.find(op, shape_class)) return false;  // the tuner's candidate: its error
  std::lock_guard<std::mutex> lock(dropped_mu());
  std::vector<std::string>& unusable = ctx.tuning.unusable[op][shape_class];
  if (std::find(unusable.begin(), unusable.end(), config->text()) != unusable.end()) return true;
  unusable.push_back(config->text());
  std::fprintf(stderr,
               "vkformer: warning: %s: ignoring the entry %s \"%s\" (%s): %s; the engine's own choice is used\n",
               ctx.tuning.path.c_str(), printable(op).c_str(), printable(shape_class).c_str(),
               config->text().c_str(), why.c_str());  // names from the file are plain (config_from)
  return true;
}

const TuningTable& tuning_table(const Context& ctx) {
  return internals(const_cast<Context&>(ctx)).tuning;
}

}  // namespace vkf
