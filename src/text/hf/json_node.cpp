#include "text/hf/json_node.hpp"

#include "model/json_text.hpp"
#include "vkformer/error.hpp"

namespace vkf::text::hf {

void JsonNode::fail(const std::string& what) const {
  throw Error(file_ + ": " + (path_.empty() ? "" : path_ + " ") + what);
}

void JsonNode::expected(const std::string& what) const {
  fail("must be " + what + ", got " + brief_json(*j_));
}

bool JsonNode::has(const char* key) const {
  if (!j_->is_object()) expected("an object");
  auto it = j_->find(key);
  return it != j_->end() && !it->is_null();
}

JsonNode JsonNode::at(const char* key) const {
  if (!j_->is_object()) expected("an object");
  auto it = j_->find(key);
  const std::string p = path_.empty() ? key : path_ + "." + key;
  if (it == j_->end()) throw Error(file_ + ": " + p + " is missing");
  return JsonNode(*it, file_, p);
}

JsonNode JsonNode::at(size_t i) const { return JsonNode((*j_)[i], file_, path_ + "[" + std::to_string(i) + "]"); }

std::vector<JsonNode> JsonNode::elements() const {
  if (!j_->is_array()) expected("an array");
  std::vector<JsonNode> out;
  out.reserve(j_->size());
  for (size_t i = 0; i < j_->size(); ++i) out.push_back(at(i));
  return out;
}

std::string JsonNode::as_string() const {
  if (!j_->is_string()) expected("a string");
  return j_->get<std::string>();
}

bool JsonNode::as_bool() const {
  if (!j_->is_boolean()) expected("true or false");
  return j_->get<bool>();
}

int64_t JsonNode::as_int(int64_t lo, int64_t hi) const {
  if (!j_->is_number_integer() || (j_->is_number_unsigned() && j_->get<uint64_t>() > uint64_t(INT64_MAX)) ||
      j_->get<int64_t>() < lo || j_->get<int64_t>() > hi)
    expected("an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return j_->get<int64_t>();
}

double JsonNode::as_number() const {
  if (!j_->is_number()) expected("a number");
  return j_->get<double>();
}

std::string JsonNode::str(const char* key) const { return at(key).as_string(); }

std::optional<std::string> JsonNode::opt_str(const char* key) const {
  if (!has(key)) return std::nullopt;
  return at(key).as_string();
}

bool JsonNode::boolean(const char* key, bool def) const { return has(key) ? at(key).as_bool() : def; }

std::optional<bool> JsonNode::opt_bool(const char* key) const {
  if (!has(key)) return std::nullopt;
  return at(key).as_bool();
}

int64_t JsonNode::integer(const char* key, int64_t lo, int64_t hi, int64_t def) const {
  return has(key) ? at(key).as_int(lo, hi) : def;
}

std::string JsonNode::type() const {
  if (!j_->is_object()) expected("an object with a \"type\"");
  return at("type").as_string();
}

void JsonNode::unsupported_type(const std::string& known) const {
  const std::string t = type();
  throw Error(file_ + ": " + path_ + ".type \"" + printable(t, 60) + "\" is not supported (" + known + ")");
}

}  // namespace vkf::text::hf
