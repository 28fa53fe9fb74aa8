#include "chat_command.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iostream>

#include "model_commands.hpp"
#include "output_file.hpp"
#include "run/search.hpp"
#include "text/text_stream.hpp"
#include "usage_error.hpp"
#include "vkformer/session.hpp"

namespace vkf::tools {

int run_chat(const ContextOptions& ctx_opts, const GenerateCliOptions& o) {
  if (o.beam && *o.beam > 1) throw UsageError("chat generates one answer: no --beam");
  const ModelDir dir = ModelDir::open(o.model_dir, TokenizerUse::Required);  // before the device
  if (!dir.supports(Task::Generate)) throw Error(dir.refusal(Task::Generate));
  const ChatTemplate tmpl = ChatTemplate::load(o.model_dir, dir.tokenizer());
  const Tokenizer& tok = *dir.tokenizer();
  GenerateOptions g = generate_options(dir, o);
  g.eos_token_ids = tmpl.end_ids(stop_tokens(dir.config(), g));
  // An answer ends at the end of its turn: no length limit unless --max-new-tokens gives one.
  const uint32_t max_new = o.max_new_tokens.value_or(0);

  Context ctx(ctx_opts);
  auto model = load_model(ctx, o.model_dir, o.precision);
  Session session(model);
  const uint32_t positions = model->config().max_positions;
  const bool terminal = isatty(STDIN_FILENO);
  std::vector<ChatMessage> history;
  std::string line;
  for (;;) {
    if (terminal) std::fputs("> ", stderr), std::fflush(stderr);
    if (!std::getline(std::cin, line)) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      history.clear();
      if (terminal) std::fputs("(the conversation starts over)\n", stderr);
      continue;
    }
    const std::vector<ChatMessage> messages = chat_messages(o.system, history, line);
    const Ids prompt = tmpl.encode(messages);
    if (prompt.size() >= positions) {
      const std::string why = "the conversation is " + std::to_string(prompt.size()) +
                              " tokens, the model's max_position_embeddings is " + std::to_string(positions);
      if (!terminal) throw Error(why);
      std::fprintf(stderr, "vkformer: %s: /reset to start over\n", why.c_str());
      continue;
    }
    g.max_new_tokens = max_new ? std::min<uint32_t>(max_new, positions - uint32_t(prompt.size()))
                               : positions - uint32_t(prompt.size());
    TextStream stream(tok, o.stops);
    int stdout_errno = 0;
    g.on_token = [&](uint32_t, int32_t id) {
      std::fputs(stream.push(id).c_str(), stdout);
      if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        stdout_errno = errno;  // thrown below
        return false;
      }
      return !stream.stopped();
    };
    session.generate({prompt}, g);
    flush_stdout(stdout_errno);  // a closed pipe or a full disk: "stdout: write error: ...", exit 1
    std::fputs(stream.finish().c_str(), stdout);
    std::fputs("\n", stdout);
    std::fflush(stdout);
    history.push_back({"user", line});
    history.push_back({"assistant", stream.text()});
  }
  return 0;
}

}  // namespace vkf::tools
