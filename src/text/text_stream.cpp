#include "text/text_stream.hpp"

#include <algorithm>

namespace vkf {

size_t complete_utf8_prefix(const std::string& s) {
  // The last lead byte, within the last 4 bytes.
  for (size_t back = 1; back <= std::min<size_t>(4, s.size()); ++back) {
    const size_t i = s.size() - back;
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte
    const size_t need = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return back < need ? i : s.size();
  }
  return s.size();
}

TextStream::TextStream(const Tokenizer& tok, std::vector<std::string> stops) : tok_(tok), stops_(std::move(stops)) {
  stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
}

std::string TextStream::push(int32_t id) {
  if (stopped_) return {};
  ids_.push_back(id);
  text_ = tok_.decode(ids_, true);
  size_t cut = std::string::npos;
  for (const std::string& s : stops_) cut = std::min(cut, text_.find(s));
  if (cut != std::string::npos) {
    text_.resize(cut);
    stopped_ = true;
    return emit(cut);
  }
  size_t safe = complete_utf8_prefix(text_);
  // A lossy decoder (HF's ByteLevel, as `tokenizers`) ends an incomplete character
  // with U+FFFD, which the next token may complete: hold trailing ones back too.
  static const std::string kReplacement = "\xEF\xBF\xBD";
  while (safe >= 3 && text_.compare(safe - 3, 3, kReplacement) == 0) safe -= 3;
  size_t hold = 0;  // the longest tail that begins a stop string
  for (const std::string& s : stops_)
    for (size_t l = std::min(s.size() - 1, safe); l > hold; --l)
      if (text_.compare(safe - l, l, s, 0, l) == 0) {
        hold = l;
        break;
      }
  return emit(safe - hold);
}

std::string TextStream::finish() {
  std::string out = emit(text_.size());
  if (out.empty() && text_.compare(0, printed_.size(), printed_) != 0) {  // rewritten: print past the common part
    size_t common = 0;
    while (common < std::min(text_.size(), printed_.size()) && text_[common] == printed_[common]) ++common;
    out = text_.substr(common);
  }
  return out;
}

std::string TextStream::emit(size_t end) {
  // A decoder may rewrite earlier text as more arrives (e.g. cleanup of spaces):
  // wait until the text again extends what was printed.
  if (end <= printed_.size() || text_.compare(0, printed_.size(), printed_) != 0) return {};
  std::string out = text_.substr(printed_.size(), end - printed_.size());
  printed_ += out;
  return out;
}

}  // namespace vkf
