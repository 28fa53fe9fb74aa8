#include "embed_command.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "model_commands.hpp"
#include "encoder_input.hpp"
#include "npy.hpp"
#include "text_input.hpp"
#include "usage_error.hpp"
#include "vkformer/model.hpp"
#include "vkformer/session.hpp"
#include "vkformer/model_dir.hpp"

namespace vkf::tools {
namespace {

/// At most `n` code points of valid UTF-8 `s`, with "…" when cut; control characters shown as spaces.
std::string shorten(const std::string& s, size_t n) {
  std::string out;
  size_t count = 0, i = 0;
  while (i < s.size()) {
    size_t len = 1;
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0xF0) len = 4;
    else if (c >= 0xE0) len = 3;
    else if (c >= 0xC0) len = 2;
    if (count == n) return out + "…";
    out += (c < 0x20 || c == 0x7f) ? std::string(" ") : s.substr(i, len);  // no control characters in the table
    i += len;
    ++count;
  }
  return out;
}

constexpr uint32_t kMaxTable = 16;  // beyond, an n x n table is no longer readable

void print_similarities(const EmbedOutput& e, const std::vector<std::string>& labels) {
  std::printf("cosine similarity\n");
  for (uint32_t a = 0; a < e.batch; ++a)
    std::printf("  [%u] %s  (%u tokens)\n", a + 1, labels[a].c_str(), e.lengths[a]);
  std::printf("\n     ");
  for (uint32_t b = 0; b < e.batch; ++b) std::printf(" %6s", ("[" + std::to_string(b + 1) + "]").c_str());
  std::printf("\n");
  for (uint32_t a = 0; a < e.batch; ++a) {
    std::printf("%5s", ("[" + std::to_string(a + 1) + "]").c_str());
    for (uint32_t b = 0; b < e.batch; ++b) {
      double dot = 0, na = 0, nb = 0;
      for (uint32_t c = 0; c < e.dim; ++c) {
        const double x = e.data[size_t(a) * e.dim + c], y = e.data[size_t(b) * e.dim + c];
        dot += x * y, na += x * x, nb += y * y;
      }
      // A NaN (or inf) embedding gives "nan", never a plausible 0.000 (a zero vector gives 0).
      if (!std::isfinite(na) || !std::isfinite(nb)) std::printf(" %6s", "nan");
      else std::printf(" %6.3f", na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : 0.0);
    }
    std::printf("\n");
  }
}

}  // namespace

int run_embed(const ContextOptions& ctx_opts, const EmbedOptions& o) {
  const std::vector<std::string> sentences =
      o.ids.empty() || !o.sentences.empty() || !o.input.empty() ? read_texts(o.sentences, o.input)
                                                                 : std::vector<std::string>{};
  if (!sentences.empty() && !o.ids.empty())
    throw UsageError("give sentences or --ids, not both (--ids bypasses the tokenizer)");
  if (sentences.empty() && o.ids.empty()) throw UsageError("give at least one sentence (as arguments, --input FILE, stdin, or --ids)");
  parse_precision(o.precision);  // before the device: a bad value fails fast

  if (o.repeat < 1) throw UsageError("--repeat must be at least 1");
  if (o.batch_size < 1) throw UsageError("--batch-size must be at least 1");
  if (o.out == "-" && o.json) throw UsageError("--out - and --json both write to stdout: choose one");
  RunOptions ro;
  ro.pooling = o.pooling;
  if (o.normalize) ro.normalize = 1;

  std::vector<Ids> ids;
  std::vector<std::string> labels;
  // Before the device: a bad config.json or tokenizer.json, or a model that does not embed, fails fast.
  const ModelDir dir = ModelDir::open(o.model_dir, sentences.empty() ? TokenizerUse::Skip : TokenizerUse::Required);
  if (!dir.supports(Task::Embed)) throw Error(o.model_dir + ": " + dir.refusal(Task::Embed));
  const std::shared_ptr<const Tokenizer>& tokenizer = dir.tokenizer();
  if (!o.ids.empty()) {
    ids = parse_ids(o.ids, "--ids");
    for (const auto& s : o.ids) labels.push_back("ids " + shorten(s, 60));
  }
  for (const auto& s : sentences) labels.push_back("\"" + shorten(s, 60) + "\"");

  Context ctx(ctx_opts);
  auto model = load_model(ctx, o.model_dir, o.precision);
  const ModelInfo info = model->info();
  if (tokenizer) ids = encode_texts(*tokenizer, info, sentences);
  Session session(model);
  // One submission per batch of --batch-size texts.
  size_t batch = o.batch_size;  // in_batches halves it when a batch does not fit the device
  auto embed_all = [&] {
    EmbedOutput all;
    batch = in_batches(ids.size(), batch, [&](size_t b0, size_t b1) {
      EmbedOutput part = session.embed({ids.begin() + std::ptrdiff_t(b0), ids.begin() + std::ptrdiff_t(b1)}, ro);
      all.batch += part.batch;
      all.dim = part.dim;
      all.lengths.insert(all.lengths.end(), part.lengths.begin(), part.lengths.end());
      all.data.insert(all.data.end(), part.data.begin(), part.data.end());
    });
    return all;
  };
  // The first call records the command buffer (and on lavapipe compiles the
  // pipelines it has not seen); later calls only write ids and resubmit.
  std::vector<double> ms;
  EmbedOutput e;
  for (unsigned r = 0; r < o.repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    e = embed_all();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  for (uint32_t b = 0; b < e.batch; ++b)
    if (ids[b].size() > e.lengths[b])
      std::fprintf(stderr, "vkformer: input #%u has %zu tokens; only the first %u count (as in TF.js)\n", b + 1,
                   ids[b].size(), e.lengths[b]);

  if (!o.out.empty()) write_npy(o.out, {e.batch, e.dim}, e.data);
  if (o.json) {
    nlohmann::json j;
    j["embeddings"] = nlohmann::json::array();
    for (uint32_t b = 0; b < e.batch; ++b)
      j["embeddings"].push_back(std::vector<float>(e.data.begin() + size_t(b) * e.dim,
                                                   e.data.begin() + size_t(b + 1) * e.dim));
    std::printf("%s\n", j.dump().c_str());
  } else if (o.out != "-") {
    if (e.batch <= kMaxTable) print_similarities(e, labels);
    else std::printf("%u embeddings of %u floats; the similarity table is shown for up to %u texts (use --json or --out FILE.npy for the data)\n",
                     e.batch, e.dim, kMaxTable);
  }
  if (o.profile) {
    // Timestamps serialize the dispatches, so each time is the kernel's own.
    session.set_profiling(true);
    session.embed({ids.begin(), ids.begin() + std::ptrdiff_t(std::min<size_t>(ids.size(), batch))}, ro);
    std::map<std::string, std::pair<double, int>> by_op;  // "op/variant" -> (ms, dispatches)
    double total = 0;
    for (const auto& t : session.stats().timings) {
      const size_t slash = t.label.find('/');
      auto& slot = by_op[slash == std::string::npos ? t.label : t.label.substr(slash + 1)];
      slot.first += t.ms;
      slot.second += 1;
      total += t.ms;
    }
    std::fprintf(stderr, "vkformer: device time of one embed() by op (%.2f ms in all):\n", total);
    for (const auto& [op, v] : by_op)
      std::fprintf(stderr, "  %-28s %8.3f ms  %5.1f%%  (%d dispatches)\n", op.c_str(), v.first,
                   total > 0 ? 100 * v.first / total : 0, v.second);
  }
  std::string timing = std::to_string(int(ms[0] + 0.5)) + " ms";
  if (ms.size() > 1) {
    std::vector<double> rest(ms.begin() + 1, ms.end());
    std::sort(rest.begin(), rest.end());
    char buf[96];
    std::snprintf(buf, sizeof buf, " the first time, then %.1f ms (median of %zu)", rest[rest.size() / 2], rest.size());
    timing += buf;
  }
  std::fprintf(stderr, "vkformer: %u embedding(s) of %u in %s (%s weights: %s; batches of %u, %llu submission per batch)%s%s\n",
               e.batch, e.dim, timing.c_str(), o.precision.c_str(), weight_memory_text(*model).c_str(), unsigned(batch),
               (unsigned long long)session.stats().submissions, o.out.empty() ? "" : ", wrote ", o.out.c_str());
  return 0;
}

}  // namespace vkf::tools
