// Decoders of `tokenizers` 0.19 (decoders/*.rs and the Decoder impls of ByteLevel,
// Metaspace and Replace): tokens back to text.
#include "text/hf/byte_level.hpp"
#include "text/hf/pipeline.hpp"
#include "text/hf/regex.hpp"
#include "text/hf/unicode.hpp"

namespace vkf::text::hf {
namespace {

/// Every occurrence of `from` in `s` replaced by `to`.
std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  std::string out;
  size_t last = 0;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, last)) {
    out.append(s, last, at - last);
    out += to;
    last = at + from.size();
  }
  out.append(s, last, std::string::npos);
  return out;
}

class WordPiece final : public Decoder {
 public:
  explicit WordPiece(const JsonNode& j)
      : prefix_(j.has("prefix") ? j.str("prefix") : "##"), cleanup_(j.boolean("cleanup", true)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (t.compare(0, prefix_.size(), prefix_) == 0) t.erase(0, prefix_.size());
        else t.insert(0, " ");
      }
      if (cleanup_) t = cleanup(t);
    }
  }
  static std::string cleanup(std::string s) {
    static const std::pair<const char*, const char*> kRules[] = {
        {" .", "."},   {" ?", "?"},   {" !", "!"},   {" ,", ","},           {" ' ", "'"}, {" n't", "n't"},
        {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : kRules) s = replace_all(std::move(s), from, to);
    return s;
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

class ByteLevel final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      std::string mapped;
      bool all = true;
      for (char32_t c : to_u32(t)) {
        const int b = byte_level_byte(c);
        if (b < 0) {
          all = false;
          break;
        }
        mapped += char(b);
      }
      bytes += all ? mapped : t;
    }
    tokens.assign(1, utf8_lossy(bytes));
  }
};

class Metaspace final : public Decoder {
 public:
  explicit Metaspace(const JsonNode& j)
      : rep_(to_utf8(one_char(j, "replacement"))), prepend_(prepend_scheme(j) != PrependScheme::Never) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = replace_all(tokens[i], rep_, i == 0 && prepend_ ? "" : " ");
  }

 private:
  std::string rep_;
  bool prepend_;
};

class ByteFallback final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string pending;  // bytes of consecutive <0xXX> tokens
    auto flush = [&] {
      if (pending.empty()) return;
      if (valid_utf8(pending)) out.push_back(pending);
      else out.insert(out.end(), pending.size(), "\xEF\xBF\xBD");
      pending.clear();
    };
    for (std::string& t : tokens) {
      int byte = -1;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') byte = hex_byte(t[3], t[4]);
      if (byte >= 0) {
        pending += char(byte);
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }
  static int hex_byte(char a, char b) {
    auto v = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
    return v(a) < 0 || v(b) < 0 ? -1 : v(a) * 16 + v(b);
  }
};

class Fuse final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, all);
  }
};

class Strip final : public Decoder {
 public:
  explicit Strip(const JsonNode& j)
      : content_(one_char(j, "content")),
        start_(size_t(j.integer("start", 0, INT32_MAX, 0))),
        stop_(size_t(j.integer("stop", 0, INT32_MAX, 0))) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      const std::u32string cs = to_u32(t);
      size_t b = 0, e = cs.size();
      while (b < std::min(start_, cs.size()) && cs[b] == content_) ++b;
      for (size_t i = 0; i < stop_ && e > b && cs[e - 1] == content_; ++i) --e;
      t = to_utf8(cs.substr(b, e - b));
    }
  }

 private:
  char32_t content_;
  size_t start_, stop_;
};

class Replace final : public Decoder {
 public:
  explicit Replace(const JsonNode& j) : regex_(pattern_regex(j)), content_(j.str("content")) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) t = replace_matches(regex_, t, content_);
  }

 private:
  Regex regex_;
  std::string content_;
};

class BpeDecoder final : public Decoder {
 public:
  explicit BpeDecoder(const JsonNode& j) : suffix_(j.has("suffix") ? j.str("suffix") : "</w>") {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = replace_all(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
  }

 private:
  std::string suffix_;
};

class Sequence final : public Decoder {
 public:
  Sequence(const JsonNode& j, int depth) {
    for (const JsonNode& e : j.at("decoders").elements()) flatten_into<Sequence>(parts_, make_decoder(e, depth + 1));
  }
  std::vector<std::unique_ptr<Decoder>>& parts() { return parts_; }
  void decode_chain(std::vector<std::string>& tokens) const override {
    const size_t before = bytes(tokens);
    for (const auto& d : parts_) {
      d->decode_chain(tokens);
      check_growth(before, bytes(tokens), "the decoders");
    }
  }
  static size_t bytes(const std::vector<std::string>& tokens) {
    size_t n = 0;
    for (const std::string& t : tokens) n += t.size();
    return n;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const JsonNode& j, int depth) {
  check_depth(j, depth);
  const std::string t = j.type();
  if (t == "WordPiece") return std::make_unique<WordPiece>(j);
  if (t == "ByteLevel") return std::make_unique<ByteLevel>();
  if (t == "Metaspace") return std::make_unique<Metaspace>(j);
  if (t == "ByteFallback") return std::make_unique<ByteFallback>();
  if (t == "Fuse") return std::make_unique<Fuse>();
  if (t == "Strip") return std::make_unique<Strip>(j);
  if (t == "Replace") return std::make_unique<Replace>(j);
  if (t == "BPEDecoder") return std::make_unique<BpeDecoder>(j);
  if (t == "Sequence") return std::make_unique<Sequence>(j, depth);
  j.unsupported_type("WordPiece, ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, BPEDecoder, Sequence");
}

}  // namespace vkf::text::hf
