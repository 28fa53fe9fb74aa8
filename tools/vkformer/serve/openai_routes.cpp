// OpenAI's API, as its clients send it: GET /v1/models, POST /v1/embeddings,
// POST /v1/completions and POST /v1/chat/completions (with "stream": server-sent
// events ending in [DONE]).
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <deque>

#include "encoder_input.hpp"
#include "model/json_text.hpp"
#include "run/search.hpp"
#include "serve/routes.hpp"
#include "text/text_stream.hpp"

namespace vkf::tools::serve {
namespace {

/// "input" / "prompt": a string, a list of strings, a list of token ids, or a list of id lists.
struct Inputs {
  std::vector<std::string> texts;
  std::vector<Ids> ids;
  size_t size() const { return texts.size() + ids.size(); }
};

bool is_id(const json& x) {
  return x.is_number_integer() && (x.is_number_unsigned() || x.get<int64_t>() >= 0) && x.get<uint64_t>() <= INT32_MAX;
}

Ids id_list(const json& v, const std::string& where) {
  Ids ids;
  for (const json& x : v) {
    if (!is_id(x)) throw HttpError(400, where + " must hold token ids (integers ≥ 0)");
    ids.push_back(x.get<int32_t>());
  }
  return ids;
}

Inputs read_inputs(const json& body, const char* key, unsigned max_inputs, bool empty_text_ok) {
  const std::string where = std::string("\"") + key + "\"";
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) throw HttpError(400, where + " is required");
  const json& v = *it;
  Inputs in;
  if (v.is_string()) {
    in.texts.push_back(v.get<std::string>());
  } else if (v.is_array() && !v.empty() && is_id(v[0])) {
    in.ids.push_back(id_list(v, where));
  } else if (v.is_array() && !v.empty()) {
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string item = where + "[" + std::to_string(i) + "]";
      if (v[i].is_string()) in.texts.push_back(v[i].get<std::string>());
      else if (v[i].is_array() && !v[i].empty()) in.ids.push_back(id_list(v[i], item));
      else throw HttpError(400, item + " must be a string or a non-empty list of token ids");
    }
    if (!in.texts.empty() && !in.ids.empty()) throw HttpError(400, where + " mixes texts and token ids");
  } else {
    throw HttpError(400, where + " must be a string, a list of strings, or token ids");
  }
  if (in.size() > max_inputs)
    throw HttpError(400, where + " has " + std::to_string(in.size()) + " items, more than " +
                             std::to_string(max_inputs) + " (--max-inputs)");
  if (!empty_text_ok)
    for (size_t i = 0; i < in.texts.size(); ++i)
      if (in.texts[i].empty()) throw HttpError(400, where + (in.size() > 1 ? "[" + std::to_string(i) + "]" : "") + " is empty");
  return in;
}

std::string string_or(const json& body, const char* key, const std::string& fallback) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_string()) throw HttpError(400, std::string("\"") + key + "\" must be a string");
  return it->get<std::string>();
}

/// A number field, when present and not null: in [lo, hi], or (lo, hi] with `open_lo`.
std::optional<double> number(const json& body, const char* key, double lo, double hi, bool open_lo = false) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < lo || it->get<double>() > hi ||
      (open_lo && it->get<double>() == lo)) {
    char range[64];
    std::snprintf(range, sizeof range, "%s%g, %g]", open_lo ? "(" : "[", lo, hi);
    throw HttpError(400, std::string("\"") + key + "\" must be a number in " + range + ", got " + brief_json(*it));
  }
  return it->get<double>();
}

/// A boolean field, when present and not null: true or false, nothing else ("yes", 1).
std::optional<bool> boolean(const json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) throw HttpError(400, std::string("\"") + key + "\" must be true or false, got " + brief_json(*it));
  return it->get<bool>();
}

std::optional<int64_t> integer(const json& body, const char* key, int64_t lo, int64_t hi) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi ||
      (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(hi)))
    throw HttpError(400, std::string("\"") + key + "\" must be an integer from " + std::to_string(lo) + " to " +
                             std::to_string(hi) + ", got " + brief_json(*it));
  return it->get<int64_t>();
}

/// Token ids checked against the model's limit before they are queued.
void check_lengths(const std::vector<Ids>& ids, uint32_t limit, const char* key) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (limit && ids[i].size() > limit)
      throw HttpError(400, std::string("\"") + key + "\" item " + std::to_string(i) + " has " +
                               std::to_string(ids[i].size()) + " tokens, more than the model's " + std::to_string(limit));
}

std::string base64(const float* data, size_t n) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* b = reinterpret_cast<const unsigned char*>(data);
  const size_t len = n * sizeof(float);
  std::string out;
  for (size_t i = 0; i < len; i += 3) {
    const uint32_t v = uint32_t(b[i]) << 16 | (i + 1 < len ? uint32_t(b[i + 1]) << 8 : 0) | (i + 2 < len ? b[i + 2] : 0);
    out += k[v >> 18 & 63];
    out += k[v >> 12 & 63];
    out += i + 1 < len ? k[v >> 6 & 63] : '=';
    out += i + 2 < len ? k[v & 63] : '=';
  }
  return out;
}

void embeddings(Server& s, const HttpRequest& req, HttpResponse& res) {
  const json body = s.body(req);
  const ServedModel& m = s.model(string_or(body, "model", ""));
  if (!m.embeds) throw HttpError(400, "the model \"" + m.name + "\" does not make embeddings (model_type \"" +
                                          m.model->config().model_type + "\")");
  const std::string format = string_or(body, "encoding_format", "float");
  if (format != "float" && format != "base64")
    throw HttpError(400, "\"encoding_format\" must be \"float\" or \"base64\", got \"" + format + "\"");
  if (body.contains("dimensions") && !body["dimensions"].is_null() && body["dimensions"] != m.dim)
    throw HttpError(400, "\"dimensions\": the model \"" + m.name + "\" makes embeddings of " + std::to_string(m.dim));
  Inputs in = read_inputs(body, "input", s.options.max_inputs, false);
  if (!in.texts.empty()) {
    if (!m.tok) throw HttpError(400, "the model \"" + m.name + "\" has no tokenizer: send token ids");
    std::vector<bool> truncated;  // cut at the model's limit, as sentence-transformers does
    in.ids = encode_texts(*m.tok, m.info, in.texts, &truncated);
  } else {
    check_lengths(in.ids, m.max_tokens, "input");
  }
  auto f = s.engine.embed(m, in.ids);
  const EmbedOutput e = s.await(f);
  json data = json::array();
  uint64_t tokens = 0;
  for (uint32_t b = 0; b < e.batch; ++b) {
    const float* row = e.data.data() + size_t(b) * e.dim;
    json item = {{"object", "embedding"}, {"index", b}};
    if (format == "base64") item["embedding"] = base64(row, e.dim);
    else item["embedding"] = std::vector<float>(row, row + e.dim);
    data.push_back(std::move(item));
    tokens += e.lengths[b];
  }
  reply(s.metrics, "/v1/embeddings", res, 200,
        {{"object", "list"}, {"data", std::move(data)}, {"model", m.name},
         {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
}

/// One completion request's sequences as they are generated: the text of each
/// choice (stop strings cut), and the server-sent events not yet written.
struct Completion {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<TextStream> streams;
  std::deque<std::string> events;  ///< "data: {...}\n\n", streaming only
  std::atomic<bool> gone{false};   ///< the client closed the connection
};

/// How a generation route words its replies: OpenAI's text completions, or chat
/// completions (a message, and streamed deltas that open with the role).
struct Shape {
  std::string route;  ///< "/v1/completions"
  std::string id;     ///< "cmpl-<n>" or "chatcmpl-<n>"
  bool chat = false;
  std::string name;   ///< the model's
  int64_t created = 0;

  Shape(const char* route, bool chat, const std::string& name)
      : route(route), id(std::string(chat ? "chatcmpl-" : "cmpl-") +
                         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count())),
        chat(chat), name(name), created(int64_t(std::time(nullptr))) {}

  json head(const char* object) const {
    return {{"id", id}, {"object", object}, {"created", created}, {"model", name}};
  }
  /// One server-sent event: choice `index` grew by `text` (chat: and says its role first), or ended (`finish`).
  std::string chunk(uint32_t index, const std::string& text, const json& finish, bool role = false) const {
    json choice = {{"index", index}, {"finish_reason", finish}};
    if (chat) {
      json delta = json::object();
      if (role) delta["role"] = "assistant";
      if (!text.empty() || role) delta["content"] = text;
      choice["delta"] = delta;
    } else {
      choice["text"] = text;
      choice["logprobs"] = nullptr;
    }
    json j = head(chat ? "chat.completion.chunk" : "text_completion");
    j["choices"] = json::array({choice});  // not {choice}: clang reads that as a copy of the object, gcc as an array
    return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
  }
  /// A whole choice of the non-streaming reply.
  json choice(uint32_t index, const std::string& text, const char* finish, const Ids& tokens) const {
    if (chat)
      return {{"index", index}, {"message", {{"role", "assistant"}, {"content", text}}}, {"finish_reason", finish},
              {"logprobs", nullptr}};
    return {{"text", text}, {"index", index}, {"logprobs", nullptr}, {"finish_reason", finish}, {"tokens", tokens}};
  }
};

/// The request's generation options over the model's generation_config.json, and its stop strings.
GenerateOptions request_options(const Server& s, const ServedModel& m, const json& body,
                                std::vector<std::string>& stops) {
  // Temperature 0 means greedy; a temperature > 0 samples (top_k off unless given, as OpenAI has none).
  GenerateOptions g = m.gen_defaults;
  auto max_tokens = integer(body, "max_tokens", 0, s.options.max_tokens);
  if (auto mct = integer(body, "max_completion_tokens", 0, s.options.max_tokens)) max_tokens = mct;  // the newer name
  g.max_new_tokens = uint32_t(max_tokens.value_or(16));
  if (auto t = number(body, "temperature", 0, 100)) {
    g.do_sample = *t > 0;
    if (g.do_sample) g.temperature = *t, g.top_k = 0;
  }
  if (auto p = number(body, "top_p", 0, 1, true)) g.top_p = *p;
  if (auto k = integer(body, "top_k", 0, INT32_MAX)) g.top_k = int32_t(*k);
  if (auto p = number(body, "min_p", 0, 1)) g.min_p = *p;
  if (auto p = number(body, "repetition_penalty", 0, 100)) g.repetition_penalty = *p;
  if (auto seed = integer(body, "seed", INT64_MIN, INT64_MAX)) g.seed = uint64_t(*seed);
  g.beam = 1;
  if (body.contains("stop") && !body["stop"].is_null()) {
    const json& st = body["stop"];
    if (st.is_string()) stops.push_back(st.get<std::string>());
    else if (st.is_array() && st.size() <= 4 && std::all_of(st.begin(), st.end(), [](const json& x) { return x.is_string(); }))
      for (const json& x : st) stops.push_back(x.get<std::string>());
    else throw HttpError(400, "\"stop\" must be a string or a list of up to 4 strings");
    if (!m.tok) throw HttpError(400, "\"stop\" needs a tokenizer; the model \"" + m.name + "\" has none");
  }
  if (body.contains("logprobs") && !body["logprobs"].is_null() && body["logprobs"] != false)
    throw HttpError(400, "\"logprobs\" is not supported");
  try {
    validate(g);
  } catch (const Error& e) {
    throw HttpError(400, e.what());
  }
  return g;
}

/// Generates `sources` and replies in `shape`: the whole reply, or (with "stream") server-sent events.
void reply_generation(Server& s, HttpResponse& res, const ServedModel& m, const Shape& shape, bool stream,
                      const std::vector<Ids>& sources, const GenerateOptions& g, const std::vector<std::string>& stops) {
  auto c = std::make_shared<Completion>();
  if (m.tok)
    for (size_t i = 0; i < sources.size(); ++i) c->streams.emplace_back(*m.tok, stops);
  if (stream && shape.chat)  // a chat stream opens each choice with its role
    for (uint32_t b = 0; b < sources.size(); ++b) c->events.push_back(shape.chunk(b, "", nullptr, true));
  TokenSink sink = [c, stream, shape](uint32_t b, int32_t token) {
    std::lock_guard<std::mutex> l(c->mu);
    if (c->gone) return false;
    if (c->streams.empty()) return true;
    const std::string piece = c->streams[b].push(token);
    if (stream && !piece.empty()) {
      c->events.push_back(shape.chunk(b, piece, nullptr));
      c->cv.notify_all();
    }
    return !c->streams[b].stopped();
  };
  auto future = std::make_shared<std::future<std::vector<Ids>>>(s.engine.generate(m, sources, g, sink));

  // How each choice ended, and its rest of the text, once generation is over.
  auto finish = [c, g](const std::vector<Ids>& out, uint32_t b, std::string& rest) {
    const bool stopped = !c->streams.empty() && c->streams[b].stopped();
    if (!c->streams.empty()) rest = c->streams[b].finish();
    return !stopped && g.max_new_tokens > 0 && out[b].size() == g.max_new_tokens ? "length" : "stop";
  };
  uint64_t prompt_tokens = 0;
  for (const Ids& p : sources) prompt_tokens += p.size();

  if (!stream) {
    const std::vector<Ids> out = s.await(*future);
    json choices = json::array();
    uint64_t made = 0;
    for (uint32_t b = 0; b < out.size(); ++b) {
      std::string rest;
      const char* why = finish(out, b, rest);
      choices.push_back(shape.choice(b, c->streams.empty() ? std::string() : c->streams[b].text(), why, out[b]));
      made += out[b].size();
    }
    json j = shape.head(shape.chat ? "chat.completion" : "text_completion");
    j["choices"] = choices;
    j["usage"] = {{"prompt_tokens", prompt_tokens}, {"completion_tokens", made}, {"total_tokens", prompt_tokens + made}};
    reply(s.metrics, shape.route, res, 200, j);
    return;
  }
  // Streaming: the status is 200 once the request is queued; a later failure is an error event.
  s.metrics.request(shape.route, 200);
  const unsigned timeout_s = s.options.timeout_s;
  res.set_header("Cache-Control", "no-cache");
  res.content_type = "text/event-stream";
  // Runs on the handler thread once the headers are sent; a write that fails is the client gone.
  res.stream = [c, future, shape, finish, timeout_s](const ChunkWriter& write) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    for (;;) {
      std::deque<std::string> ready;
      {
        std::unique_lock<std::mutex> l(c->mu);
        c->cv.wait_for(l, std::chrono::milliseconds(20), [&] { return !c->events.empty(); });
        ready.swap(c->events);
      }
      for (const std::string& e : ready)
        if (!write(e)) {
          c->gone = true;
          return;
        }
      if (future->wait_for(std::chrono::seconds(0)) == std::future_status::ready) break;
      if (std::chrono::steady_clock::now() > deadline) {
        c->gone = true;
        break;
      }
    }
    std::string tail;
    try {
      const std::vector<Ids> out = future->get();
      std::lock_guard<std::mutex> l(c->mu);
      for (const std::string& e : c->events) tail += e;
      for (uint32_t b = 0; b < out.size(); ++b) {
        std::string rest;
        const char* why = finish(out, b, rest);
        if (!rest.empty()) tail += shape.chunk(b, rest, nullptr);
        tail += shape.chunk(b, "", why);
      }
    } catch (const std::exception& e) {
      tail += "data: " + openai_error(e.what(), "server_error").dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
    }
    tail += "data: [DONE]\n\n";
    write(tail);
  };
}

const ServedModel& generating_model(const Server& s, const json& body) {
  const ServedModel& m = s.model(string_or(body, "model", ""));
  if (!m.generates) throw HttpError(400, "the model \"" + m.name + "\" does not generate (model_type \"" +
                                             m.model->config().model_type + "\")");
  return m;
}

/// "n": choices per prompt, within --max-inputs in all.
uint32_t choices_per_prompt(const Server& s, const json& body, size_t prompts) {
  const auto n = uint32_t(integer(body, "n", 1, 16).value_or(1));
  if (uint64_t(prompts) * n > s.options.max_inputs)
    throw HttpError(400, "prompts × n is " + std::to_string(uint64_t(prompts) * n) + ", more than " +
                             std::to_string(s.options.max_inputs) + " (--max-inputs)");
  return n;
}

void completions(Server& s, const HttpRequest& req, HttpResponse& res) {
  const json body = s.body(req);
  const ServedModel& m = generating_model(s, body);
  Inputs in = read_inputs(body, "prompt", s.options.max_inputs, true);
  if (!in.texts.empty() && !m.tok) throw HttpError(400, "the model \"" + m.name + "\" has no tokenizer: send token ids");
  for (const std::string& t : in.texts) in.ids.push_back(m.tok->encode(t));
  const uint32_t n = choices_per_prompt(s, body, in.ids.size());
  if (body.contains("best_of") && body["best_of"] != 1 && !body["best_of"].is_null())
    throw HttpError(400, "\"best_of\" is not supported");
  if (boolean(body, "echo").value_or(false)) throw HttpError(400, "\"echo\" is not supported");
  std::vector<std::string> stops;
  const GenerateOptions g = request_options(s, m, body, stops);
  std::vector<Ids> sources;  // choice i = prompt i / n, draw i % n (source i has its own seed + i)
  for (const Ids& p : in.ids)
    for (uint32_t j = 0; j < n; ++j) sources.push_back(p);
  reply_generation(s, res, m, Shape("/v1/completions", false, m.name), boolean(body, "stream").value_or(false), sources, g, stops);
}

/// "messages": [{"role", "content"}], content a string or a list of {"type": "text", "text"} parts.
std::vector<ChatMessage> read_messages(const json& body) {
  auto it = body.find("messages");
  if (it == body.end() || !it->is_array() || it->empty())
    throw HttpError(400, "\"messages\" is required: a non-empty list of {\"role\", \"content\"}");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string where = "\"messages\"[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      throw HttpError(400, where + " must be an object with a string \"role\"");
    ChatMessage msg{m["role"].get<std::string>(), ""};
    const json content = m.value("content", json());
    if (content.is_string()) {
      msg.content = content.get<std::string>();
    } else if (content.is_array()) {
      for (const json& part : content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
          throw HttpError(400, where + ".content: only {\"type\": \"text\", \"text\": ...} parts are supported");
        msg.content += part["text"].get<std::string>();
      }
    } else if (!content.is_null()) {
      throw HttpError(400, where + ".content must be a string or a list of text parts");
    }
    out.push_back(std::move(msg));
  }
  return out;
}

void chat_completions(Server& s, const HttpRequest& req, HttpResponse& res) {
  const json body = s.body(req);
  const ServedModel& m = generating_model(s, body);
  if (!m.chat)
    throw HttpError(400, "the model \"" + m.name + "\" has no chat template (tokenizer_config.json \"chat_template\"): "
                         "use /v1/completions");
  const std::vector<ChatMessage> messages = read_messages(body);
  for (const char* key : {"tools", "functions", "response_format"})
    if (body.contains(key) && !body[key].is_null()) throw HttpError(400, std::string("\"") + key + "\" is not supported");
  Ids prompt;
  try {
    prompt = m.chat->encode(messages);
  } catch (const Error& e) {  // the template's raise_exception: the conversation's fault
    throw HttpError(400, e.what());
  }
  check_lengths({prompt}, m.max_tokens, "messages");
  const uint32_t n = choices_per_prompt(s, body, 1);
  std::vector<std::string> stops;
  GenerateOptions g = request_options(s, m, body, stops);
  g.eos_token_ids = m.chat->end_ids(stop_tokens(m.model->config(), g));
  reply_generation(s, res, m, Shape("/v1/chat/completions", true, m.name), boolean(body, "stream").value_or(false),
                   std::vector<Ids>(n, prompt), g, stops);
}

}  // namespace

void add_openai_routes(Router& http, Server& s) {
  http.get("/v1/models", [&s](const HttpRequest&, HttpResponse& res) {
    json data = json::array();
    for (const auto& m : s.engine.models())
      data.push_back({{"id", m->name}, {"object", "model"}, {"created", 0}, {"owned_by", "vkformer"},
                      {"model_type", m->model->config().model_type}, {"embeddings", m->embeds},
                      {"completions", m->generates}, {"chat", m->generates && m->chat.has_value()}});
    reply(s.metrics, "/v1/models", res, 200, {{"object", "list"}, {"data", data}});
  });
  http.post("/v1/embeddings", [&s](const HttpRequest& req, HttpResponse& res) {
    guarded(s.metrics, "/v1/embeddings", res, false, [&] { embeddings(s, req, res); });
  });
  http.post("/v1/completions", [&s](const HttpRequest& req, HttpResponse& res) {
    guarded(s.metrics, "/v1/completions", res, false, [&] { completions(s, req, res); });
  });
  http.post("/v1/chat/completions", [&s](const HttpRequest& req, HttpResponse& res) {
    guarded(s.metrics, "/v1/chat/completions", res, false, [&] { chat_completions(s, req, res); });
  });
}

}  // namespace vkf::tools::serve
