// The Open Inference Protocol v2 (REST), as KServe and Triton define it:
// health, server and model metadata, readiness, and infer. Embedding models
// take "text" (BYTES) or "input_ids" (INT64) and give "embedding" (FP32);
// generative models give "text_output" (BYTES) and "output_ids" (INT64).
#include <charconv>
#include <cstring>

#include "encoder_input.hpp"
#include "model/json_text.hpp"
#include "serve/routes.hpp"

namespace vkf::tools::serve {
namespace {

json tensor_meta(const char* name, const char* type, std::vector<int64_t> shape) {
  return {{"name", name}, {"datatype", type}, {"shape", shape}};
}

json metadata(const ServedModel& m) {
  // json::array, not braces: {one_json_value} is a copy of it under clang, an array under gcc.
  json inputs = json::array({tensor_meta("text", "BYTES", {-1}), tensor_meta("input_ids", "INT64", {-1, -1})});
  json outputs = m.embeds ? json::array({tensor_meta("embedding", "FP32", {-1, int64_t(m.dim)})})
                          : json::array({tensor_meta("text_output", "BYTES", {-1}),
                                         tensor_meta("output_ids", "INT64", {-1, -1})});
  return {{"name", m.name}, {"versions", {"1"}}, {"platform", "vkformer"}, {"inputs", inputs}, {"outputs", outputs}};
}

/// The one input of an infer request, as texts or as id rows.
void read_input(const json& body, const ServedModel& m, std::vector<std::string>& texts, std::vector<Ids>& ids) {
  if (!body.contains("inputs") || !body["inputs"].is_array() || body["inputs"].size() != 1)
    throw HttpError(400, "\"inputs\" must be a list of one tensor (\"text\" BYTES or \"input_ids\" INT64)");
  const json& t = body["inputs"][0];
  if (!t.is_object() || !t.contains("name") || !t.contains("datatype") || !t.contains("shape") || !t.contains("data"))
    throw HttpError(400, "an input tensor needs \"name\", \"datatype\", \"shape\" and \"data\"");
  const json &name = t["name"], &type = t["datatype"], &shape = t["shape"], &data = t["data"];
  if (!shape.is_array() || shape.empty() || shape.size() > 2 ||
      !std::all_of(shape.begin(), shape.end(), [](const json& x) { return x.is_number_unsigned() && x.get<uint64_t>() > 0; }))
    throw HttpError(400, "\"shape\" must be [n] or [n, len] of positive integers, got " + brief_json(shape));
  uint64_t count = 1;
  for (const json& x : shape) count *= std::min<uint64_t>(x.get<uint64_t>(), uint64_t(1) << 31);
  if (!data.is_array()) throw HttpError(400, "\"data\" must be a list");
  json flat = json::array();
  for (const json& x : data) {  // row-major data may come nested, one level (copying deeper would recurse)
    if (!x.is_array()) {
      if (x.is_structured()) throw HttpError(400, "\"data\" holds values or rows of values, got " + brief_json(x));
      flat.push_back(x);
      continue;
    }
    for (const json& y : x)
      if (y.is_structured()) throw HttpError(400, "\"data\" nests at most one level (rows of values), got " + brief_json(x));
    flat.insert(flat.end(), x.begin(), x.end());
  }
  if (flat.size() != count)
    throw HttpError(400, "\"data\" has " + std::to_string(flat.size()) + " elements; \"shape\" " + brief_json(shape) +
                             " needs " + std::to_string(count));
  if (name == "text" && type == "BYTES" && shape.size() == 1) {
    for (const json& x : flat) {
      if (!x.is_string() || x.get<std::string>().empty()) throw HttpError(400, "\"text\" elements must be non-empty strings");
      texts.push_back(x.get<std::string>());
    }
    if (!m.tok) throw HttpError(400, "the model \"" + m.name + "\" has no tokenizer: send \"input_ids\"");
  } else if (name == "input_ids" && type == "INT64" && shape.size() == 2) {
    const uint64_t rows = shape[0].get<uint64_t>(), len = shape[1].get<uint64_t>();
    for (uint64_t r = 0; r < rows; ++r) {
      Ids row;
      for (uint64_t i = 0; i < len; ++i) {
        const json& x = flat[r * len + i];
        if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > INT32_MAX)
          throw HttpError(400, "\"input_ids\" elements must be token ids (integers ≥ 0)");
        row.push_back(x.get<int32_t>());
      }
      ids.push_back(std::move(row));
    }
  } else {
    throw HttpError(400, "the input must be \"text\" (BYTES, shape [n]) or \"input_ids\" (INT64, shape [n, len])");
  }
}

// ---- Triton's binary tensor data extension (KServe's v2 runtimes accept it too): with
// "Inference-Header-Content-Length: N" the body is N bytes of JSON, then each input's raw
// bytes in order, sized by its "parameters": {"binary_data_size"}; BYTES elements are a
// 4-byte little-endian length and the bytes. Outputs come back the same way when the
// request's "parameters" say "binary_data_output": true, or a requested output's
// "parameters" say "binary_data": true.

/// The JSON part of a request body and the binary part after it.
struct BodyParts {
  std::string_view json, binary;
};

BodyParts split_body(const HttpRequest& req) {
  const std::string n = req.header("Inference-Header-Content-Length");
  if (n.empty()) return {req.body, {}};
  size_t len = 0;
  const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), len);
  if (ec != std::errc() || end != n.data() + n.size() || len > req.body.size())
    throw HttpError(400, "\"Inference-Header-Content-Length\" must be the length of the body's JSON in bytes, from 0 to " +
                             std::to_string(req.body.size()) + ", got \"" + n.substr(0, 40) + "\"");
  const std::string_view body(req.body);
  return {body.substr(0, len), body.substr(len)};
}

template <class T>
T little_endian(const char* p) {  // the wire's order; this host's too (x86-64, aarch64)
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// The elements of a binary input, as the JSON "data" they stand for.
json binary_elements(const json& tensor, std::string_view bytes) {
  const std::string name = tensor.value("name", json("?")).is_string() ? tensor["name"].get<std::string>() : "?";
  const std::string type = tensor.value("datatype", json("")).is_string() ? tensor["datatype"].get<std::string>() : "";
  const std::string where = "input \"" + name + "\": binary data";
  json data = json::array();
  auto fixed = [&](size_t width, auto read) {
    if (bytes.size() % width)
      throw HttpError(400, where + " of " + std::to_string(bytes.size()) + " bytes is not a whole number of " + type +
                               " elements (" + std::to_string(width) + " bytes each)");
    for (size_t i = 0; i < bytes.size(); i += width) data.push_back(read(bytes.data() + i));
  };
  if (type == "BYTES") {
    while (!bytes.empty()) {
      if (bytes.size() < 4) throw HttpError(400, where + " ends inside an element's 4-byte length");
      const uint32_t len = little_endian<uint32_t>(bytes.data());
      if (len > bytes.size() - 4)
        throw HttpError(400, where + ": an element of " + std::to_string(len) + " bytes runs past the tensor's end");
      data.push_back(std::string(bytes.substr(4, len)));
      bytes.remove_prefix(4 + size_t(len));
    }
  } else if (type == "INT64") {
    fixed(8, [](const char* p) { return little_endian<int64_t>(p); });
  } else if (type == "INT32") {
    fixed(4, [](const char* p) { return little_endian<int32_t>(p); });
  } else if (type == "FP32") {
    fixed(4, [](const char* p) { return little_endian<float>(p); });
  } else {
    throw HttpError(400, where + " of datatype " + brief_json(tensor.value("datatype", json())) +
                             " is not supported (BYTES, INT64, INT32, FP32)");
  }
  return data;
}

/// Replaces each binary input's bytes by its "data". @throws HttpError 400.
void read_binary_inputs(json& body, std::string_view binary) {
  size_t used = 0;
  if (body.contains("inputs") && body["inputs"].is_array())
    for (json& t : body["inputs"]) {
      if (!t.is_object() || !t.contains("parameters") || !t["parameters"].is_object() ||
          !t["parameters"].contains("binary_data_size"))
        continue;
      const json& size = t["parameters"]["binary_data_size"];
      if (!size.is_number_unsigned() || size.get<uint64_t>() > binary.size() - used)
        throw HttpError(400, "\"binary_data_size\" must be an integer no larger than the " +
                                 std::to_string(binary.size() - used) + " bytes of binary data left, got " + brief_json(size));
      if (t.contains("data")) throw HttpError(400, "an input tensor has both \"data\" and \"binary_data_size\"");
      t["data"] = binary_elements(t, binary.substr(used, size.get<size_t>()));
      used += size.get<size_t>();
    }
  if (used != binary.size())
    throw HttpError(400, "the body has " + std::to_string(binary.size() - used) +
                             " bytes after its JSON (Inference-Header-Content-Length) that no input's "
                             "\"binary_data_size\" accounts for");
}

/// Which outputs the request wants (all when it names none), and which of them as binary.
std::vector<std::pair<std::string, bool>> requested_outputs(const json& body, const std::vector<std::string>& names) {
  bool all_binary = false;
  if (body.contains("parameters") && body["parameters"].is_object() && body["parameters"].contains("binary_data_output")) {
    const json& b = body["parameters"]["binary_data_output"];
    if (!b.is_boolean()) throw HttpError(400, "\"binary_data_output\" must be true or false, got " + brief_json(b));
    all_binary = b.get<bool>();
  }
  std::vector<std::pair<std::string, bool>> out;
  if (!body.contains("outputs") || body["outputs"].is_null()) {
    for (const std::string& n : names) out.emplace_back(n, all_binary);
    return out;
  }
  if (!body["outputs"].is_array()) throw HttpError(400, "\"outputs\" must be a list of {\"name\"}");
  for (const json& o : body["outputs"]) {
    if (!o.is_object() || !o.contains("name") || !o["name"].is_string())
      throw HttpError(400, "each of \"outputs\" must be an object with a string \"name\"");
    const std::string name = o["name"].get<std::string>();
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw HttpError(400, "the model has no output \"" + name.substr(0, 100) + "\" (GET /v2/models/{name} lists them)");
    bool binary = all_binary;
    if (o.contains("parameters") && o["parameters"].is_object() && o["parameters"].contains("binary_data")) {
      const json& b = o["parameters"]["binary_data"];
      if (!b.is_boolean()) throw HttpError(400, "\"binary_data\" must be true or false, got " + brief_json(b));
      binary = b.get<bool>();
    }
    out.emplace_back(name, binary);
  }
  return out;
}

/// An output tensor's elements as bytes (BYTES: each with its 4-byte length).
std::string binary_output(const json& tensor) {
  const std::string type = tensor["datatype"].get<std::string>();
  std::string out;
  for (const json& x : tensor["data"]) {
    if (type == "BYTES") {
      const std::string& text = x.get_ref<const std::string&>();
      const uint32_t len = uint32_t(text.size());
      out.append(reinterpret_cast<const char*>(&len), 4).append(text);
    } else if (type == "INT64") {
      const int64_t v = x.get<int64_t>();
      out.append(reinterpret_cast<const char*>(&v), 8);
    } else {  // FP32
      const float v = x.get<float>();
      out.append(reinterpret_cast<const char*>(&v), 4);
    }
  }
  return out;
}

void infer(Server& s, const ServedModel& m, const HttpRequest& req, HttpResponse& res) {
  const BodyParts parts = split_body(req);
  json body = s.body(parts.json);
  read_binary_inputs(body, parts.binary);
  std::vector<std::string> names;
  if (m.embeds) names = {"embedding"};
  else names = {"text_output", "output_ids"};
  const auto wanted = requested_outputs(body, names);
  std::vector<std::string> texts;
  std::vector<Ids> ids;
  read_input(body, m, texts, ids);
  if (texts.size() + ids.size() > s.options.max_inputs)
    throw HttpError(400, "the input has " + std::to_string(texts.size() + ids.size()) + " rows, more than " +
                             std::to_string(s.options.max_inputs) + " (--max-inputs)");
  json out = {{"model_name", m.name}, {"model_version", "1"}};
  if (body.contains("id")) out["id"] = body["id"];
  if (m.embeds) {
    std::vector<bool> truncated;  // cut at the model's limit, as sentence-transformers does
    if (!texts.empty()) ids = encode_texts(*m.tok, m.info, texts, &truncated);
    // Ids are never cut: longer than the model's limit (max_seq_length, as /v1/embeddings) is refused.
    for (size_t i = 0; i < ids.size() && texts.empty(); ++i)
      if (m.max_tokens && ids[i].size() > m.max_tokens)
        throw HttpError(400, "\"input_ids\" row " + std::to_string(i) + " has " + std::to_string(ids[i].size()) +
                                 " tokens, more than the model's " + std::to_string(m.max_tokens));
    auto f = s.engine.embed(m, ids);
    const EmbedOutput e = s.await(f);
    out["outputs"] = {{{"name", "embedding"}, {"datatype", "FP32"}, {"shape", {e.batch, e.dim}}, {"data", e.data}}};
  } else {
    for (const std::string& t : texts) ids.push_back(m.tok->encode(t));
    GenerateOptions g = m.gen_defaults;
    const json params = body.value("parameters", json::object());
    if (params.contains("max_tokens")) {
      const json& v = params["max_tokens"];
      if (!v.is_number_unsigned() || v.get<uint64_t>() > s.options.max_tokens)
        throw HttpError(400, "\"parameters\".\"max_tokens\" must be an integer from 0 to " + std::to_string(s.options.max_tokens));
      g.max_new_tokens = v.get<uint32_t>();
    }
    g.max_new_tokens = std::min<uint32_t>(g.max_new_tokens, s.options.max_tokens);
    auto f = s.engine.generate(m, ids, g, {});
    const std::vector<Ids> gen = s.await(f);
    json text_out = json::array(), flat = json::array();
    size_t width = 0;
    for (const Ids& o : gen) width = std::max(width, o.size());
    for (const Ids& o : gen) {  // rows padded with -1 to the longest
      text_out.push_back(m.tok ? m.tok->decode(o) : std::string());
      for (size_t i = 0; i < width; ++i) flat.push_back(i < o.size() ? int64_t(o[i]) : int64_t(-1));
    }
    out["outputs"] = {{{"name", "text_output"}, {"datatype", "BYTES"}, {"shape", {gen.size()}}, {"data", text_out}},
                      {{"name", "output_ids"}, {"datatype", "INT64"}, {"shape", {gen.size(), width}}, {"data", flat}}};
  }
  // The outputs asked for, in the order asked; binary ones carry their size, their bytes follow the JSON.
  json outputs = json::array();
  std::string binary;
  for (const auto& [name, as_binary] : wanted)
    for (json& t : out["outputs"])
      if (t["name"] == name) {
        json o = t;
        if (as_binary) {
          const std::string bytes = binary_output(o);
          o.erase("data");
          o["parameters"] = {{"binary_data_size", bytes.size()}};
          binary += bytes;
        }
        outputs.push_back(std::move(o));
      }
  out["outputs"] = std::move(outputs);
  if (std::none_of(wanted.begin(), wanted.end(), [](const auto& w) { return w.second; })) {
    reply(s.metrics, "/v2/models/infer", res, 200, out);
    return;
  }
  const std::string text = out.dump(-1, ' ', false, json::error_handler_t::replace);
  res.status = 200;
  res.set_header("Inference-Header-Content-Length", std::to_string(text.size()));
  res.set_content(text + binary, "application/octet-stream");
  s.metrics.request("/v2/models/infer", 200);
}

}  // namespace

void add_v2_routes(Router& http, Server& s) {
  http.get("/v2/health/live", [&s](const HttpRequest&, HttpResponse& res) {
    reply(s.metrics, "/v2/health/live", res, 200, {{"live", true}});
  });
  http.get("/v2/health/ready", [&s](const HttpRequest&, HttpResponse& res) {
    reply(s.metrics, "/v2/health/ready", res, s.engine.ready() ? 200 : 503, {{"ready", s.engine.ready()}});
  });
  http.get("/v2", [&s](const HttpRequest&, HttpResponse& res) {
    reply(s.metrics, "/v2", res, 200, {{"name", "vkformer"}, {"version", VKF_VERSION}, {"extensions", {"binary_tensor_data"}}});
  });
  http.get(R"(/v2/models/([^/]+)(?:/versions/1)?)", [&s](const HttpRequest& req, HttpResponse& res) {
    guarded(s.metrics, "/v2/models", res, true, [&] { reply(s.metrics, "/v2/models", res, 200, metadata(s.model(req.matches[1]))); });
  });
  http.get(R"(/v2/models/([^/]+)(?:/versions/1)?/ready)", [&s](const HttpRequest& req, HttpResponse& res) {
    guarded(s.metrics, "/v2/models/ready", res, true, [&] {
      s.model(req.matches[1]);
      reply(s.metrics, "/v2/models/ready", res, s.engine.ready() ? 200 : 503, {{"name", std::string(req.matches[1])}, {"ready", s.engine.ready()}});
    });
  });
  http.post(R"(/v2/models/([^/]+)(?:/versions/1)?/infer)", [&s](const HttpRequest& req, HttpResponse& res) {
    guarded(s.metrics, "/v2/models/infer", res, true, [&] { infer(s, s.model(req.matches[1]), req, res); });
  });
}

}  // namespace vkf::tools::serve
