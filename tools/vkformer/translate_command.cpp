#include "translate_command.hpp"

#include <algorithm>
#include <cstdio>

#include "model_commands.hpp"
#include "progress.hpp"
#include "text_input.hpp"
#include "usage_error.hpp"
#include "vkformer/model.hpp"
#include "vkformer/session.hpp"
#include "vkformer/model_dir.hpp"

namespace vkf::tools {

int run_translate(const ContextOptions& ctx_opts, const TranslateOptions& o) {
  const std::vector<std::string> texts = read_texts(o.texts, o.input);
  if (texts.empty()) throw UsageError("give at least one text to translate (as arguments, --input FILE or stdin)");
  // Everything that can be checked without the device is checked first.
  const ModelDir dir = ModelDir::open(o.model_dir, TokenizerUse::Required);
  const ModelConfig& cfg = dir.config();
  if (!cfg.encoder_decoder())
    throw Error(o.model_dir + "/config.json: translate needs an encoder-decoder model (decoder_layers > 0)");
  const Tokenizer& tok = *dir.tokenizer();
  if (tok.vocab_size() != cfg.src_vocab_size || tok.vocab_size() != cfg.tgt_vocab_size)
    throw Error("the tokenizer of " + o.model_dir + " has " + std::to_string(tok.vocab_size()) +
                " ids, but config.json has a source vocabulary of " + std::to_string(cfg.src_vocab_size) +
                " and a target vocabulary of " + std::to_string(cfg.tgt_vocab_size));
  parse_precision(o.precision);  // before the device: a bad value fails fast
  GenerateOptions g = dir.generation();
  if (o.beam > 0) g.beam = o.beam;
  if (o.length_penalty) g.length_penalty = *o.length_penalty;
  if (o.batch_size < 1) throw UsageError("--batch-size must be at least 1");
  // 0, as the default: no limit but the model's (as in generate).
  const uint32_t max_new = o.max_new_tokens ? o.max_new_tokens : cfg.max_positions;
  if (max_new > cfg.max_positions)
    throw UsageError("--max-new-tokens " + std::to_string(max_new) + " is more than the model's max_positions " +
                std::to_string(cfg.max_positions));

  std::vector<Ids> src;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string which = "text #" + std::to_string(i + 1);
    Ids ids;
    try {
      ids = tok.encode(texts[i]);
    } catch (const Error& e) {
      throw Error(which + ": " + e.what());
    }
    if (ids.empty()) throw Error(which + " is empty");
    if (ids.size() > cfg.max_positions)
      throw Error(which + " has " + std::to_string(ids.size()) + " tokens, more than the model's max_positions " +
                  std::to_string(cfg.max_positions));
    src.push_back(std::move(ids));
  }

  g.max_new_tokens = max_new;
  // The file's values were checked as it was read: what is wrong now is the command line's.
  try {
    validate(g);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }

  Context ctx(ctx_opts);
  auto model = load_model(ctx, o.model_dir, o.precision);
  Session session(model);
  Progress progress("translate", src.size(), "texts");
  // Chunks bound the KV cache (texts x beam x positions x d floats per layer),
  // which one binding must cover; results do not depend on how texts are batched.
  const uint64_t per_text = uint64_t(g.beam) * cfg.max_positions * std::max(cfg.d_model, cfg.d_ff) * 4;
  const uint64_t fit = ctx.caps().max_storage_buffer_range / std::max<uint64_t>(per_text, 1);
  if (fit == 0)
    throw Error("--beam " + std::to_string(g.beam) + " needs a KV cache of " + std::to_string(per_text >> 20) +
                     " MiB per text and layer, more than one binding of this device holds (" +
                     std::to_string(ctx.caps().max_storage_buffer_range >> 20) + " MiB)");
  const size_t batch = size_t(std::min<uint64_t>(o.batch_size, fit));
  for (size_t first = 0; first < src.size(); first += batch) {
    const size_t n = std::min<size_t>(batch, src.size() - first);
    const std::vector<Ids> chunk(src.begin() + first, src.begin() + first + n);
    const std::vector<Ids> out = session.generate(chunk, g);
    for (size_t i = 0; i < out.size(); ++i) {
      std::printf("%s\n", tok.decode(out[i]).c_str());
      // Without EOS the output stops only at the limit: say it is cut.
      if (out[i].size() >= max_new)
        std::fprintf(stderr, "vkformer: text #%zu was cut at %s %u\n", first + i + 1,
                     o.max_new_tokens ? "--max-new-tokens" : "the model's max_positions", max_new);
    }
    progress.update(first + n);
  }
  return 0;
}

}  // namespace vkf::tools
