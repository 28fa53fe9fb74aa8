// What is the same for every family: finding one by model_type, and the
// answers a family gives unless it says otherwise.
#include "model/family.hpp"

#include "model/json_text.hpp"
#include "run/slot_source.hpp"

namespace vkf {
namespace {

/// "\"a\", \"b\"": the names of the families `keep` accepts, quoted.
std::string quoted_names(bool (*keep)(const Family&)) {
  std::string list;
  for (const Family* f : families()) {
    if (!keep(*f)) continue;
    std::vector<std::string> names{f->name()};
    for (const std::string& a : f->aliases()) names.push_back(a);
    for (const std::string& n : names) list += (list.empty() ? "\"" : ", \"") + n + "\"";
  }
  return list;
}

}  // namespace

std::string Family::refusal(Task task) const {
  const std::string type = std::string("a \"") + name() + "\" model";
  switch (task) {
    case Task::Forward:
      return type + " has no forward pass over tokens";
    case Task::Generate:
      return type + " cannot generate";
    case Task::Embed:
      return "embed: the model is " + type + "; embed() needs a sentence encoder (" +
             quoted_names([](const Family& f) { return f.supports(Task::Embed); }) + ")";
  }
  return type + " cannot do that";
}

std::unique_ptr<LogitsSource> Family::logits_source(Runner&, const std::vector<Ids>&,
                                                    const GenerateOptions&) const {
  throw Error(refusal(Task::Generate));
}

std::unique_ptr<SlotSource> Family::slot_source(Runner&, uint32_t, uint32_t, DType) const { return nullptr; }

void Family::refuse_options(const RunOptions& o) const {
  const std::string type = std::string("a \"") + name() + "\" model";
  if (!o.type_ids.empty()) throw Error("type ids: " + type + " has no token types");
  if (!o.output.empty()) throw Error("output \"" + printable(o.output) + "\": " + type + " has one output");
  if (!o.pooling.empty() || o.normalize != -1) throw Error("pooling: " + type + " has its own pooling");
}

const Family* find_family(const std::string& model_type) {
  for (const Family* f : families()) {
    if (model_type == f->name()) return f;
    for (const std::string& a : f->aliases())
      if (model_type == a) return f;
  }
  return nullptr;
}

std::string unknown_model_type(const std::string& model_type) {
  return "unknown \"model_type\" \"" + printable(model_type) + "\" (known: " +
         quoted_names([](const Family&) { return true; }) + ")";
}

const Family& family_of(const ModelConfig& c) {
  const Family* f = find_family(c.model_type);
  if (!f) throw Error(unknown_model_type(c.model_type));
  return *f;
}

}  // namespace vkf
