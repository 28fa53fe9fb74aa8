#include "generate_command.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <memory>

#include "model_commands.hpp"
#include "output_file.hpp"
#include "run/search.hpp"
#include "text/text_stream.hpp"
#include "text_input.hpp"
#include "usage_error.hpp"
#include "vkformer/session.hpp"
#include "vkformer/model_dir.hpp"

namespace vkf::tools {

GenerateOptions generate_options(const ModelDir& dir, const GenerateCliOptions& o) {
  GenerateOptions g = dir.generation();
  if (o.beam) g.beam = *o.beam;
  if (o.max_new_tokens) g.max_new_tokens = *o.max_new_tokens;
  if (o.length_penalty) g.length_penalty = *o.length_penalty;
  if (o.do_sample) g.do_sample = true;
  if (o.greedy) g.do_sample = false;
  if (o.temperature) g.temperature = *o.temperature;
  if (o.top_k) g.top_k = *o.top_k;
  if (o.top_p) g.top_p = *o.top_p;
  if (o.min_p) g.min_p = *o.min_p;
  if (o.repetition_penalty) g.repetition_penalty = *o.repetition_penalty;
  if (o.no_repeat_ngram_size) g.no_repeat_ngram_size = *o.no_repeat_ngram_size;
  g.seed = o.seed;
  g.use_cache = !o.no_cache;
  g.kv_cache = parse_kv_cache_type(o.kv_cache, "--kv-cache");
  // The file's values were checked as it was read: what is wrong now is the command line's.
  try {
    validate(g);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  return g;
}

std::vector<ChatMessage> chat_messages(const std::string& system, const std::vector<ChatMessage>& history,
                                       const std::string& user) {
  std::vector<ChatMessage> m;
  if (!system.empty()) m.push_back({"system", system});
  m.insert(m.end(), history.begin(), history.end());
  m.push_back({"user", user});
  return m;
}

int run_generate(const ContextOptions& ctx_opts, const GenerateCliOptions& o) {
  if (o.do_sample && o.greedy) throw UsageError("--do-sample and --greedy contradict each other");
  if (o.stream && o.json) throw UsageError("--stream prints text as it comes; --json prints at the end: choose one");
  const bool chat = !o.chat.empty();
  if (chat && (!o.prompts.empty() || !o.texts.empty() || !o.input.empty() || !o.src_ids.empty()))
    throw UsageError("--chat is the one message; give no other prompts or ids");
  if (!o.system.empty() && !chat) throw UsageError("--system goes with --chat");
  if (chat && o.beam && *o.beam > 1) throw UsageError("--chat generates one answer: no --beam");
  const bool text_in = chat || !o.prompts.empty() || !o.texts.empty() || !o.input.empty() || o.src_ids.empty();
  if (text_in && !o.src_ids.empty()) throw UsageError("give text (--prompt, arguments, --input) or --src-ids, not both");
  // Before the device: a bad file (or a model without a chat template) fails fast.
  const ModelDir dir = ModelDir::open(o.model_dir, chat ? TokenizerUse::Required : TokenizerUse::IfPresent);
  GenerateOptions g = generate_options(dir, o);
  const std::shared_ptr<const Tokenizer>& tok = dir.tokenizer();
  if (!o.stops.empty() && !tok)
    throw Error("--stop needs a tokenizer in " + o.model_dir + " (tokenizer.json, vocab.txt or vocab.json + merges.txt)");

  std::vector<Ids> src = parse_ids(o.src_ids, "--src-ids");
  if (chat) {
    const ChatTemplate tmpl = ChatTemplate::load(o.model_dir, tok);
    src.push_back(tmpl.encode(chat_messages(o.system, {}, o.chat)));
    g.eos_token_ids = tmpl.end_ids(stop_tokens(dir.config(), g));
  } else if (text_in) {
    std::vector<std::string> texts = o.prompts;
    if (!o.texts.empty() || !o.input.empty() || o.prompts.empty())
      for (std::string& t : read_texts(o.texts, o.input)) texts.push_back(std::move(t));
    if (texts.empty()) throw Error("give a --prompt, texts, --input FILE or --src-ids");
    if (!tok)
      throw Error(o.model_dir + " has no tokenizer (tokenizer.json, vocab.txt or vocab.json + merges.txt): "
                  "give --src-ids");
    for (const std::string& t : texts) src.push_back(tok->encode(t));
  }

  const uint32_t n = uint32_t(src.size());
  const bool stream = o.stream && n == 1;
  if (o.stream && n > 1) std::fprintf(stderr, "vkformer: warning: streaming is off with %u prompts\n", n);
  std::vector<TextStream> streams;
  if (tok)
    for (uint32_t b = 0; b < n; ++b) streams.emplace_back(*tok, o.stops);
  const bool text_out = tok && text_in;
  size_t streamed = 0;  // ids printed so far (streaming without text)
  int stdout_errno = 0;
  g.on_token = [&](uint32_t b, int32_t id) {
    if (tok) {
      std::string piece = streams[b].push(id);
      if (stream && text_out) std::fputs(piece.c_str(), stdout);
    }
    if (stream && !text_out && !(tok && streams[b].stopped())) std::printf("%s%d", streamed++ ? "," : "", id);
    if (stream && (std::fflush(stdout) != 0 || std::ferror(stdout))) {
      stdout_errno = errno ? errno : EIO;  // a closed pipe or a full disk: stop, then say so
      return false;
    }
    return !(tok && streams[b].stopped());
  };

  Context ctx(ctx_opts);
  auto model = load_model(ctx, o.model_dir, o.precision);
  const bool no_limit = g.max_new_tokens == 0;
  if (no_limit) {
    // 0: no limit but the model's positions (as in translate).
    const ModelConfig& cfg = model->config();
    size_t longest = 0;
    for (const Ids& s : src) longest = std::max(longest, s.size());
    const size_t room = cfg.encoder_decoder() ? cfg.max_positions
                                              : cfg.max_positions > longest ? cfg.max_positions - longest : 0;
    if (room == 0)
      throw Error("a prompt has " + std::to_string(longest) + " tokens: no room left in the model's max_positions " +
                  std::to_string(cfg.max_positions));
    g.max_new_tokens = uint32_t(room);
  }
  Session session(model);
  std::vector<Ids> out = session.generate(src, g);
  if (stdout_errno) flush_stdout(stdout_errno);  // throws "stdout: write error: ..."

  std::vector<std::string> texts;
  for (uint32_t b = 0; b < n && tok; ++b) {
    const std::string rest = streams[b].finish();
    if (stream && text_out) std::fputs(rest.c_str(), stdout);
    texts.push_back(streams[b].text());
  }
  if (o.json) {
    nlohmann::json j;
    j["sequences"] = out;
    if (tok) j["texts"] = texts;
    std::printf("%s\n", j.dump().c_str());
  } else if (stream) {
    std::printf("\n");
  } else {
    for (uint32_t b = 0; b < n; ++b) {
      if (text_out) {
        std::printf("%s\n", texts[b].c_str());
        continue;
      }
      // Ids as --src-ids takes them; with a tokenizer, their text (a JSON string) on the next line.
      std::string line;
      for (size_t i = 0; i < out[b].size(); ++i) line += (i ? "," : "") + std::to_string(out[b][i]);
      std::printf("%s\n", line.c_str());
      if (tok)
        std::printf("%s\n", nlohmann::json(texts[b]).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    }
  }
  std::fflush(stdout);
  for (uint32_t b = 0; b < n; ++b)
    if (g.max_new_tokens > 0 && out[b].size() == g.max_new_tokens && !(tok && streams[b].stopped()))
      std::fprintf(stderr, "vkformer: sequence %u was cut at %s %u\n", b + 1,
                   no_limit ? "the end of the model's positions, after" : "--max-new-tokens", g.max_new_tokens);
  std::fprintf(stderr, "vkformer: %llu decode steps, %llu submissions\n",
               (unsigned long long)session.stats().steps, (unsigned long long)session.stats().submissions);
  return 0;
}

}  // namespace vkf::tools
