// Post-processors of `tokenizers` 0.19 (processors/*.rs): the special tokens around
// one sequence or a pair, and the type ids.
#include "model/json_text.hpp"
#include "text/hf/pipeline.hpp"

namespace vkf::text::hf {

void Encoded::append(const Encoded& o) {
  ids.insert(ids.end(), o.ids.begin(), o.ids.end());
  type_ids.insert(type_ids.end(), o.type_ids.begin(), o.type_ids.end());
  tokens.insert(tokens.end(), o.tokens.begin(), o.tokens.end());
}

namespace {

/// A [token, id] pair (BertProcessing's and RobertaProcessing's cls and sep).
std::pair<std::string, int32_t> token_and_id(const JsonNode& j, const char* key) {
  const JsonNode v = j.at(key);
  if (!v.json().is_array() || v.json().size() != 2 || !v.json()[0].is_string()) v.expected("[token, id]");
  return {v.json()[0].get<std::string>(), int32_t(v.at(1).as_int(0, INT32_MAX))};
}

Encoded special(const std::string& token, int32_t id, uint32_t type_id) { return {{id}, {int32_t(type_id)}, {token}}; }

void set_type_ids(Encoded& e, int32_t t) { e.type_ids.assign(e.ids.size(), t); }

class BertProcessing final : public PostProcessor {
 public:
  explicit BertProcessing(const JsonNode& j) : cls_(token_and_id(j, "cls")), sep_(token_and_id(j, "sep")) {}
  void process(std::vector<Encoded>& encs, bool add_special) const override {
    if (!add_special) return;
    std::vector<Encoded> out;
    for (size_t i = 0; i < encs.size(); ++i) {
      Encoded e;
      if (i == 0) e.append(special(cls_.first, cls_.second, 0));
      e.append(encs[i]);
      e.append(special(sep_.first, sep_.second, i == 0 ? 0 : 1));
      out.push_back(std::move(e));
    }
    encs = std::move(out);
  }

 private:
  std::pair<std::string, int32_t> cls_, sep_;
};

class RobertaProcessing final : public PostProcessor {
 public:
  explicit RobertaProcessing(const JsonNode& j) : cls_(token_and_id(j, "cls")), sep_(token_and_id(j, "sep")) {}
  void process(std::vector<Encoded>& encs, bool add_special) const override {
    for (Encoded& e : encs) set_type_ids(e, 0);  // every type id is 0 in RoBERTa
    if (!add_special) return;
    std::vector<Encoded> out;
    for (size_t i = 0; i < encs.size(); ++i) {
      Encoded e = i == 0 ? special(cls_.first, cls_.second, 0) : special(sep_.first, sep_.second, 0);
      e.append(encs[i]);
      e.append(special(sep_.first, sep_.second, 0));
      out.push_back(std::move(e));
    }
    encs = std::move(out);
  }

 private:
  std::pair<std::string, int32_t> cls_, sep_;
};

class TemplateProcessing final : public PostProcessor {
 public:
  explicit TemplateProcessing(const JsonNode& j) {
    const JsonNode specials = j.at("special_tokens");
    if (!specials.json().is_object()) specials.expected("an object {name: {id, ids, tokens}}");
    for (auto it = specials.json().begin(); it != specials.json().end(); ++it) {
      const JsonNode s(it.value(), j.file(), specials.path() + "[\"" + printable(it.key(), 40) + "\"]");
      Encoded e;
      for (const JsonNode& id : s.at("ids").elements()) e.ids.push_back(int32_t(id.as_int(0, INT32_MAX)));
      for (const JsonNode& t : s.at("tokens").elements()) e.tokens.push_back(t.as_string());
      if (e.ids.size() != e.tokens.size()) s.fail("must have as many ids as tokens");
      specials_[it.key()] = std::move(e);
    }
    single_ = parse(j.at("single"));
    pair_ = parse(j.at("pair"));
  }
  void process(std::vector<Encoded>& encs, bool add_special) const override {
    std::vector<Encoded> out;
    for (const Piece& p : encs.size() > 1 ? pair_ : single_) {
      if (p.sequence) {
        const size_t i = p.id == "A" ? 0 : 1;
        if (i >= encs.size()) continue;
        Encoded e = encs[i];
        set_type_ids(e, int32_t(p.type_id));
        out.push_back(std::move(e));
      } else if (add_special) {
        Encoded e = specials_.at(p.id);
        set_type_ids(e, int32_t(p.type_id));
        out.push_back(std::move(e));
      }
    }
    encs = std::move(out);
  }

 private:
  struct Piece {
    bool sequence;
    std::string id;  ///< "A"/"B", or the special token's name
    uint32_t type_id;
  };
  std::vector<Piece> parse(const JsonNode& t) const {
    std::vector<Piece> out;
    for (const JsonNode& e : t.elements()) {
      const bool seq = e.json().is_object() && e.has("Sequence");
      if (!e.json().is_object() || e.json().size() != 1 || (!seq && !e.has("SpecialToken")))
        e.expected("{\"Sequence\": {...}} or {\"SpecialToken\": {...}}");
      const JsonNode p = e.at(seq ? "Sequence" : "SpecialToken");
      const JsonNode id = p.at("id");
      Piece piece{seq, id.as_string(), uint32_t(p.at("type_id").as_int(0, INT32_MAX))};
      if (seq && piece.id != "A" && piece.id != "B") id.expected("\"A\" or \"B\"");
      if (!seq && !specials_.count(piece.id)) id.fail("\"" + printable(piece.id, 40) + "\" is not in special_tokens");
      out.push_back(std::move(piece));
    }
    return out;
  }

  std::unordered_map<std::string, Encoded> specials_;
  std::vector<Piece> single_, pair_;
};

class ByteLevelProcessing final : public PostProcessor {
 public:
  void process(std::vector<Encoded>&, bool) const override {}  // offsets only
};

class Sequence final : public PostProcessor {
 public:
  Sequence(const JsonNode& j, int depth) {
    for (const JsonNode& e : j.at("processors").elements()) parts_.push_back(make_post_processor(e, depth + 1));
  }
  void process(std::vector<Encoded>& encs, bool add_special) const override {
    for (const auto& p : parts_) p->process(encs, add_special);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const JsonNode& j, int depth) {
  check_depth(j, depth);
  const std::string t = j.type();
  if (t == "BertProcessing") return std::make_unique<BertProcessing>(j);
  if (t == "RobertaProcessing") return std::make_unique<RobertaProcessing>(j);
  if (t == "TemplateProcessing") return std::make_unique<TemplateProcessing>(j);
  if (t == "ByteLevel") return std::make_unique<ByteLevelProcessing>();
  if (t == "Sequence") return std::make_unique<Sequence>(j, depth);
  j.unsupported_type("BertProcessing, RobertaProcessing, TemplateProcessing, ByteLevel, Sequence");
}

}  // namespace vkf::text::hf
