#include "model_commands.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "npy.hpp"
#include "vkformer/model.hpp"
#include "vkformer/session.hpp"

namespace vkf::tools {
namespace {

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
        throw Error(where + ": \"" + tok + "\" is not an integer token id (expected e.g. 5,17,42)");
      if (v < 0 || v > INT32_MAX) throw Error(where + ": id " + tok + " is out of range");
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
  throw Error("--precision must be fp32 or fp16, got \"" + p + "\"");
}

}  // namespace

int run_forward(const ContextOptions& ctx_opts, const ModelRunOptions& o) {
  std::vector<Ids> src = parse_ids(o.src_ids, "--src-ids");
  std::vector<Ids> tgt = parse_ids(o.tgt_ids, "--tgt-ids");
  if (o.out.empty()) throw Error("--out FILE.npy is required");
  Context ctx(ctx_opts);
  auto model = Model::load(ctx, o.model_dir, parse_precision(o.precision));
  Session session(model);
  ForwardOutput out = session.forward(src, tgt);
  write_npy(o.out, {out.batch, out.len, out.dim}, out.data);
  std::fprintf(stderr, "vkformer: wrote %s [%u, %u, %u] (%s), %llu submission(s)\n", o.out.c_str(),
               out.batch, out.len, out.dim, out.dim == model->config().d_model && model->output_dim() == model->config().d_model ? "hidden state" : "logits",
               (unsigned long long)session.stats().submissions);
  return 0;
}

int run_generate(const ContextOptions& ctx_opts, const ModelRunOptions& o) {
  std::vector<Ids> src = parse_ids(o.src_ids, "--src-ids");
  if (src.empty()) throw Error("give at least one --src-ids");
  Context ctx(ctx_opts);
  auto model = Model::load(ctx, o.model_dir, parse_precision(o.precision));
  Session session(model);
  GenerateOptions g;
  g.beam = o.beam;
  g.max_new_tokens = o.max_new_tokens;
  g.length_penalty = o.length_penalty;
  g.use_cache = !o.no_cache;
  std::vector<Ids> out = session.generate(src, g);
  if (o.json) {
    nlohmann::json j;
    j["sequences"] = out;
    std::printf("%s\n", j.dump().c_str());
  } else {
    for (const Ids& ids : out) {
      std::string line;
      for (size_t i = 0; i < ids.size(); ++i) line += (i ? "," : "") + std::to_string(ids[i]);
      std::printf("%s\n", line.c_str());
    }
  }
  std::fprintf(stderr, "vkformer: %llu decode steps, %llu submissions\n",
               (unsigned long long)session.stats().steps,
               (unsigned long long)session.stats().submissions);
  return 0;
}

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
}  // namespace

int run_profile(const ContextOptions& ctx_opts, const ProfileOptions& o) {
  if (o.batch < 1 || o.src_len < 1 || o.tgt_len < 1 || o.repeat < 1)
    throw Error("--batch, --src-len, --tgt-len and --repeat must be at least 1");
  Context ctx(ctx_opts);
  auto model = Model::load(ctx, o.model_dir, parse_precision(o.precision));
  const ModelConfig& c = model->config();
  Session session(model);
  std::mt19937 gen(7);
  const int32_t first = std::max({c.pad_id, c.bos_id, c.eos_id}) + 1;
  auto random_ids = [&](uint32_t len, uint32_t vocab) {
    if (uint32_t(first) >= vocab) throw Error("the vocabulary has no ids besides pad, bos and eos");
    Ids ids(len);
    for (auto& x : ids) x = first + int32_t(gen() % uint32_t(vocab - first));
    return ids;
  };
  const bool encdec = c.encoder_decoder();
  std::vector<Ids> src, tgt;
  for (unsigned b = 0; b < o.batch; ++b) {
    src.push_back(random_ids(o.src_len, c.src_vocab_size));
    if (encdec) tgt.push_back(random_ids(o.tgt_len, c.tgt_vocab_size));
  }
  std::vector<double> fwd;
  uint64_t fwd_subs = 0, fwd_dispatches = 0;
  for (unsigned i = 0; i <= o.repeat; ++i) {  // the first run creates the plan: not counted
    auto t0 = std::chrono::steady_clock::now();
    session.forward(src, tgt);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i) fwd.push_back(ms);
    fwd_subs = session.stats().submissions;
    fwd_dispatches = session.stats().dispatches;
  }
  std::printf("model %s: %u+%u layers, d_model %u, %u heads, d_ff %u, %s weights\n", o.model_dir.c_str(),
              c.encoder_layers, c.decoder_layers, c.d_model, c.n_heads, c.d_ff, o.precision.c_str());
  std::printf("forward  batch %u, src %u%s: %.1f ms median of %u (%llu submission, %llu dispatches)\n",
              o.batch, o.src_len, encdec ? (", tgt " + std::to_string(o.tgt_len)).c_str() : "",
              median(fwd), o.repeat, (unsigned long long)fwd_subs, (unsigned long long)fwd_dispatches);

  if (!model->output_dim() || model->output_dim() == c.d_model) return 0;
  // Cached decoding up to position tgt_len (enc-dec) or prompt + tgt_len (decoder-only).
  GenerateOptions g;
  g.max_new_tokens = o.tgt_len + 1;
  g.stop_at_eos = false;
  std::vector<Ids> prompts = src;
  session.generate(prompts, g);
  const RunStats st = session.stats();
  const size_t n = st.step_ms.size(), k = std::min<size_t>(8, n);
  std::vector<double> last(st.step_ms.end() - long(k), st.step_ms.end());
  const double step = median(last);
  std::printf("decode step with KV cache at position ~%u: %.2f ms (median of the last %zu steps; "
              "%llu submissions for %llu steps + the first token)\n",
              encdec ? o.tgt_len : o.src_len + o.tgt_len, step, k,
              (unsigned long long)st.submissions, (unsigned long long)st.steps);
  // Without the cache a step is a whole forward pass over the prefix.
  std::vector<Ids> prefix = encdec ? tgt : std::vector<Ids>{};
  std::vector<double> full;
  std::vector<Ids> long_src = src;
  if (!encdec)
    for (auto& s : long_src) {
      Ids more = random_ids(o.tgt_len, c.src_vocab_size);
      s.insert(s.end(), more.begin(), more.end());
    }
  for (unsigned i = 0; i <= o.repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    session.forward(long_src, prefix);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i) full.push_back(ms);
  }
  std::printf("decode step without cache (full recompute of the same prefix): %.1f ms -> cache is %.1fx faster\n",
              median(full), median(full) / step);
  return 0;
}

int run_devices(const ContextOptions& ctx_opts, bool json) {
  auto devs = list_devices();
  Context ctx(ctx_opts);
  const Capabilities& picked = ctx.caps();
  auto is_picked = [&](const DeviceDescription& d) {
    return d.caps.device_id == picked.device_id && d.caps.vendor_id == picked.vendor_id &&
           d.name == picked.device_name;
  };
  if (json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& d : devs) {
      const Capabilities& c = d.caps;
      arr.push_back({{"index", d.index},
                     {"name", d.name},
                     {"type", d.type},
                     {"driver", d.driver},
                     {"api_version", std::to_string(c.api_version >> 22) + "." +
                                         std::to_string((c.api_version >> 12) & 0x3ff) + "." +
                                         std::to_string(c.api_version & 0xfff)},
                     {"subgroup_size", c.subgroup_size},
                     {"subgroup_arithmetic", c.subgroup_arithmetic},
                     {"max_shared_memory", c.max_shared_memory},
                     {"max_workgroup_invocations", c.max_workgroup_invocations},
                     {"max_workgroup_count", {c.max_workgroup_count[0], c.max_workgroup_count[1],
                                              c.max_workgroup_count[2]}},
                     {"max_storage_buffer_range", c.max_storage_buffer_range},
                     {"fp16_storage", c.storage_16bit},
                     {"timestamps", c.timestamps},
                     {"device_local_bytes", c.device_local_bytes},
                     {"picked", is_picked(d)}});
    }
    std::printf("%s\n", nlohmann::json{{"devices", arr}}.dump(2).c_str());
    return 0;
  }
  for (const auto& d : devs) {
    const Capabilities& c = d.caps;
    std::printf("%u: %s (%s, driver %s, Vulkan %u.%u)%s\n", d.index, d.name.c_str(), d.type.c_str(),
                d.driver.c_str(), c.api_version >> 22, (c.api_version >> 12) & 0x3ff,
                is_picked(d) ? "  <- picked" : "");
    std::printf("   subgroup %u (arithmetic %s), shared memory %u KiB, max invocations %u, "
                "max workgroups %u x %u x %u\n",
                c.subgroup_size, c.subgroup_arithmetic ? "yes" : "no", c.max_shared_memory / 1024,
                c.max_workgroup_invocations, c.max_workgroup_count[0], c.max_workgroup_count[1],
                c.max_workgroup_count[2]);
    std::printf("   maxStorageBufferRange %llu MiB, fp16 storage %s, timestamps %s, "
                "device-local memory %llu MiB\n",
                (unsigned long long)(c.max_storage_buffer_range >> 20), c.storage_16bit ? "yes" : "no",
                c.timestamps ? "yes" : "no", (unsigned long long)(c.device_local_bytes >> 20));
  }
  return 0;
}

}  // namespace vkf::tools
