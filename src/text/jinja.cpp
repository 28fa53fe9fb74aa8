// A Jinja2 subset for chat templates (jinja.hpp, docs/chat-templates.md): lexer,
// parser to a small AST, and an evaluator whose values behave as Python's do in
// jinja2 3.1's ImmutableSandboxedEnvironment. Written from Jinja's documented
// behaviour and checked against jinja2 itself (tests/jinja_check.py).
#include "text/jinja.hpp"

#include <unicode/brkiter.h>
#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "vkformer/error.hpp"

namespace vkf::jinja {
namespace {

// ===================================================================== errors

// Thrown inside; Template turns it into a vkf::Error naming the template.
struct Failure {
  int line = 0;
  std::string what;
  bool raised = false;  // raise_exception(): "<name>: raise_exception: <message>"
};

[[noreturn]] void fail(int line, std::string what) { throw Failure{line, std::move(what), false}; }

std::string quote(std::string_view s) { return "'" + std::string(s) + "'"; }

// ====================================================================== UTF-8

using U32 = std::u32string;

// Code points of `s`. A byte that does not begin a valid sequence becomes
// U+DC80..U+DCFF (Python's surrogateescape), which put() turns back into the byte.
U32 decode(std::string_view s) {
  U32 out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const uint8_t b = uint8_t(s[i]);
    if (b < 0x80) {
      out += char32_t(b);
      ++i;
      continue;
    }
    size_t n = 0;
    uint32_t cp = 0, min = 0;
    if (b >= 0xC2 && b <= 0xDF) n = 1, cp = b & 0x1F, min = 0x80;
    else if (b >= 0xE0 && b <= 0xEF) n = 2, cp = b & 0x0F, min = 0x800;
    else if (b >= 0xF0 && b <= 0xF4) n = 3, cp = b & 0x07, min = 0x10000;
    bool ok = n > 0 && i + n < s.size();
    for (size_t k = 1; ok && k <= n; ++k) {
      const uint8_t c = uint8_t(s[i + k]);
      if ((c & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (c & 0x3F);
    }
    if (ok && (cp < min || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)) ok = false;
    if (!ok) {
      out += char32_t(0xDC00 + b);
      ++i;
      continue;
    }
    out += char32_t(cp);
    i += n + 1;
  }
  return out;
}

void put(std::string& out, char32_t c) {
  if (c >= 0xDC80 && c <= 0xDCFF) {
    out += char(c - 0xDC00);
  } else if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | (c >> 6));
    out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | (c >> 12));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | (c >> 18));
    out += char(0x80 | ((c >> 12) & 0x3F));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  }
}

std::string encode(const U32& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) put(out, c);
  return out;
}

// ============================================================ Python strings

// str.isspace(), which is also what \s matches in Python's regular expressions.
bool py_space(char32_t c) {
  switch (c) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x1C: case 0x1D: case 0x1E:
    case 0x1F: case 0x20: case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

bool is_surrogate(char32_t c) { return c >= 0xD800 && c <= 0xDFFF; }
bool is_cased(char32_t c) { return !is_surrogate(c) && u_hasBinaryProperty(UChar32(c), UCHAR_CASED); }
bool is_case_ignorable(char32_t c) {
  return !is_surrogate(c) && u_hasBinaryProperty(UChar32(c), UCHAR_CASE_IGNORABLE);
}

enum class Case { Lower, Upper, Title };

// Python's full (SpecialCasing) mapping of one character; ICU's root locale has the same.
void map_char(char32_t c, Case how, U32& out) {
  if (c < 0x80) {
    if (how == Case::Lower && c >= 'A' && c <= 'Z') c += 32;
    else if (how != Case::Lower && c >= 'a' && c <= 'z') c -= 32;
    out += c;
    return;
  }
  if (is_surrogate(c)) {
    out += c;
    return;
  }
  icu::UnicodeString u{UChar32(c)};
  if (how == Case::Lower) {
    u.toLower(icu::Locale::getRoot());
  } else if (how == Case::Upper) {
    u.toUpper(icu::Locale::getRoot());
  } else {
    // A character break iterator: the one character is the start of its segment.
    thread_local std::unique_ptr<icu::BreakIterator> chars = [] {
      UErrorCode status = U_ZERO_ERROR;
      std::unique_ptr<icu::BreakIterator> it{icu::BreakIterator::createCharacterInstance(icu::Locale::getRoot(), status)};
      if (U_FAILURE(status)) it.reset();
      return it;
    }();
    u.toTitle(chars.get(), icu::Locale::getRoot(), U_TITLECASE_NO_LOWERCASE | U_TITLECASE_NO_BREAK_ADJUSTMENT);
  }
  for (int32_t i = 0; i < u.length();) {
    const UChar32 x = u.char32At(i);
    out += char32_t(x);
    i += U16_LENGTH(x);
  }
}

// The lowercase of s[i] as Python's str.lower() gives it: capital sigma becomes
// final sigma at the end of a word (CPython's handle_capital_sigma).
void lower_at(const U32& s, size_t i, U32& out) {
  if (s[i] != 0x3A3) {
    map_char(s[i], Case::Lower, out);
    return;
  }
  size_t j = i;
  char32_t c = 0;
  bool found = false;
  while (j > 0) {
    c = s[--j];
    if (!is_case_ignorable(c)) {
      found = true;
      break;
    }
  }
  bool final_sigma = found && is_cased(c);
  if (final_sigma && i + 1 < s.size()) {
    size_t k = i + 1;
    for (; k < s.size(); ++k)
      if (!is_case_ignorable(s[k])) break;
    final_sigma = k == s.size() || !is_cased(s[k]);
  }
  out += final_sigma ? char32_t(0x3C2) : char32_t(0x3C3);
}

U32 py_lower(const U32& s) {
  U32 out;
  for (size_t i = 0; i < s.size(); ++i) lower_at(s, i, out);
  return out;
}

U32 py_upper(const U32& s) {
  U32 out;
  for (char32_t c : s) map_char(c, Case::Upper, out);
  return out;
}

// str.title(): a character after a cased one is lowercased, any other titlecased.
U32 py_title(const U32& s) {
  U32 out;
  bool prev_cased = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (prev_cased) lower_at(s, i, out);
    else map_char(s[i], Case::Title, out);
    prev_cased = is_cased(s[i]);
  }
  return out;
}

// str.capitalize() (Python 3.8+): the first character titlecased, the rest lowercased.
U32 py_capitalize(const U32& s) {
  U32 out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 0) map_char(s[i], Case::Title, out);
    else lower_at(s, i, out);
  }
  return out;
}

// Jinja's title filter: words begin after runs of '-', whitespace, '(', '{', '[', '<';
// each piece is item[0].upper() + item[1:].lower().
U32 jinja_title(const U32& s) {
  auto sep = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py_space(c); };
  U32 out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    const bool is_sep = sep(s[i]);
    while (j < s.size() && sep(s[j]) == is_sep) ++j;
    const U32 item = s.substr(i, j - i);
    map_char(item[0], Case::Upper, out);
    out += py_lower(item.substr(1));
    i = j;
  }
  return out;
}

bool py_islower(const U32& s) {
  bool cased = false;
  for (char32_t c : s) {
    if (is_surrogate(c)) continue;
    if (u_hasBinaryProperty(UChar32(c), UCHAR_UPPERCASE) || u_charType(UChar32(c)) == U_TITLECASE_LETTER) return false;
    if (u_hasBinaryProperty(UChar32(c), UCHAR_LOWERCASE)) cased = true;
  }
  return cased;
}

bool py_isupper(const U32& s) {
  bool cased = false;
  for (char32_t c : s) {
    if (is_surrogate(c)) continue;
    if (u_hasBinaryProperty(UChar32(c), UCHAR_LOWERCASE) || u_charType(UChar32(c)) == U_TITLECASE_LETTER) return false;
    if (u_hasBinaryProperty(UChar32(c), UCHAR_UPPERCASE)) cased = true;
  }
  return cased;
}

// What repr() leaves as it is (str.isprintable()).
bool py_printable(char32_t c) {
  if (c == ' ') return true;
  if (is_surrogate(c)) return false;
  switch (u_charType(UChar32(c))) {
    case U_CONTROL_CHAR: case U_FORMAT_CHAR: case U_SURROGATE: case U_PRIVATE_USE_CHAR:
    case U_UNASSIGNED: case U_LINE_SEPARATOR: case U_PARAGRAPH_SEPARATOR: case U_SPACE_SEPARATOR:
      return false;
    default:
      return true;
  }
}

void hex_escape(std::string& out, const char* prefix, uint32_t v, int digits) {
  static const char* hex = "0123456789abcdef";
  out += prefix;
  for (int k = digits - 1; k >= 0; --k) out += hex[(v >> (4 * k)) & 0xF];
}

void repr_str(std::string& out, const std::string& s) {
  const U32 u = decode(s);
  const bool has_single = u.find(U'\'') != U32::npos, has_double = u.find(U'"') != U32::npos;
  const char32_t quote = has_single && !has_double ? U'"' : U'\'';
  out += char(quote);
  for (char32_t c : u) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      hex_escape(out, "\\x", c, 2);
    } else if (c < 0x7F) {
      out += char(c);
    } else if (py_printable(c)) {
      put(out, c);
    } else if (c <= 0xFF) {
      hex_escape(out, "\\x", c, 2);
    } else if (c <= 0xFFFF) {
      hex_escape(out, "\\u", c, 4);
    } else {
      hex_escape(out, "\\U", c, 8);
    }
  }
  out += char(quote);
}

// repr(float): the shortest digits that read back the same, positional for
// exponents -4..15, else d.ddde+XX.
std::string float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  std::string out;
  if (sci[0] == '-') {
    out = "-";
    sci.erase(0, 1);
  }
  const size_t e = sci.find('e');
  const int exp = std::atoi(sci.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  const int decpt = exp + 1;
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += exp < 0 ? "e-" : "e+";
    const int a = std::abs(exp);
    if (a < 10) out += '0';
    out += std::to_string(a);
  } else if (decpt <= 0) {
    out += "0." + std::string(size_t(-decpt), '0') + digits;
  } else if (size_t(decpt) >= digits.size()) {
    out += digits + std::string(size_t(decpt) - digits.size(), '0') + ".0";
  } else {
    out += digits.substr(0, size_t(decpt)) + "." + digits.substr(size_t(decpt));
  }
  return out;
}

// ===================================================================== values

enum class T : uint8_t { Undefined, None, Bool, Int, Float, Str, List, Dict, Namespace, Func };
// What a List value is in Python: list, tuple, dict views, range, or a one-pass
// iterator (the generators of select/map/items and the iterator of reverse).
enum class LK : uint8_t { List, Tuple, Items, Keys, Values, Range, Generator };

struct Value;
struct ListData;
struct DictData;
struct FuncData;

struct Value {
  T t = T::Undefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::shared_ptr<const std::string> s;  // Str; Undefined: why it is undefined
  std::shared_ptr<ListData> l;           // shared: a generator is consumed wherever it is used
  std::shared_ptr<DictData> d;           // Dict (never changed once built), Namespace (changed by set)
  std::shared_ptr<const FuncData> fn;

  const std::string& str() const { return *s; }
};

struct ListData {
  std::vector<Value> items;
  LK kind = LK::List;
  size_t pos = 0;                            // Generator: items already consumed
  int64_t start = 0, stop = 0, step = 1;     // Range, for printing
  int depth = 1;                             // of nested containers (see kMaxValueDepth)
};

struct DictData {
  std::vector<std::pair<std::string, Value>> items;
  bool loop = false;  // the `loop` object of a for loop
  int depth = 1;      // of nested containers (a namespace's grows as it is set)

  const Value* find(std::string_view k) const {
    for (const auto& [key, v] : items)
      if (key == k) return &v;
    return nullptr;
  }
  void set(const std::string& k, Value v) {
    for (auto& [key, old] : items)
      if (key == k) {
        old = std::move(v);
        return;
      }
    items.emplace_back(k, std::move(v));
  }
};

// A global function (self is Undefined) or a method bound to self.
struct FuncData {
  std::string name;
  Value self;
};

Value undef(std::string why) {
  Value v;
  v.s = std::make_shared<const std::string>(std::move(why));
  return v;
}
Value none() {
  Value v;
  v.t = T::None;
  return v;
}
Value boolean(bool b) {
  Value v;
  v.t = T::Bool;
  v.b = b;
  return v;
}
Value integer(int64_t i) {
  Value v;
  v.t = T::Int;
  v.i = i;
  return v;
}
Value real(double f) {
  Value v;
  v.t = T::Float;
  v.f = f;
  return v;
}
Value str(std::string s) {
  Value v;
  v.t = T::Str;
  v.s = std::make_shared<const std::string>(std::move(s));
  return v;
}
// Values nest only as deep as a template builds them, but a loop can keep wrapping
// a namespace attribute ({% set ns.x = [ns.x] %}): freeing, printing or comparing
// such a value recurses along it, so setting one deeper than this is refused.
constexpr int kMaxValueDepth = 400;

int depth_of(const Value& v) {
  if (v.t == T::List) return v.l->depth;
  if (v.t == T::Dict || v.t == T::Namespace) return v.d->depth;
  return 0;
}

Value list(std::vector<Value> items, LK kind = LK::List) {
  Value v;
  v.t = T::List;
  v.l = std::make_shared<ListData>();
  v.l->items = std::move(items);
  v.l->kind = kind;
  for (const Value& x : v.l->items) v.l->depth = std::max(v.l->depth, 1 + depth_of(x));
  return v;
}
Value dict(std::shared_ptr<DictData> d) {
  Value v;
  v.t = T::Dict;
  v.d = std::move(d);
  for (const auto& kv : v.d->items) v.d->depth = std::max(v.d->depth, 1 + depth_of(kv.second));
  return v;
}
Value func(std::string name, Value self = Value{}) {
  Value v;
  v.t = T::Func;
  v.fn = std::make_shared<const FuncData>(FuncData{std::move(name), std::move(self)});
  return v;
}

bool is_num(const Value& v) { return v.t == T::Bool || v.t == T::Int || v.t == T::Float; }
bool is_intlike(const Value& v) { return v.t == T::Bool || v.t == T::Int; }
int64_t ival(const Value& v) { return v.t == T::Bool ? int64_t(v.b) : v.i; }
double fval(const Value& v) { return v.t == T::Float ? v.f : double(ival(v)); }
bool is_mapping(const Value& v) { return v.t == T::Dict && !v.d->loop; }

std::string type_name(const Value& v) {
  switch (v.t) {
    case T::Undefined: return "Undefined";
    case T::None: return "NoneType";
    case T::Bool: return "bool";
    case T::Int: return "int";
    case T::Float: return "float";
    case T::Str: return "str";
    case T::List:
      switch (v.l->kind) {
        case LK::List: return "list";
        case LK::Tuple: return "tuple";
        case LK::Items: return "dict_items";
        case LK::Keys: return "dict_keys";
        case LK::Values: return "dict_values";
        case LK::Range: return "range";
        case LK::Generator: return "generator";
      }
      return "list";
    case T::Dict: return v.d->loop ? "LoopContext" : "dict";
    case T::Namespace: return "Namespace";
    case T::Func: return v.fn->self.t == T::Undefined ? "function" : "builtin_function_or_method";
  }
  return "object";
}

// An operation that Undefined refuses: jinja2 raises UndefinedError with its hint.
void check_defined(const Value& v, int line) {
  if (v.t == T::Undefined) fail(line, v.s ? v.str() : "undefined value");
}

bool truthy(const Value& v) {
  switch (v.t) {
    case T::Undefined: case T::None: return false;
    case T::Bool: return v.b;
    case T::Int: return v.i != 0;
    case T::Float: return v.f != 0;
    case T::Str: return !v.s->empty();
    case T::List: return v.l->kind == LK::Generator || !v.l->items.empty();
    case T::Dict: return v.d->loop || !v.d->items.empty();
    case T::Namespace: case T::Func: return true;
  }
  return false;
}

// len(): str in code points.
int64_t length(const Value& v, int line) {
  switch (v.t) {
    case T::Undefined: return 0;
    case T::Str: return int64_t(decode(v.str()).size());
    case T::List:
      if (v.l->kind == LK::Generator) fail(line, "object of type 'generator' has no len() (add |list first)");
      return int64_t(v.l->items.size());
    case T::Dict:
      if (!v.d->loop) return int64_t(v.d->items.size());
      break;
    default: break;
  }
  fail(line, "object of type '" + type_name(v) + "' has no len()");
}

// iter(): a generator is consumed.
std::vector<Value> iterate(const Value& v, int line) {
  switch (v.t) {
    case T::Undefined: return {};
    case T::Str: {
      std::vector<Value> out;
      for (char32_t c : decode(v.str())) {
        std::string one;
        put(one, c);
        out.push_back(str(std::move(one)));
      }
      return out;
    }
    case T::List:
      if (v.l->kind == LK::Generator) {
        std::vector<Value> rest(v.l->items.begin() + std::ptrdiff_t(v.l->pos), v.l->items.end());
        v.l->pos = v.l->items.size();
        return rest;
      }
      return v.l->items;
    case T::Dict:
      if (!v.d->loop) {
        std::vector<Value> out;
        for (const auto& kv : v.d->items) out.push_back(str(kv.first));
        return out;
      }
      break;
    default: break;
  }
  fail(line, "'" + type_name(v) + "' object is not iterable");
}

bool py_eq(const Value& a, const Value& b) {
  if (is_num(a) && is_num(b)) {
    if (is_intlike(a) && is_intlike(b)) return ival(a) == ival(b);
    return fval(a) == fval(b);
  }
  if (a.t != b.t) return false;
  switch (a.t) {
    case T::Undefined: case T::None: return true;
    case T::Str: return a.str() == b.str();
    case T::List: {
      if (a.l == b.l) return true;
      if (a.l->kind != b.l->kind || a.l->kind == LK::Generator) return false;
      if (a.l->items.size() != b.l->items.size()) return false;
      for (size_t k = 0; k < a.l->items.size(); ++k)
        if (!py_eq(a.l->items[k], b.l->items[k])) return false;
      return true;
    }
    case T::Dict: {
      if (a.d == b.d) return true;
      if (a.d->loop || b.d->loop || a.d->items.size() != b.d->items.size()) return false;
      for (const auto& [k, v] : a.d->items) {
        const Value* o = b.d->find(k);
        if (!o || !py_eq(v, *o)) return false;
      }
      return true;
    }
    case T::Namespace: return a.d == b.d;
    case T::Func: return a.fn == b.fn;
    default: return false;
  }
}

bool op_holds(const std::string& op, int c) {  // c: -1, 0, 1 as a <=> b
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

// a OP b for <, <=, >, >=, as Python orders numbers, strings (by code point, which
// UTF-8 byte order keeps) and lists or tuples (lexicographically); anything else
// is a TypeError.
bool py_order(const std::string& op, const Value& a, const Value& b, int line) {
  check_defined(a, line);
  check_defined(b, line);
  if (is_num(a) && is_num(b)) {
    if (is_intlike(a) && is_intlike(b)) return op_holds(op, ival(a) < ival(b) ? -1 : ival(a) > ival(b) ? 1 : 0);
    const double x = fval(a), y = fval(b);
    if (op == "<") return x < y;
    if (op == "<=") return x <= y;
    if (op == ">") return x > y;
    return x >= y;
  }
  if (a.t == T::Str && b.t == T::Str) return op_holds(op, a.str().compare(b.str()));
  if (a.t == T::List && b.t == T::List && a.l->kind == b.l->kind &&
      (a.l->kind == LK::List || a.l->kind == LK::Tuple)) {
    const auto &x = a.l->items, &y = b.l->items;
    for (size_t k = 0; k < x.size() && k < y.size(); ++k)
      if (!py_eq(x[k], y[k])) return py_order(op, x[k], y[k], line);
    return op_holds(op, x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0);
  }
  fail(line, "'" + op + "' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}


// `item in container`
bool contains(const Value& container, const Value& item, int line) {
  switch (container.t) {
    case T::Undefined: return false;
    case T::Str:
      if (item.t != T::Str)
        fail(line, "'in <string>' requires string as left operand, not " + type_name(item));
      return container.str().find(item.str()) != std::string::npos;
    case T::List:
      if (container.l->kind == LK::Generator) {
        auto& g = *container.l;
        while (g.pos < g.items.size())
          if (py_eq(g.items[g.pos++], item)) return true;
        return false;
      }
      for (const Value& v : container.l->items)
        if (py_eq(v, item)) return true;
      return false;
    case T::Dict:
      if (container.d->loop) break;
      if (item.t == T::List || item.t == T::Dict || item.t == T::Namespace)
        fail(line, "unhashable type: '" + type_name(item) + "'");
      return item.t == T::Str && container.d->find(item.str()) != nullptr;
    default: break;
  }
  fail(line, "argument of type '" + type_name(container) + "' is not iterable");
}

// ==================================================================== printing

void repr(std::string& out, const Value& v, int line, int depth = 0);

// str(): what {{ }} prints.
std::string to_str(const Value& v, int line) {
  switch (v.t) {
    case T::Undefined: return "";
    case T::Str: return v.str();
    default: {
      std::string out;
      repr(out, v, line);
      return out;
    }
  }
}

void repr_items(std::string& out, const std::vector<Value>& items, int line, int depth) {
  for (size_t k = 0; k < items.size(); ++k) {
    if (k) out += ", ";
    repr(out, items[k], line, depth + 1);
  }
}

void repr_dict(std::string& out, const DictData& d, int line, int depth) {
  out += '{';
  for (size_t k = 0; k < d.items.size(); ++k) {
    if (k) out += ", ";
    repr_str(out, d.items[k].first);
    out += ": ";
    repr(out, d.items[k].second, line, depth + 1);
  }
  out += '}';
}

void repr(std::string& out, const Value& v, int line, int depth) {
  if (depth > 200) fail(line, "value nested too deeply to print");
  switch (v.t) {
    case T::Undefined: out += "Undefined"; return;
    case T::None: out += "None"; return;
    case T::Bool: out += v.b ? "True" : "False"; return;
    case T::Int: out += std::to_string(v.i); return;
    case T::Float: out += float_repr(v.f); return;
    case T::Str: repr_str(out, v.str()); return;
    case T::List:
      switch (v.l->kind) {
        case LK::List:
          out += '[';
          repr_items(out, v.l->items, line, depth);
          out += ']';
          return;
        case LK::Tuple:
          out += '(';
          repr_items(out, v.l->items, line, depth);
          if (v.l->items.size() == 1) out += ',';
          out += ')';
          return;
        case LK::Items: case LK::Keys: case LK::Values:
          out += type_name(v) + "([";
          repr_items(out, v.l->items, line, depth);
          out += "])";
          return;
        case LK::Range:
          out += "range(" + std::to_string(v.l->start) + ", " + std::to_string(v.l->stop);
          if (v.l->step != 1) out += ", " + std::to_string(v.l->step);
          out += ')';
          return;
        case LK::Generator:
          fail(line, "cannot print a generator (jinja2 prints its address): add |list");
      }
      return;
    case T::Dict:
      if (v.d->loop) {
        out += "<LoopContext " + std::to_string(v.d->find("index")->i) + "/" + std::to_string(v.d->find("length")->i) + ">";
        return;
      }
      repr_dict(out, *v.d, line, depth);
      return;
    case T::Namespace:
      out += "<Namespace ";
      repr_dict(out, *v.d, line, depth);
      out += '>';
      return;
    case T::Func:
      fail(line, "cannot print a function (jinja2 prints its address): call it");
  }
}

// ======================================================================= JSON

// json.dumps(x, ensure_ascii, indent, separators, sort_keys): transformers' tojson.
struct JsonStyle {
  bool ensure_ascii = false;
  bool indented = false;
  std::string indent;
  std::string item_sep = ", ", key_sep = ": ";
  bool sort_keys = false;
};

void json_str(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (char32_t c : decode(s)) {
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (c < 0x20 || (ensure_ascii && c > 0x7E)) {
      if (c > 0xFFFF) {
        const uint32_t v = uint32_t(c) - 0x10000;
        hex_escape(out, "\\u", 0xD800 + (v >> 10), 4);
        hex_escape(out, "\\u", 0xDC00 + (v & 0x3FF), 4);
      } else {
        hex_escape(out, "\\u", c, 4);
      }
    } else {
      put(out, c);
    }
  }
  out += '"';
}

void json_dump(std::string& out, const Value& v, const JsonStyle& st, int level, int line) {
  if (level > 200) fail(line, "tojson: value nested too deeply");
  auto newline = [&](int lv) {
    out += '\n';
    for (int k = 0; k < lv; ++k) out += st.indent;
  };
  switch (v.t) {
    case T::None: out += "null"; return;
    case T::Bool: out += v.b ? "true" : "false"; return;
    case T::Int: out += std::to_string(v.i); return;
    case T::Float:
      if (std::isnan(v.f)) out += "NaN";
      else if (std::isinf(v.f)) out += v.f > 0 ? "Infinity" : "-Infinity";
      else out += float_repr(v.f);
      return;
    case T::Str: json_str(out, v.str(), st.ensure_ascii); return;
    case T::List:
      if (v.l->kind == LK::List || v.l->kind == LK::Tuple) {
        const auto& items = v.l->items;
        if (items.empty()) {
          out += "[]";
          return;
        }
        out += '[';
        if (st.indented) newline(level + 1);
        for (size_t k = 0; k < items.size(); ++k) {
          if (k) {
            out += st.item_sep;
            if (st.indented) newline(level + 1);
          }
          json_dump(out, items[k], st, level + 1, line);
        }
        if (st.indented) newline(level);
        out += ']';
        return;
      }
      break;
    case T::Dict: {
      if (v.d->loop) break;
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : v.d->items) items.push_back(&kv);
      if (items.empty()) {
        out += "{}";
        return;
      }
      if (st.sort_keys)
        std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
      out += '{';
      if (st.indented) newline(level + 1);
      for (size_t k = 0; k < items.size(); ++k) {
        if (k) {
          out += st.item_sep;
          if (st.indented) newline(level + 1);
        }
        json_str(out, items[k]->first, st.ensure_ascii);
        out += st.key_sep;
        json_dump(out, items[k]->second, st, level + 1, line);
      }
      if (st.indented) newline(level);
      out += '}';
      return;
    }
    default: break;
  }
  fail(line, "tojson: object of type " + type_name(v) + " is not JSON serializable");
}

// ====================================================================== lexer

enum class Tk : uint8_t { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, Str, Int, Float, Op, Eof };

struct Token {
  Tk k;
  int line;
  std::string text;  // Data, Name, Str (unescaped), Op
  int64_t i = 0;
  double f = 0;
};

std::string describe(const Token& t) {
  switch (t.k) {
    case Tk::Data: return "template data";
    case Tk::VarBegin: return "'{{'";
    case Tk::VarEnd: return "end of print statement";
    case Tk::BlockBegin: return "'{%'";
    case Tk::BlockEnd: return "end of statement block";
    case Tk::Name: case Tk::Op: return quote(t.text);
    case Tk::Str: return "a string";
    case Tk::Int: case Tk::Float: return "a number";
    case Tk::Eof: return "end of template";
  }
  return "token";
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

class Lexer {
 public:
  explicit Lexer(const std::string& in) {
    // Line breaks (\r\n, \r, \n) become \n, and one at the very end is dropped
    // (keep_trailing_newline=False).
    src_.reserve(in.size());
    for (size_t k = 0; k < in.size(); ++k) {
      if (in[k] == '\r') {
        src_ += '\n';
        if (k + 1 < in.size() && in[k + 1] == '\n') ++k;
      } else {
        src_ += in[k];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
  }

  std::vector<Token> run() {
    const size_t n = src_.size();
    size_t pos = 0;
    bool line_starting = true;  // the text so far ends a line (lstrip_blocks at the start)
    while (pos < n) {
      size_t open = pos;
      for (;; ++open) {
        open = src_.find('{', open);
        if (open == std::string::npos || open + 1 >= n) {
          open = std::string::npos;
          break;
        }
        const char k = src_[open + 1];
        if (k == '{' || k == '%' || k == '#') break;
      }
      if (open == std::string::npos) {
        emit(Tk::Data, pos, src_.substr(pos));
        break;
      }
      std::string text = src_.substr(pos, open - pos);
      const char kind = src_[open + 1];
      size_t j = open + 2;
      char sign = 0;
      if (j < n && (src_[j] == '-' || src_[j] == '+')) sign = src_[j++];
      if (sign == '-') {
        text = rstrip(text);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: a block or comment tag alone after the start of its line
        // takes the line's leading whitespace with it.
        const size_t l_pos = text.rfind('\n') + 1;  // npos + 1 == 0
        if ((l_pos > 0 || line_starting) && l_pos < text.size() && all_space(text, l_pos)) text.resize(l_pos);
      }
      if (!text.empty()) emit(Tk::Data, pos, text);

      if (kind == '#') {
        size_t end = std::string::npos;
        for (size_t k = j; k + 1 < n; ++k) {
          if (src_.compare(k, 3, "+#}") == 0) {
            end = k + 3;
          } else if (src_.compare(k, 3, "-#}") == 0) {
            end = skip_space(k + 3);
          } else if (src_.compare(k, 2, "#}") == 0) {
            end = k + 2;
            if (end < n && src_[end] == '\n') ++end;  // trim_blocks
          } else {
            continue;
          }
          break;
        }
        if (end == std::string::npos) fail(line_at(open), "missing end of comment tag '#}'");
        line_starting = src_[end - 1] == '\n';
        pos = end;
        continue;
      }
      if (kind == '%') refuse_raw(j, open);
      emit(kind == '%' ? Tk::BlockBegin : Tk::VarBegin, open, "");
      pos = tag(j, kind, open, line_starting);
    }
    emit(Tk::Eof, n, "");
    return std::move(tokens_);
  }

 private:
  std::string src_;
  std::vector<Token> tokens_;
  size_t line_pos_ = 0;
  int line_ = 1;

  int line_at(size_t pos) {
    if (pos < line_pos_) {  // never happens in order, but stay correct
      line_pos_ = 0;
      line_ = 1;
    }
    for (; line_pos_ < pos && line_pos_ < src_.size(); ++line_pos_)
      if (src_[line_pos_] == '\n') ++line_;
    return line_;
  }

  Token& emit(Tk k, size_t pos, std::string text) {
    tokens_.push_back(Token{k, line_at(pos), std::move(text)});
    return tokens_.back();
  }

  // Byte length of the whitespace character at `pos`, 0 if it is none.
  size_t space_len(size_t pos) const {
    const uint8_t b = uint8_t(src_[pos]);
    if (b < 0x80) return py_space(b) ? 1 : 0;
    size_t len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
    if (pos + len > src_.size()) return 0;
    const U32 u = decode(std::string_view(src_).substr(pos, len));
    return u.size() == 1 && py_space(u[0]) ? len : 0;
  }
  size_t skip_space(size_t pos) const {
    while (pos < src_.size()) {
      const size_t w = space_len(pos);
      if (!w) break;
      pos += w;
    }
    return pos;
  }
  static std::string rstrip(const std::string& s) {
    U32 u = decode(s);
    while (!u.empty() && py_space(u.back())) u.pop_back();
    return encode(u);
  }
  static bool all_space(const std::string& s, size_t from) {
    for (char32_t c : decode(std::string_view(s).substr(from)))
      if (!py_space(c)) return false;
    return true;
  }

  void refuse_raw(size_t j, size_t open) {
    size_t k = skip_space(j);
    if (src_.compare(k, 3, "raw") != 0) return;
    k = skip_space(k + 3);
    if (src_.compare(k, 3, "-%}") == 0 || src_.compare(k, 2, "%}") == 0)
      fail(line_at(open), "unsupported Jinja feature 'raw'");
  }

  // The tokens of a {{ }} or {% %} tag from `pos` (after the opener); returns the
  // position after its end (with trim_blocks' newline or -'s whitespace).
  size_t tag(size_t pos, char kind, size_t open, bool& line_starting) {
    const size_t n = src_.size();
    std::vector<char> balance;
    for (;;) {
      if (pos >= n)
        fail(line_at(open), std::string("unexpected end of template: '") + (kind == '%' ? "{%" : "{{") +
                                "' is never closed");
      if (balance.empty()) {
        size_t end = std::string::npos;
        if (kind == '%') {
          if (src_.compare(pos, 3, "+%}") == 0) {
            end = pos + 3;
          } else if (src_.compare(pos, 3, "-%}") == 0) {
            end = skip_space(pos + 3);
          } else if (src_.compare(pos, 2, "%}") == 0) {
            end = pos + 2;
            if (end < n && src_[end] == '\n') ++end;  // trim_blocks
          }
        } else {
          if (src_.compare(pos, 3, "-}}") == 0) end = skip_space(pos + 3);
          else if (src_.compare(pos, 2, "}}") == 0) end = pos + 2;
        }
        if (end != std::string::npos) {
          emit(kind == '%' ? Tk::BlockEnd : Tk::VarEnd, pos, "");
          line_starting = src_[end - 1] == '\n';
          return end;
        }
      }
      if (const size_t w = space_len(pos)) {
        pos += w;
        continue;
      }
      const char c = src_[pos];
      if (is_digit(c)) {
        pos = number(pos);
      } else if (is_name_start(c)) {
        size_t e = pos;
        while (e < n && is_name_char(src_[e])) ++e;
        emit(Tk::Name, pos, src_.substr(pos, e - pos));
        pos = e;
      } else if (c == '\'' || c == '"') {
        pos = string(pos);
      } else {
        static const char* const two[] = {"//", "**", "==", "!=", ">=", "<="};
        std::string op;
        for (const char* t : two)
          if (src_.compare(pos, 2, t) == 0) op = t;
        if (op.empty() && std::strchr("+-/*%~[](){}><=.:|,;", c)) op = std::string(1, c);
        if (op.empty()) {
          size_t len = 1;
          if (uint8_t(c) >= 0x80) len = uint8_t(c) >= 0xF0 ? 4 : uint8_t(c) >= 0xE0 ? 3 : 2;
          fail(line_at(pos), "unexpected character " + quote(src_.substr(pos, len)));
        }
        if (op == "(" || op == "[" || op == "{") {
          balance.push_back(op == "(" ? ')' : op == "[" ? ']' : '}');
        } else if (op == ")" || op == "]" || op == "}") {
          if (balance.empty()) fail(line_at(pos), "unexpected " + quote(op));
          if (balance.back() != op[0])
            fail(line_at(pos), "unexpected " + quote(op) + ", expected " + quote(std::string(1, balance.back())));
          balance.pop_back();
        }
        emit(Tk::Op, pos, op);
        pos += op.size();
      }
    }
  }

  size_t digits(size_t pos) const {  // (\d+_)*\d+ from a digit
    const size_t n = src_.size();
    while (pos < n && is_digit(src_[pos])) ++pos;
    while (pos + 1 < n && src_[pos] == '_' && is_digit(src_[pos + 1])) {
      ++pos;
      while (pos < n && is_digit(src_[pos])) ++pos;
    }
    return pos;
  }

  size_t number(size_t pos) {
    const size_t n = src_.size();
    auto clean = [&](size_t a, size_t b) {
      std::string s;
      for (size_t k = a; k < b; ++k)
        if (src_[k] != '_') s += src_[k];
      return s;
    };
    // A float: digits with a fraction, an exponent or both (not right after a '.').
    if (pos == 0 || src_[pos - 1] != '.') {
      size_t m = digits(pos), end = std::string::npos;
      bool frac = false;
      if (m + 1 < n && src_[m] == '.' && is_digit(src_[m + 1])) {
        m = digits(m + 1);
        frac = true;
      }
      if (m < n && (src_[m] == 'e' || src_[m] == 'E')) {
        size_t q = m + 1;
        if (q < n && (src_[q] == '+' || src_[q] == '-')) ++q;
        if (q < n && is_digit(src_[q])) end = digits(q);
      }
      if (end == std::string::npos && frac) end = m;
      if (end != std::string::npos) {
        Token& t = emit(Tk::Float, pos, "");
        t.f = std::strtod(clean(pos, end).c_str(), nullptr);
        return end;
      }
    }
    int base = 10;
    size_t start = pos, end = pos;
    const char p = pos + 1 < n ? char(src_[pos + 1] | 0x20) : 0;
    auto radix_digit = [&](char ch) {
      if (base == 2) return ch == '0' || ch == '1';
      if (base == 8) return ch >= '0' && ch <= '7';
      return is_digit(ch) || (char(ch | 0x20) >= 'a' && char(ch | 0x20) <= 'f');
    };
    if (src_[pos] == '0' && (p == 'b' || p == 'o' || p == 'x')) {
      base = p == 'b' ? 2 : p == 'o' ? 8 : 16;
      start = end = pos + 2;
      while (end < n && (radix_digit(src_[end]) || (src_[end] == '_' && end + 1 < n && radix_digit(src_[end + 1])))) ++end;
      if (end == start) fail(line_at(pos), "invalid number literal");
    } else if (src_[pos] == '0') {
      end = pos + 1;
      while (end + 1 < n && (src_[end] == '0' || (src_[end] == '_' && src_[end + 1] == '0'))) ++end;
      if (end < n && src_[end] == '0') ++end;
    } else {
      end = digits(pos);
    }
    const std::string text = clean(start, end);
    int64_t v = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), v, base);
    if (r.ec != std::errc()) fail(line_at(pos), "integer literal " + text + " is too large");
    emit(Tk::Int, pos, "").i = v;
    return end;
  }

  // A quoted string, unescaped as Python's unicode-escape codec does.
  size_t string(size_t pos) {
    const size_t n = src_.size();
    const char q = src_[pos];
    size_t k = pos + 1;
    while (k < n && src_[k] != q) k += src_[k] == '\\' ? 2 : 1;
    if (k >= n) fail(line_at(pos), "unterminated string");
    const int line = line_at(pos);
    std::string out;
    for (size_t i = pos + 1; i < k;) {
      if (src_[i] != '\\') {
        out += src_[i++];
        continue;
      }
      const char e = src_[i + 1];
      i += 2;
      auto hex = [&](int count) {
        uint32_t v = 0;
        for (int d = 0; d < count; ++d, ++i) {
          const char h = i < k ? src_[i] : 0;
          const int x = is_digit(h) ? h - '0' : (char(h | 0x20) >= 'a' && char(h | 0x20) <= 'f') ? (h | 0x20) - 'a' + 10 : -1;
          if (x < 0) fail(line, std::string("truncated \\") + e + " escape in a string");
          v = v * 16 + uint32_t(x);
        }
        if (v > 0x10FFFF) fail(line, "illegal Unicode character in a string escape");
        put(out, char32_t(v));
      };
      switch (e) {
        case '\n': break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x': hex(2); break;
        case 'u': hex(4); break;
        case 'U': hex(8); break;
        case 'N': fail(line, "unsupported \\N{...} escape in a string");
        default:
          if (e >= '0' && e <= '7') {
            uint32_t v = uint32_t(e - '0');
            for (int d = 0; d < 2 && i < k && src_[i] >= '0' && src_[i] <= '7'; ++d) v = v * 8 + uint32_t(src_[i++] - '0');
            put(out, char32_t(v));
          } else if (uint8_t(e) >= 0x80) {
            // jinja2 escapes non-ASCII characters (backslashreplace) before decoding the
            // escapes: a backslash before one leaves the text of that escape, \xe9.
            size_t len = uint8_t(e) >= 0xF0 ? 4 : uint8_t(e) >= 0xE0 ? 3 : 2;
            len = std::min(len, k - (i - 1));
            const U32 c = decode(std::string_view(src_).substr(i - 1, len));
            i += len - 1;
            const uint32_t cp = c.empty() ? uint32_t(uint8_t(e)) : uint32_t(c[0]);
            const uint32_t raw = cp >= 0xDC80 && cp <= 0xDCFF ? cp - 0xDC00 : cp;
            out += '\\';
            hex_escape(out, raw <= 0xFF ? "x" : raw <= 0xFFFF ? "u" : "U", raw, raw <= 0xFF ? 2 : raw <= 0xFFFF ? 4 : 8);
            for (size_t r = 1; r < c.size(); ++r) put(out, c[r]);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    emit(Tk::Str, pos, std::move(out));
    return k + 1;
  }
};

// ======================================================================== AST

enum class E : uint8_t { Const, Name, List, Tuple, Dict, Attr, Item, Slice, Call, Filter, Test, Neg, Pos, Not, Bin, And, Or, Compare, Cond };

struct Expr;
using ExprP = std::unique_ptr<Expr>;

struct Expr {
  E k;
  int line;
  Value v;                                         // Const
  std::string name;                                // Name, Attr, Filter, Test, Bin's operator
  std::vector<ExprP> a;                            // operands (see the parser)
  std::vector<std::pair<std::string, ExprP>> kw;   // Call, Filter, Test keyword arguments
  std::vector<std::string> ops;                    // Compare
  bool negated = false;                            // Test: `is not`
  int depth = 1;                                   // of the tree below (see seal)
};

ExprP node(E k, int line) {
  auto e = std::make_unique<Expr>();
  e->k = k;
  e->line = line;
  return e;
}

// Records the depth of a finished node: evaluating (and freeing) a tree recurses
// along it, so hostile input such as 1+1+...+1 is bounded here.
ExprP seal(ExprP e) {
  int d = 0;
  for (const auto& c : e->a)
    if (c) d = std::max(d, c->depth);
  for (const auto& kv : e->kw) d = std::max(d, kv.second->depth);
  e->depth = d + 1;
  if (e->depth > 300) fail(e->line, "expression nested too deeply");
  return e;
}

enum class S : uint8_t { Text, Print, If, For, Set, SetBlock, Break, Continue, Scope };

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

// An assignment target: names (several when unpacking), or namespace.attr.
struct Target {
  std::vector<std::string> names;
  bool tuple = false;
  std::string attr;  // set: `{% set ns.attr = ... %}` (names[0] is the namespace)
};

struct Stmt {
  S k;
  int line;
  std::string text;                              // Text
  ExprP e;                                       // Print, Set's value, For's iterable
  ExprP cond;                                    // For's `if` filter
  Target target;                                 // For, Set, SetBlock
  std::vector<std::pair<ExprP, Body>> branches;  // If (a null condition is `else`)
  Body body, orelse;                             // For (orelse: `else`), SetBlock, Scope
  std::vector<ExprP> filters;                    // SetBlock's filters (subject a[0] empty)
  // Names that start undefined in the frame of `body` (For, SetBlock, Scope) and of
  // `orelse` (For), whatever the context holds (see Scopes).
  std::vector<std::string> fresh, fresh_else;
};

// Names known at parse time: unknown ones are refused when the template is read.
const std::vector<std::string_view> kFilters = {
    "abs", "capitalize", "count", "d", "default", "first", "float", "int", "items", "join", "last",
    "length", "list", "lower", "map", "reject", "rejectattr", "replace", "reverse", "select",
    "selectattr", "string", "title", "tojson", "trim", "upper"};
const std::vector<std::string_view> kJinjaFilters = {  // jinja2's, not implemented here
    "attr", "batch", "center", "dictsort", "e", "escape", "filesizeformat", "forceescape", "format",
    "groupby", "indent", "max", "min", "pprint", "random", "round", "safe", "slice", "sort",
    "striptags", "sum", "truncate", "unique", "urlencode", "urlize", "wordcount", "wordwrap", "xmlattr"};
const std::vector<std::string_view> kTests = {
    "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "even", "false", "float", "ge",
    "gt", "in", "integer", "iterable", "le", "lower", "lt", "mapping", "ne", "none", "number", "odd",
    "sameas", "sequence", "string", "true", "undefined", "upper", "greaterthan", "lessthan",
    "==", "!=", "<", "<=", ">", ">="};  // the operator names only by string: select('==', 1)
const std::vector<std::string_view> kJinjaTests = {"escaped", "filter", "test"};
const std::vector<std::string_view> kFunctions = {"dict", "namespace", "raise_exception", "range", "strftime_now"};
const std::vector<std::string_view> kJinjaFunctions = {"cycler", "joiner", "lipsum"};
const std::vector<std::string_view> kUnsupportedTags = {
    "autoescape", "block", "call", "extends", "filter", "from", "import", "include", "macro", "with"};

bool among(const std::vector<std::string_view>& names, std::string_view n) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

// ===================================================================== scopes

// Where a name read in a frame comes from is decided by jinja2 before rendering
// (idtracking.py): a frame is the template's top level, a for loop's body (one per
// iteration) or its else block, a {% set %} block or a {% generation %} body. When
// the first mention of a name in a frame stores it, and no enclosing frame mentions
// it, the name starts out undefined in that frame, even when the context has it;
// every other read finds the innermost value set so far or the context. The
// renderer follows the second rule by looking up frames from the inside out; the
// analysis below gives each frame the names of the first rule.

enum class Load : uint8_t { Param, Resolve, Alias, Undefined };

struct Symbols {
  const Symbols* parent = nullptr;
  std::unordered_map<std::string, Load> refs;
  std::unordered_set<std::string> stores;

  bool has_ref(const std::string& n) const {
    for (const Symbols* s = this; s; s = s->parent)
      if (s->refs.count(n)) return true;
    return false;
  }
  void load(const std::string& n) {
    if (!has_ref(n)) refs[n] = Load::Resolve;
  }
  void store(const std::string& n) {
    stores.insert(n);
    if (!refs.count(n)) refs[n] = parent && parent->has_ref(n) ? Load::Alias : Load::Undefined;
  }
  void param(const std::string& n) {
    stores.insert(n);
    refs[n] = Load::Param;
  }
};

class Scopes {
 public:
  void frame(Body& body, const Symbols* parent, const std::vector<std::string>& params, std::vector<std::string>& fresh) {
    Symbols s;
    s.parent = parent;
    for (const std::string& p : params) s.param(p);
    std::vector<Child> children;
    visit(body, s, children);
    for (const auto& [n, how] : s.refs)
      if (how == Load::Undefined) fresh.push_back(n);
    std::sort(fresh.begin(), fresh.end());
    for (Child& c : children) frame(*c.body, &s, c.params, *c.fresh);
  }

 private:
  struct Child {  // a frame inside the one analysed, analysed after it
    Body* body;
    std::vector<std::string> params;
    std::vector<std::string>* fresh;
  };

  static void expr(const Expr* e, Symbols& s) {
    if (!e) return;
    if (e->k == E::Name) s.load(e->name);
    for (const auto& c : e->a) expr(c.get(), s);
    for (const auto& kv : e->kw) expr(kv.second.get(), s);
  }

  static void store(const Target& tg, Symbols& s) {
    if (!tg.attr.empty()) {
      s.load(tg.names[0]);  // ns.attr = ... reads ns
      return;
    }
    for (const std::string& n : tg.names) s.store(n);
  }

  static void branch_update(Symbols& s, const std::vector<Symbols>& branches) {
    std::unordered_map<std::string, size_t> count;
    for (const Symbols& b : branches)
      for (const std::string& t : b.stores)
        if (!s.stores.count(t)) ++count[t];
    for (const Symbols& b : branches) {
      for (const auto& [n, how] : b.refs) s.refs[n] = how;
      s.stores.insert(b.stores.begin(), b.stores.end());
    }
    for (const auto& [n, c] : count) {
      if (c == branches.size()) continue;
      s.refs[n] = s.parent && s.parent->has_ref(n) ? Load::Alias : Load::Resolve;
    }
  }

  // jinja2's If node: the first test and body, the elif branches as If nodes of
  // their own (no elif or else), the else body.
  void visit_if(Stmt& st, Symbols& s, std::vector<Child>& children) {
    auto& br = st.branches;
    expr(br[0].first.get(), s);
    std::vector<Symbols> parts(3, s);
    visit(br[0].second, parts[0], children);
    for (size_t k = 1; k < br.size() && br[k].first; ++k) {
      Symbols& c = parts[1];
      expr(br[k].first.get(), c);
      std::vector<Symbols> sub(3, c);
      visit(br[k].second, sub[0], children);
      branch_update(c, sub);
    }
    if (br.size() > 1 && !br.back().first) visit(br.back().second, parts[2], children);
    branch_update(s, parts);
  }

  void visit(Body& body, Symbols& s, std::vector<Child>& children) {
    for (auto& sp : body) {
      Stmt& st = *sp;
      switch (st.k) {
        case S::Text: case S::Break: case S::Continue: break;
        case S::Print: expr(st.e.get(), s); break;
        case S::Set:
          expr(st.e.get(), s);
          store(st.target, s);
          break;
        case S::SetBlock:
          store(st.target, s);
          children.push_back({&st.body, {}, &st.fresh});
          break;
        case S::Scope: children.push_back({&st.body, {}, &st.fresh}); break;
        case S::For: {
          expr(st.e.get(), s);
          std::vector<std::string> params = st.target.names;
          params.push_back("loop");
          children.push_back({&st.body, params, &st.fresh});
          if (!st.orelse.empty()) children.push_back({&st.orelse, {}, &st.fresh_else});
          break;
        }
        case S::If: visit_if(st, s, children); break;
      }
    }
  }
};

// ===================================================================== parser

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Body parse() {
    Body body;
    parse_body(body, {}, "", 0);
    return body;
  }

 private:
  std::vector<Token> t_;
  size_t p_ = 0;
  int loop_depth_ = 0;
  int nesting_ = 0;
  int blocks_ = 0;  // open {% for %}, {% if %}... (bounded like nesting_)

  const Token& cur() const { return t_[p_]; }
  const Token& peek(size_t k = 1) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
  bool op(const char* o) const { return cur().k == Tk::Op && cur().text == o; }
  bool name(const char* n) const { return cur().k == Tk::Name && cur().text == n; }
  void expect_op(const char* o) {
    if (!op(o)) fail(cur().line, "expected " + quote(o) + ", got " + describe(cur()));
    ++p_;
  }
  void expect(Tk k, const char* what) {
    if (cur().k != k) fail(cur().line, std::string("expected ") + what + ", got " + describe(cur()));
    ++p_;
  }
  void expect_block_end() { expect(Tk::BlockEnd, "end of statement block"); }

  // Statements until a {% name %} with `name` in `ends`; returns that name with the
  // cursor on it ("" at the end of the template, where `ends` must be empty).
  std::string parse_body(Body& out, std::initializer_list<std::string_view> ends, const char* opener, int opener_line) {
    if (ends.size() && ++blocks_ > 200) fail(cur().line, "blocks nested too deeply");
    for (;;) {
      const Token& t = cur();
      switch (t.k) {
        case Tk::Eof: {
          if (ends.size() == 0) return "";
          std::string want;
          for (auto e : ends) want += (want.empty() ? "" : " or ") + quote(e);
          fail(t.line, std::string("unexpected end of template: '") + opener + "' of line " + std::to_string(opener_line) +
                           " is not closed (expected " + want + ")");
        }
        case Tk::Data: {
          auto st = stmt(S::Text, t.line);
          st->text = t.text;
          out.push_back(std::move(st));
          ++p_;
          break;
        }
        case Tk::VarBegin: {
          ++p_;
          auto st = stmt(S::Print, t.line);
          st->e = parse_tuple(true, false, {});
          expect(Tk::VarEnd, "end of print statement");
          out.push_back(std::move(st));
          break;
        }
        case Tk::BlockBegin: {
          const Token& nm = peek();
          if (nm.k == Tk::Name && std::find(ends.begin(), ends.end(), nm.text) != ends.end()) {
            ++p_;
            --blocks_;
            return nm.text;
          }
          ++p_;
          parse_statement(out);
          break;
        }
        default:
          fail(t.line, "unexpected " + describe(t));
      }
    }
  }

  static std::unique_ptr<Stmt> stmt(S k, int line) {
    auto st = std::make_unique<Stmt>();
    st->k = k;
    st->line = line;
    return st;
  }

  // Consumes {% end... %} (the cursor is on the name).
  void close_tag() {
    ++p_;
    expect_block_end();
  }

  void parse_statement(Body& out) {
    const Token& t = cur();
    if (t.k != Tk::Name) fail(t.line, "expected a tag name, got " + describe(t));
    const std::string& n = t.text;
    const int line = t.line;
    if (n == "for") return parse_for(out);
    if (n == "if") return parse_if(out);
    if (n == "set") return parse_set(out);
    if (n == "break" || n == "continue") {
      if (loop_depth_ == 0) fail(line, quote(n) + " outside of a for loop");
      ++p_;
      expect_block_end();
      out.push_back(stmt(n == "break" ? S::Break : S::Continue, line));
      return;
    }
    if (n == "print") {
      ++p_;
      auto st = stmt(S::Print, line);
      st->e = parse_tuple(true, false, {});
      expect_block_end();
      out.push_back(std::move(st));
      return;
    }
    if (n == "generation") {  // transformers' AssistantTracker: renders its body
      ++p_;
      expect_block_end();
      auto st = stmt(S::Scope, line);
      const int saved = std::exchange(loop_depth_, 0);
      parse_body(st->body, {"endgeneration"}, "generation", line);
      loop_depth_ = saved;
      close_tag();
      out.push_back(std::move(st));
      return;
    }
    if (among(kUnsupportedTags, n)) fail(line, "unsupported Jinja feature " + quote(n));
    static const std::vector<std::string_view> ends = {"elif", "else", "endfor", "endif", "endset", "endgeneration",
                                                       "endmacro", "endcall", "endfilter", "endblock", "endwith",
                                                       "endautoescape", "endraw"};
    if (among(ends, n)) fail(line, "unexpected " + quote(n));
    fail(line, "unknown tag " + quote(n));
  }

  Target parse_target(bool with_namespace) {
    Target tg;
    if (with_namespace && cur().k == Tk::Name && peek().k == Tk::Op && peek().text == ".") {
      tg.names.push_back(cur().text);
      p_ += 2;
      if (cur().k != Tk::Name) fail(cur().line, "expected an attribute name, got " + describe(cur()));
      tg.attr = cur().text;
      ++p_;
      return tg;
    }
    auto item = [&] {
      const Token& t = cur();
      if (t.k != Tk::Name || t.text == "true" || t.text == "false" || t.text == "none" || t.text == "True" ||
          t.text == "False" || t.text == "None")
        fail(t.line, "can't assign to " + describe(t));
      tg.names.push_back(t.text);
      ++p_;
    };
    if (op("(")) {
      ++p_;
      tg.tuple = true;
      while (!op(")")) {
        if (tg.names.size()) {
          expect_op(",");
          if (op(")")) break;
        }
        item();
      }
      ++p_;
      return tg;
    }
    item();
    while (op(",")) {
      ++p_;
      tg.tuple = true;
      if (cur().k != Tk::Name || name("in")) break;
      item();
    }
    return tg;
  }

  void parse_for(Body& out) {
    const int line = cur().line;
    ++p_;
    auto st = stmt(S::For, line);
    st->target = parse_target(false);
    if (!name("in")) fail(cur().line, "expected 'in' after the for loop's variables, got " + describe(cur()));
    ++p_;
    st->e = parse_tuple(false, false, {"recursive"});
    if (name("if")) {
      ++p_;
      st->cond = parse_expression(true);
    }
    if (name("recursive")) fail(cur().line, "unsupported Jinja feature 'recursive' (recursive for loops)");
    expect_block_end();
    ++loop_depth_;
    std::string end = parse_body(st->body, {"endfor", "else"}, "for", line);
    --loop_depth_;
    if (end == "else") {
      close_tag();
      parse_body(st->orelse, {"endfor"}, "for", line);
    }
    close_tag();
    out.push_back(std::move(st));
  }

  void parse_if(Body& out) {
    const int line = cur().line;
    ++p_;
    auto st = stmt(S::If, line);
    ExprP cond = parse_tuple(false, false, {});
    expect_block_end();
    for (;;) {
      Body body;
      const std::string end = parse_body(body, {"elif", "else", "endif"}, "if", line);
      st->branches.emplace_back(std::move(cond), std::move(body));
      if (end == "elif") {
        ++p_;
        cond = parse_tuple(false, false, {});
        expect_block_end();
      } else if (end == "else") {
        close_tag();
        Body orelse;
        parse_body(orelse, {"endif"}, "if", line);
        st->branches.emplace_back(nullptr, std::move(orelse));
        break;
      } else {
        break;
      }
    }
    close_tag();
    out.push_back(std::move(st));
  }

  void parse_set(Body& out) {
    const int line = cur().line;
    ++p_;
    Target tg = parse_target(true);
    if (op("=")) {
      ++p_;
      auto st = stmt(S::Set, line);
      st->target = std::move(tg);
      st->e = parse_tuple(true, false, {});
      expect_block_end();
      out.push_back(std::move(st));
      return;
    }
    auto st = stmt(S::SetBlock, line);
    if (tg.tuple) fail(line, "can't assign a {% set %} block to several names");
    st->target = std::move(tg);
    while (op("|")) st->filters.push_back(parse_filter(nullptr));
    expect_block_end();
    const int saved = std::exchange(loop_depth_, 0);
    parse_body(st->body, {"endset"}, "set", line);
    loop_depth_ = saved;
    close_tag();
    out.push_back(std::move(st));
  }

  // ---- expressions, with jinja2's precedence (lowest first)

  struct Nest {  // bounds the recursion on hostile input
    explicit Nest(Parser& p) : p(p) {
      if (++p.nesting_ > 200) fail(p.cur().line, "expression nested too deeply");
    }
    ~Nest() { --p.nesting_; }
    Parser& p;
  };

  bool tuple_end(std::initializer_list<std::string_view> extra) const {
    const Token& t = cur();
    if (t.k == Tk::VarEnd || t.k == Tk::BlockEnd || (t.k == Tk::Op && t.text == ")")) return true;
    return t.k == Tk::Name && std::find(extra.begin(), extra.end(), t.text) != extra.end();
  }

  ExprP parse_tuple(bool condexpr, bool explicit_parens, std::initializer_list<std::string_view> extra) {
    const int line = cur().line;
    std::vector<ExprP> items;
    bool is_tuple = false;
    for (;;) {
      if (!items.empty()) expect_op(",");
      if (tuple_end(extra)) break;
      items.push_back(parse_expression(condexpr));
      if (op(",")) is_tuple = true;
      else break;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parens) fail(cur().line, "expected an expression, got " + describe(cur()));
    }
    auto e = node(E::Tuple, line);
    e->a = std::move(items);
    return seal(std::move(e));
  }

  ExprP parse_expression(bool condexpr = true) {
    Nest nest(*this);
    if (!condexpr) return parse_or();
    ExprP e = parse_or();
    while (name("if")) {
      const int line = cur().line;
      ++p_;
      auto c = node(E::Cond, line);
      ExprP test = parse_or();
      ExprP orelse;
      if (name("else")) {
        ++p_;
        orelse = parse_expression(true);
      }
      c->a.push_back(std::move(test));
      c->a.push_back(std::move(e));
      c->a.push_back(std::move(orelse));
      e = seal(std::move(c));
    }
    return e;
  }

  ExprP binary(E k, std::string opname, ExprP l, ExprP r, int line) {
    auto e = node(k, line);
    e->name = std::move(opname);
    e->a.push_back(std::move(l));
    e->a.push_back(std::move(r));
    return seal(std::move(e));
  }

  ExprP parse_or() {
    ExprP e = parse_and();
    while (name("or")) {
      const int line = cur().line;
      ++p_;
      e = binary(E::Or, "or", std::move(e), parse_and(), line);
    }
    return e;
  }

  ExprP parse_and() {
    ExprP e = parse_not();
    while (name("and")) {
      const int line = cur().line;
      ++p_;
      e = binary(E::And, "and", std::move(e), parse_not(), line);
    }
    return e;
  }

  ExprP parse_not() {
    if (name("not")) {
      Nest nest(*this);
      const int line = cur().line;
      ++p_;
      auto e = node(E::Not, line);
      e->a.push_back(parse_not());
      return seal(std::move(e));
    }
    return parse_compare();
  }

  ExprP parse_compare() {
    const int line = cur().line;
    ExprP first = parse_math1();
    auto e = node(E::Compare, line);
    for (;;) {
      const Token& t = cur();
      if (t.k == Tk::Op && (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" || t.text == ">" ||
                            t.text == ">=")) {
        e->ops.push_back(t.text);
        ++p_;
      } else if (name("in")) {
        e->ops.push_back("in");
        ++p_;
      } else if (name("not") && peek().k == Tk::Name && peek().text == "in") {
        e->ops.push_back("not in");
        p_ += 2;
      } else {
        break;
      }
      e->a.push_back(parse_math1());
    }
    if (e->ops.empty()) return first;
    e->a.insert(e->a.begin(), std::move(first));
    return seal(std::move(e));
  }

  ExprP parse_math1() {
    ExprP e = parse_concat();
    while (op("+") || op("-")) {
      const Token& t = cur();
      ++p_;
      e = binary(E::Bin, t.text, std::move(e), parse_concat(), t.line);
    }
    return e;
  }

  ExprP parse_concat() {
    ExprP e = parse_math2();
    while (op("~")) {
      const int line = cur().line;
      ++p_;
      e = binary(E::Bin, "~", std::move(e), parse_math2(), line);
    }
    return e;
  }

  ExprP parse_math2() {
    ExprP e = parse_pow();
    while (op("*") || op("/") || op("//") || op("%")) {
      const Token& t = cur();
      ++p_;
      e = binary(E::Bin, t.text, std::move(e), parse_pow(), t.line);
    }
    return e;
  }

  ExprP parse_pow() {
    ExprP e = parse_unary(true);
    while (op("**")) {
      const int line = cur().line;
      ++p_;
      e = binary(E::Bin, "**", std::move(e), parse_unary(true), line);
    }
    return e;
  }

  ExprP parse_unary(bool with_filter) {
    Nest nest(*this);
    const int line = cur().line;
    ExprP e;
    if (op("-") || op("+")) {
      const bool neg = op("-");
      ++p_;
      e = node(neg ? E::Neg : E::Pos, line);
      e->a.push_back(parse_unary(false));
      e = seal(std::move(e));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  static bool reserved_const(const std::string& n, Value& v) {
    if (n == "true" || n == "True") v = boolean(true);
    else if (n == "false" || n == "False") v = boolean(false);
    else if (n == "none" || n == "None") v = none();
    else return false;
    return true;
  }

  ExprP parse_primary() {
    const Token& t = cur();
    const int line = t.line;
    switch (t.k) {
      case Tk::Name: {
        Value v;
        if (reserved_const(t.text, v)) {
          auto e = node(E::Const, line);
          e->v = v;
          ++p_;
          return e;
        }
        auto e = node(E::Name, line);
        e->name = t.text;
        ++p_;
        return e;
      }
      case Tk::Str: {
        std::string s;
        while (cur().k == Tk::Str) s += t_[p_++].text;
        auto e = node(E::Const, line);
        e->v = str(std::move(s));
        return e;
      }
      case Tk::Int: case Tk::Float: {
        auto e = node(E::Const, line);
        e->v = t.k == Tk::Int ? integer(t.i) : real(t.f);
        ++p_;
        return e;
      }
      case Tk::Op:
        if (t.text == "(") {
          ++p_;
          ExprP e = parse_tuple(true, true, {});
          expect_op(")");
          return e;
        }
        if (t.text == "[") {
          ++p_;
          auto e = node(E::List, line);
          while (!op("]")) {
            if (!e->a.empty()) {
              expect_op(",");
              if (op("]")) break;
            }
            e->a.push_back(parse_expression());
          }
          ++p_;
          return seal(std::move(e));
        }
        if (t.text == "{") {
          ++p_;
          auto e = node(E::Dict, line);
          while (!op("}")) {
            if (!e->a.empty()) {
              expect_op(",");
              if (op("}")) break;
            }
            e->a.push_back(parse_expression());
            expect_op(":");
            e->a.push_back(parse_expression());
          }
          ++p_;
          return seal(std::move(e));
        }
        break;
      default: break;
    }
    fail(line, "unexpected " + describe(t));
  }

  ExprP parse_postfix(ExprP e) {
    for (;;) {
      if (op(".")) {
        const int line = cur().line;
        ++p_;
        const Token& t = cur();
        if (t.k == Tk::Name) {
          auto a = node(E::Attr, line);
          a->name = t.text;
          a->a.push_back(std::move(e));
          e = seal(std::move(a));
        } else if (t.k == Tk::Int) {
          auto a = node(E::Item, line);
          a->a.push_back(std::move(e));
          auto c = node(E::Const, line);
          c->v = integer(t.i);
          a->a.push_back(std::move(c));
          e = seal(std::move(a));
        } else {
          fail(t.line, "expected an attribute name after '.', got " + describe(t));
        }
        ++p_;
      } else if (op("[")) {
        e = parse_subscript(std::move(e));
      } else if (op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  // One index or slice of a subscript: a slice is a Slice node without its object.
  ExprP parse_subscribed() {
    const int line = cur().line;
    ExprP parts[3];
    if (op(":")) {
      ++p_;
    } else {
      ExprP e = parse_expression();
      if (!op(":")) return e;
      ++p_;
      parts[0] = std::move(e);
    }
    auto end = [&] { return op("]") || op(","); };
    if (!op(":") && !end()) parts[1] = parse_expression();
    if (op(":")) {
      ++p_;
      if (!end()) parts[2] = parse_expression();
    }
    auto e = node(E::Slice, line);
    e->a.push_back(nullptr);  // the object, filled in by parse_subscript
    for (auto& part : parts) e->a.push_back(std::move(part));
    return e;
  }

  ExprP parse_subscript(ExprP obj) {
    const int line = cur().line;
    ++p_;  // [
    std::vector<ExprP> args;
    while (!op("]")) {
      if (!args.empty()) expect_op(",");
      args.push_back(parse_subscribed());
    }
    ++p_;
    if (args.size() == 1 && args[0]->k == E::Slice) {
      args[0]->a[0] = std::move(obj);
      return seal(std::move(args[0]));
    }
    auto e = node(E::Item, line);
    e->a.push_back(std::move(obj));
    if (args.size() == 1) {
      e->a.push_back(std::move(args[0]));
    } else {
      // obj[a, b] or obj[]: a tuple key, which no list or JSON object has (undefined).
      auto key = node(E::Tuple, line);
      for (auto& x : args) {
        if (x->k == E::Slice) fail(x->line, "a slice among several indices");  // jinja2 compiles invalid Python
        key->a.push_back(std::move(x));
      }
      e->a.push_back(seal(std::move(key)));
    }
    return seal(std::move(e));
  }

  ExprP parse_call(ExprP callee) {
    const int line = cur().line;
    if (callee->k == E::Name && !among(kFunctions, callee->name)) {
      if (among(kJinjaFunctions, callee->name)) fail(line, "unsupported Jinja function " + quote(callee->name));
      fail(line, "unknown function " + quote(callee->name));
    }
    auto e = node(E::Call, line);
    e->a.push_back(std::move(callee));
    parse_call_args(*e);
    return seal(std::move(e));
  }

  // Positional arguments go after the operands already in e.a, keywords to e.kw.
  void parse_call_args(Expr& e) {
    expect_op("(");
    bool any = false;
    while (!op(")")) {
      if (any) {
        expect_op(",");
        if (op(")")) break;
      }
      any = true;
      if (op("*") || op("**")) fail(cur().line, "unsupported *args or **kwargs in a call");
      if (cur().k == Tk::Name && peek().k == Tk::Op && peek().text == "=") {
        std::string key = cur().text;
        p_ += 2;
        e.kw.emplace_back(std::move(key), parse_expression());
      } else {
        if (!e.kw.empty()) fail(cur().line, "positional argument after a keyword argument");
        e.a.push_back(parse_expression());
      }
    }
    ++p_;
  }

  ExprP parse_filter_expr(ExprP e) {
    for (;;) {
      if (op("|")) e = parse_filter(std::move(e));
      else if (name("is")) e = parse_test(std::move(e));
      else if (op("(")) e = parse_call(std::move(e));
      else return e;
    }
  }

  std::string dotted_name() {
    if (cur().k != Tk::Name) fail(cur().line, "expected a name, got " + describe(cur()));
    std::string n = cur().text;
    ++p_;
    while (op(".") && peek().k == Tk::Name) {
      n += "." + peek().text;
      p_ += 2;
    }
    return n;
  }

  ExprP parse_filter(ExprP subject) {
    const int line = cur().line;
    ++p_;  // |
    auto e = node(E::Filter, line);
    e->name = dotted_name();
    if (!among(kFilters, e->name)) {
      if (among(kJinjaFilters, e->name)) fail(line, "unsupported filter " + quote(e->name));
      fail(line, "unknown filter " + quote(e->name));
    }
    e->a.push_back(std::move(subject));
    if (op("(")) parse_call_args(*e);
    return seal(std::move(e));
  }

  ExprP parse_test(ExprP subject) {
    const int line = cur().line;
    ++p_;  // is
    auto e = node(E::Test, line);
    if (name("not")) {
      e->negated = true;
      ++p_;
    }
    e->name = dotted_name();
    if (!among(kTests, e->name)) {
      if (among(kJinjaTests, e->name)) fail(line, "unsupported test " + quote(e->name));
      fail(line, "unknown test " + quote(e->name));
    }
    e->a.push_back(std::move(subject));
    const Token& t = cur();
    if (op("(")) {
      parse_call_args(*e);
    } else if ((t.k == Tk::Name || t.k == Tk::Str || t.k == Tk::Int || t.k == Tk::Float || op("[") || op("{")) &&
               !name("else") && !name("or") && !name("and")) {
      if (name("is")) fail(t.line, "you cannot chain several tests with 'is'");
      e->a.push_back(parse_postfix(parse_primary()));
    }
    return seal(std::move(e));
  }
};

// ================================================================== evaluator

struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};

// Binds arguments to parameter names as Python does (positional first, then by
// keyword); a missing one is null.
std::vector<const Value*> bind(const Args& a, std::initializer_list<const char*> params, const std::string& what,
                               int line) {
  const std::vector<const char*> names(params);
  std::vector<const Value*> out(names.size(), nullptr);
  if (a.pos.size() > names.size())
    fail(line, what + "() takes at most " + std::to_string(names.size()) + " argument(s) (" +
                   std::to_string(a.pos.size()) + " given)");
  for (size_t k = 0; k < a.pos.size(); ++k) out[k] = &a.pos[k];
  for (const auto& [key, v] : a.kw) {
    size_t k = 0;
    while (k < names.size() && key != names[k]) ++k;
    if (k == names.size()) fail(line, what + "() got an unexpected keyword argument " + quote(key));
    if (out[k]) fail(line, what + "() got multiple values for argument " + quote(key));
    out[k] = &v;
  }
  return out;
}

void no_args(const Args& a, const std::string& what, int line) {
  if (!a.pos.empty() || !a.kw.empty()) fail(line, what + "() takes no arguments");
}

const std::string& want_str(const Value& v, const std::string& what, int line) {
  if (v.t != T::Str) fail(line, what + "(): expected a string argument, got '" + type_name(v) + "'");
  return v.str();
}

int64_t want_int(const Value& v, const std::string& what, int line) {
  check_defined(v, line);
  if (!is_intlike(v)) fail(line, what + "(): '" + type_name(v) + "' object cannot be interpreted as an integer");
  return ival(v);
}

[[noreturn]] void overflow(int line) { fail(line, "integer overflow (beyond 64 bits)"); }

// str.strip / lstrip / rstrip: `chars` null strips whitespace.
std::string py_strip(const std::string& s, const std::string* chars, bool left, bool right) {
  const U32 u = decode(s);
  const U32 set = chars ? decode(*chars) : U32();
  auto strip = [&](char32_t c) { return chars ? set.find(c) != U32::npos : py_space(c); };
  size_t a = 0, b = u.size();
  if (left)
    while (a < b && strip(u[a])) ++a;
  if (right)
    while (b > a && strip(u[b - 1])) --b;
  return encode(u.substr(a, b - a));
}

std::string py_replace(const std::string& s, const std::string& old, const std::string& rep, int64_t count) {
  std::string out;
  if (old.empty()) {
    const U32 u = decode(s);
    int64_t n = 0;
    for (size_t k = 0; k <= u.size(); ++k) {
      if (count < 0 || n < count) {
        out += rep;
        ++n;
      }
      if (k < u.size()) put(out, u[k]);
    }
    return out;
  }
  size_t start = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    const size_t at = s.find(old, start);
    if (at == std::string::npos) break;
    out.append(s, start, at - start);
    out += rep;
    start = at + old.size();
    ++n;
  }
  out.append(s, start, std::string::npos);
  return out;
}

std::vector<Value> py_split(const std::string& s, const Value* sep, int64_t maxsplit, int line) {
  std::vector<Value> out;
  if (maxsplit < 0) maxsplit = std::numeric_limits<int64_t>::max();
  if (sep && sep->t != T::None) {
    const std::string& d = want_str(*sep, "split", line);
    if (d.empty()) fail(line, "split(): empty separator");
    size_t start = 0;
    for (int64_t n = 0; n < maxsplit; ++n) {
      const size_t at = s.find(d, start);
      if (at == std::string::npos) break;
      out.push_back(str(s.substr(start, at - start)));
      start = at + d.size();
    }
    out.push_back(str(s.substr(start)));
    return out;
  }
  const U32 u = decode(s);  // CPython's split_whitespace
  size_t i = 0;
  const size_t len = u.size();
  while (maxsplit-- > 0) {
    while (i < len && py_space(u[i])) ++i;
    if (i == len) break;
    const size_t j = i++;
    while (i < len && !py_space(u[i])) ++i;
    out.push_back(str(encode(u.substr(j, i - j))));
  }
  if (i < len) {
    while (i < len && py_space(u[i])) ++i;
    if (i != len) out.push_back(str(encode(u.substr(i))));
  }
  return out;
}

// str.format with plain fields: {}, {0}, {name}, optionally !r or !s.
std::string py_format(const std::string& f, const Args& a, int line) {
  std::string out;
  size_t next = 0;
  bool automatic = false, manual = false;
  for (size_t i = 0; i < f.size(); ++i) {
    const char c = f[i];
    if (c == '}') {
      if (i + 1 < f.size() && f[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      fail(line, "format(): single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = f.find('}', i);
    if (close == std::string::npos) fail(line, "format(): single '{' encountered in format string");
    std::string field = f.substr(i + 1, close - i - 1);
    i = close;
    char conv = 0;
    if (field.find(':') != std::string::npos || field.find('{') != std::string::npos)
      fail(line, "format(): format specifications are not supported");
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      const std::string cv = field.substr(bang + 1);
      if (cv != "r" && cv != "s") fail(line, "format(): unsupported conversion '!" + cv + "'");
      conv = cv[0];
      field.resize(bang);
    }
    const Value* arg = nullptr;
    if (field.empty()) {
      if (manual) fail(line, "format(): cannot switch from manual field numbering to automatic");
      automatic = true;
      if (next >= a.pos.size()) fail(line, "format(): replacement index " + std::to_string(next) + " out of range");
      arg = &a.pos[next++];
    } else if (std::all_of(field.begin(), field.end(), is_digit)) {
      if (automatic) fail(line, "format(): cannot switch from automatic field numbering to manual");
      manual = true;
      const size_t k = std::strtoul(field.c_str(), nullptr, 10);
      if (k >= a.pos.size()) fail(line, "format(): replacement index " + field + " out of range");
      arg = &a.pos[k];
    } else if (is_name_start(field[0]) && std::all_of(field.begin(), field.end(), is_name_char)) {
      for (const auto& [k, v] : a.kw)
        if (k == field) arg = &v;
      if (!arg) fail(line, "format(): no keyword argument " + quote(field));
    } else {
      fail(line, "format(): unsupported field " + quote(field));
    }
    if (conv == 'r') repr(out, *arg, line);
    else out += to_str(*arg, line);
  }
  return out;
}

// A character of a number as int() and float() read it: ASCII, or any Unicode
// decimal digit as its value ('١' is 1); 0 for anything else.
char ascii_digit(char32_t c) {
  if (c < 0x80) return c ? char(c) : 0;
  if (is_surrogate(c) || u_charType(UChar32(c)) != U_DECIMAL_DIGIT_NUMBER) return 0;
  return char('0' + u_charDigitValue(UChar32(c)));
}

// Python's int(str, base): whitespace around, a sign, digits with single underscores.
bool parse_int(const std::string& text, int base, int64_t& out) {
  U32 u = decode(text);
  size_t a = 0, b = u.size();
  while (a < b && py_space(u[a])) ++a;
  while (b > a && py_space(u[b - 1])) --b;
  std::string s;
  for (size_t k = a; k < b; ++k) {
    const char c = ascii_digit(u[k]);
    if (!c) return false;
    s += c;
  }
  bool neg = false;
  size_t k = 0;
  if (k < s.size() && (s[k] == '+' || s[k] == '-')) neg = s[k++] == '-';
  auto prefix = [&](char p) { return k + 1 < s.size() && s[k] == '0' && char(s[k + 1] | 0x20) == p; };
  if (base == 0) {
    base = prefix('x') ? 16 : prefix('o') ? 8 : prefix('b') ? 2 : 10;
    if (base != 10) k += 2;
    else if (k + 1 < s.size() && s[k] == '0' && s.find_first_not_of("0_", k) != std::string::npos) return false;
  } else if ((base == 16 && prefix('x')) || (base == 8 && prefix('o')) || (base == 2 && prefix('b'))) {
    k += 2;
    if (k < s.size() && s[k] == '_') ++k;
  }
  if (base < 2 || base > 36) return false;
  std::string digits;
  for (; k < s.size(); ++k) {
    if (s[k] == '_') {
      if (digits.empty() || k + 1 >= s.size() || s[k + 1] == '_') return false;
      continue;
    }
    digits += s[k];
  }
  if (digits.empty()) return false;
  if (neg) digits.insert(digits.begin(), '-');
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), out, base);
  return r.ec == std::errc() && r.ptr == digits.data() + digits.size();
}

// Python's float(str).
bool parse_float(const std::string& text, double& out) {
  U32 u = decode(text);
  size_t a = 0, b = u.size();
  while (a < b && py_space(u[a])) ++a;
  while (b > a && py_space(u[b - 1])) --b;
  std::string s;
  for (size_t k = a; k < b; ++k) {
    const char c = ascii_digit(u[k]);
    if (!c) return false;
    s += c;
  }
  std::string body = s;
  std::string sign;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    sign = body.substr(0, 1);
    body.erase(0, 1);
  }
  std::string lower;
  for (char c : body) lower += char(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "inf" || lower == "infinity") {
    out = sign == "-" ? -INFINITY : INFINITY;
    return true;
  }
  if (lower == "nan") {
    out = NAN;
    return true;
  }
  // digits[.digits][e[sign]digits] or .digits[...], underscores only between digits
  std::string clean;
  bool digit_seen = false;
  size_t k = 0;
  auto run = [&]() {
    size_t start = k;
    while (k < body.size() && (is_digit(body[k]) || (body[k] == '_' && k > start && k + 1 < body.size() && is_digit(body[k + 1])))) {
      if (body[k] != '_') clean += body[k];
      ++k;
    }
    return k > start;
  };
  digit_seen = run();
  if (k < body.size() && body[k] == '.') {
    clean += '.';
    ++k;
    digit_seen = run() || digit_seen;
  }
  if (!digit_seen) return false;
  if (k < body.size() && (body[k] == 'e' || body[k] == 'E')) {
    clean += 'e';
    ++k;
    if (k < body.size() && (body[k] == '+' || body[k] == '-')) clean += body[k++];
    if (!run()) return false;
  }
  if (k != body.size()) return false;
  out = std::strtod((sign + clean).c_str(), nullptr);
  return true;
}

Value make_range(const Args& a, int line) {
  if (!a.kw.empty()) fail(line, "range() takes no keyword arguments");
  if (a.pos.empty() || a.pos.size() > 3)
    fail(line, "range expected 1 to 3 arguments, got " + std::to_string(a.pos.size()));
  int64_t start = 0, stop = 0, step = 1;
  if (a.pos.size() == 1) {
    stop = want_int(a.pos[0], "range", line);
  } else {
    start = want_int(a.pos[0], "range", line);
    stop = want_int(a.pos[1], "range", line);
    if (a.pos.size() == 3) step = want_int(a.pos[2], "range", line);
  }
  if (step == 0) fail(line, "range() arg 3 must not be zero");
  __int128 count = 0;
  if (step > 0 && start < stop) count = ((__int128)stop - start + step - 1) / step;
  if (step < 0 && start > stop) count = ((__int128)start - stop - step - 1) / -step;
  if (count > 100000) fail(line, "range too big: the sandbox allows at most 100000 items");
  Value v = list({}, LK::Range);
  for (int64_t k = 0; k < int64_t(count); ++k) v.l->items.push_back(integer(start + k * step));
  v.l->start = start;
  v.l->stop = stop;
  v.l->step = step;
  return v;
}

// dict(...) and namespace(...): a mapping or pairs, then keyword arguments.
Value make_dict(const std::string& what, const Args& a, int line) {
  auto d = std::make_shared<DictData>();
  if (a.pos.size() > 1) fail(line, what + "() expected at most 1 positional argument");
  if (a.pos.size() == 1) {
    const Value& src = a.pos[0];
    if (is_mapping(src)) {
      d->items = src.d->items;
    } else {
      for (const Value& pair : iterate(src, line)) {
        const std::vector<Value> kv = iterate(pair, line);
        if (kv.size() != 2) fail(line, what + "(): a sequence element has length " + std::to_string(kv.size()) + "; 2 is required");
        if (kv[0].t != T::Str) fail(line, what + "(): unsupported key of type '" + type_name(kv[0]) + "' (only strings)");
        d->set(kv[0].str(), kv[1]);
      }
    }
  }
  for (const auto& [k, v] : a.kw) d->set(k, v);
  Value v = dict(d);
  if (what == "namespace") v.t = T::Namespace;
  return v;
}

// transformers' strftime_now(format): datetime.now().strftime(format).
std::string strftime_now(const std::string& format, int line) {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t t = system_clock::to_time_t(now);
  const long micros = long(duration_cast<microseconds>(now.time_since_epoch()).count() % 1000000);
  std::tm tm{};
  localtime_r(&t, &tm);
  // datetime.strftime's own directives: %f (microseconds), %z and %Z (empty for a naive time).
  std::string fmt;
  for (size_t k = 0; k < format.size(); ++k) {
    if (format[k] == '%' && k + 1 < format.size()) {
      const char c = format[++k];
      if (c == 'f') {
        char buf[8];
        std::snprintf(buf, sizeof buf, "%06ld", micros);
        fmt += buf;
      } else if (c != 'z' && c != 'Z') {
        fmt += '%';
        fmt += c;
      }
    } else {
      fmt += format[k];
    }
  }
  if (fmt.empty()) return "";
  for (size_t size = 256; size <= 65536; size *= 4) {
    std::string buf(size, '\0');
    const size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
    if (n > 0) return buf.substr(0, n);
  }
  (void)line;
  return "";
}

const std::vector<std::string_view> kStrMethods = {"capitalize", "count", "endswith", "find", "format",
                                                   "join", "lower", "lstrip", "replace", "rstrip",
                                                   "split", "startswith", "strip", "title", "upper"};
const std::vector<std::string_view> kPyStrMethods = {
    "casefold", "center", "encode", "expandtabs", "format_map", "index", "isalnum", "isalpha", "isascii",
    "isdecimal", "isdigit", "isidentifier", "islower", "isnumeric", "isprintable", "isspace", "istitle",
    "isupper", "ljust", "maketrans", "partition", "removeprefix", "removesuffix", "rfind", "rindex",
    "rjust", "rpartition", "rsplit", "splitlines", "swapcase", "translate", "zfill"};
const std::vector<std::string_view> kDictMethods = {"get", "items", "keys", "values"};
const std::vector<std::string_view> kPyDictMethods = {"clear", "copy", "fromkeys", "pop", "popitem", "setdefault", "update"};
const std::vector<std::string_view> kPyListMethods = {"append", "clear", "copy", "count", "extend", "index",
                                                      "insert", "pop", "remove", "reverse", "sort"};

bool indexable(const Value& v) {
  return v.t == T::List && (v.l->kind == LK::List || v.l->kind == LK::Tuple || v.l->kind == LK::Range);
}

// obj.name as jinja2's sandbox resolves it: Python attributes (methods) first,
// then items; a missing one is Undefined.
Value get_attr(const Value& obj, const std::string& n, int line) {
  check_defined(obj, line);
  if (!n.empty() && n[0] == '_')
    return undef("access to attribute " + quote(n) + " of '" + type_name(obj) + "' object is unsafe");
  switch (obj.t) {
    case T::Str:
      if (among(kStrMethods, n)) return func("str." + n, obj);
      if (among(kPyStrMethods, n)) return undef("unsupported string method " + quote(n));
      break;
    case T::Dict:
      if (obj.d->loop) {
        if (const Value* v = obj.d->find(n)) return *v;
        if (n == "changed") return undef("unsupported loop.changed()");
        break;
      }
      if (among(kDictMethods, n)) return func("dict." + n, obj);
      if (among(kPyDictMethods, n)) return undef("unsupported dict method " + quote(n) + " (the sandbox allows no changes)");
      if (const Value* v = obj.d->find(n)) return *v;
      break;
    case T::Namespace:
      if (const Value* v = obj.d->find(n)) return *v;
      break;
    case T::List:
      if (indexable(obj) && among(kPyListMethods, n)) {
        const bool changes = n != "count" && n != "index" && n != "copy";
        return undef("unsupported " + type_name(obj) + " method " + quote(n) + (changes ? " (the sandbox allows no changes)" : ""));
      }
      break;
    default: break;
  }
  return undef("'" + type_name(obj) + " object' has no attribute " + quote(n));
}

// obj[key]: the item first, then (for a string key) the attribute.
Value get_item(const Value& obj, const Value& key, int line) {
  check_defined(obj, line);
  if (is_intlike(key) && (indexable(obj) || obj.t == T::Str)) {
    int64_t k = ival(key);
    if (obj.t == T::Str) {
      const U32 u = decode(obj.str());
      if (k < 0) k += int64_t(u.size());
      if (k >= 0 && k < int64_t(u.size())) {
        std::string one;
        put(one, u[size_t(k)]);
        return str(std::move(one));
      }
    } else {
      const auto& items = obj.l->items;
      if (k < 0) k += int64_t(items.size());
      if (k >= 0 && k < int64_t(items.size())) return items[size_t(k)];
    }
    return undef("'" + type_name(obj) + " object' has no element " + std::to_string(ival(key)));
  }
  if (is_mapping(obj) && key.t == T::Str)
    if (const Value* v = obj.d->find(key.str())) return *v;
  if (key.t == T::Str) return get_attr(obj, key.str(), line);
  std::string k;
  repr(k, key, line);
  return undef("'" + type_name(obj) + " object' has no element " + k);
}

// obj[start:stop:step] on a string, list, tuple or range.
Value slice(const Value& obj, const Value* parts[3], int line) {
  check_defined(obj, line);
  if (obj.t != T::Str && !indexable(obj)) return undef("'" + type_name(obj) + " object' cannot be sliced");
  int64_t idx[3] = {0, 0, 1};
  bool given[3] = {false, false, false};
  for (int k = 0; k < 3; ++k) {
    if (!parts[k] || parts[k]->t == T::None) continue;
    if (!is_intlike(*parts[k])) return undef("slice indices must be integers or None");
    idx[k] = ival(*parts[k]);
    given[k] = true;
  }
  const int64_t step = given[2] ? idx[2] : 1;
  if (step == 0) fail(line, "slice step cannot be zero");
  const U32 u = obj.t == T::Str ? decode(obj.str()) : U32();
  const int64_t len = obj.t == T::Str ? int64_t(u.size()) : int64_t(obj.l->items.size());
  auto adjust = [&](bool has, int64_t v, bool is_start) {
    if (!has) return step > 0 ? (is_start ? int64_t(0) : len) : (is_start ? len - 1 : int64_t(-1));
    if (v < 0) {
      v += len;
      if (v < 0) v = step < 0 ? -1 : 0;
    } else if (v >= len) {
      v = step < 0 ? len - 1 : len;
    }
    return v;
  };
  const int64_t start = adjust(given[0], idx[0], true), stop = adjust(given[1], idx[1], false);
  std::vector<size_t> picks;
  if (step > 0)
    for (int64_t k = start; k < stop; k += step) picks.push_back(size_t(k));
  else
    for (int64_t k = start; k > stop; k += step) picks.push_back(size_t(k));
  if (obj.t == T::Str) {
    std::string out;
    for (size_t k : picks) put(out, u[k]);
    return str(std::move(out));
  }
  std::vector<Value> items;
  for (size_t k : picks) items.push_back(obj.l->items[k]);
  Value v = list(std::move(items), obj.l->kind);
  if (obj.l->kind == LK::Range) {
    v.l->start = obj.l->start + start * obj.l->step;
    v.l->stop = obj.l->start + stop * obj.l->step;
    v.l->step = obj.l->step * step;
  }
  return v;
}

Value apply_filter(const std::string& n, const Value& v, const Args& a, int line);
bool apply_test(const std::string& n, const Value& v, const Args& a, int line);

// make_attrgetter: "a.b.0" looks up a, then b, then item 0.
Value attr_get(Value item, const Value& spec, const Value* dflt, int line) {
  std::vector<Value> parts;
  if (spec.t == T::Str) {
    const std::string& s = spec.str();
    size_t start = 0;
    for (;;) {
      const size_t dot = s.find('.', start);
      const std::string part = s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!part.empty() && std::all_of(part.begin(), part.end(), is_digit)) {
        int64_t k = 0;
        std::from_chars(part.data(), part.data() + part.size(), k);
        parts.push_back(integer(k));
      } else {
        parts.push_back(str(part));
      }
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
  } else if (spec.t != T::None) {
    parts.push_back(spec);
  }
  for (const Value& part : parts) {
    item = get_item(item, part, line);
    if (dflt && dflt->t != T::None && item.t == T::Undefined) item = *dflt;
  }
  return item;
}

Value generator(std::vector<Value> items) { return list(std::move(items), LK::Generator); }

// select, reject, selectattr, rejectattr.
Value select(const std::string& n, const Value& v, const Args& a, int line) {
  const bool by_attr = n.size() > 4 && n.compare(n.size() - 4, 4, "attr") == 0;
  const bool reject = n.compare(0, 6, "reject") == 0;
  std::vector<Value> out;
  if (!truthy(v)) return generator({});
  size_t off = 0;
  if (by_attr) {
    if (a.pos.empty()) fail(line, n + ": missing parameter for attribute name");
    off = 1;
  }
  const bool has_test = a.pos.size() > off;
  Args targs;
  std::string test;
  if (has_test) {
    if (a.pos[off].t != T::Str) fail(line, n + ": the test name must be a string");
    test = a.pos[off].str();
    if (!among(kTests, test)) fail(line, "unknown test " + quote(test));
    targs.pos.assign(a.pos.begin() + std::ptrdiff_t(off) + 1, a.pos.end());
    targs.kw = a.kw;
  }
  for (const Value& item : iterate(v, line)) {
    const Value x = by_attr ? attr_get(item, a.pos[0], nullptr, line) : item;
    const bool ok = has_test ? apply_test(test, x, targs, line) : truthy(x);
    if (ok != reject) out.push_back(item);
  }
  return generator(std::move(out));
}

Value map_filter(const Value& v, const Args& a, int line) {
  if (!truthy(v)) return generator({});
  std::vector<Value> out;
  const Value* attribute = nullptr;
  const Value* dflt = nullptr;
  for (const auto& [k, x] : a.kw) {
    if (k == "attribute") attribute = &x;
    else if (k == "default") dflt = &x;
  }
  if (a.pos.empty() && attribute) {
    for (const auto& [k, x] : a.kw)
      if (k != "attribute" && k != "default") fail(line, "map: unexpected keyword argument " + quote(k));
    for (const Value& item : iterate(v, line)) out.push_back(attr_get(item, *attribute, dflt, line));
    return generator(std::move(out));
  }
  if (a.pos.empty()) fail(line, "map requires a filter argument");
  if (a.pos[0].t != T::Str) fail(line, "map: the filter name must be a string");
  const std::string name = a.pos[0].str();
  if (!among(kFilters, name)) fail(line, "unknown filter " + quote(name));
  Args rest;
  rest.pos.assign(a.pos.begin() + 1, a.pos.end());
  rest.kw = a.kw;
  for (const Value& item : iterate(v, line)) out.push_back(apply_filter(name, item, rest, line));
  return generator(std::move(out));
}

Value do_int(const Value& v, const Args& a, int line) {
  const auto p = bind(a, {"default", "base"}, "int", line);
  const Value dflt = p[0] ? *p[0] : integer(0);
  const int64_t base = p[1] ? want_int(*p[1], "int", line) : 10;
  check_defined(v, line);
  int64_t out = 0;
  double f = 0;
  switch (v.t) {
    case T::Int: case T::Bool: return integer(ival(v));
    case T::Float: f = v.f; break;
    case T::Str:
      if (parse_int(v.str(), int(base), out)) return integer(out);
      if (!parse_float(v.str(), f)) return dflt;
      break;
    default: return dflt;
  }
  if (std::isnan(f)) return dflt;
  if (std::isinf(f)) fail(line, "int: cannot convert float infinity to integer");
  if (std::fabs(f) >= 9.2e18) overflow(line);
  return integer(int64_t(f));
}

Value do_float(const Value& v, const Args& a, int line) {
  const auto p = bind(a, {"default"}, "float", line);
  const Value dflt = p[0] ? *p[0] : real(0.0);
  check_defined(v, line);
  double f = 0;
  switch (v.t) {
    case T::Int: case T::Bool: case T::Float: return real(fval(v));
    case T::Str: return parse_float(v.str(), f) ? real(f) : dflt;
    default: return dflt;
  }
}

Value do_tojson(const Value& v, const Args& a, int line) {
  const auto p = bind(a, {"ensure_ascii", "indent", "separators", "sort_keys"}, "tojson", line);
  JsonStyle st;
  st.ensure_ascii = p[0] && truthy(*p[0]);
  if (p[1] && p[1]->t != T::None) {
    st.indented = true;
    st.item_sep = ",";
    if (p[1]->t == T::Str) st.indent = p[1]->str();
    else st.indent = std::string(size_t(std::max<int64_t>(0, want_int(*p[1], "tojson", line))), ' ');
  }
  if (p[2] && p[2]->t != T::None) {
    const std::vector<Value> seps = iterate(*p[2], line);
    if (seps.size() != 2) fail(line, "tojson: separators must be a pair of strings");
    st.item_sep = want_str(seps[0], "tojson", line);
    st.key_sep = want_str(seps[1], "tojson", line);
  }
  st.sort_keys = p[3] && truthy(*p[3]);
  std::string out;
  json_dump(out, v, st, 0, line);
  return str(std::move(out));
}

Value apply_filter(const std::string& n, const Value& v, const Args& a, int line) {
  if (n == "trim") {
    const auto p = bind(a, {"chars"}, n, line);
    const std::string* chars = p[0] && p[0]->t != T::None ? &want_str(*p[0], n, line) : nullptr;
    return str(py_strip(to_str(v, line), chars, true, true));
  }
  if (n == "upper" || n == "lower" || n == "capitalize" || n == "title") {
    no_args(a, n, line);
    const U32 u = decode(to_str(v, line));
    return str(encode(n == "upper" ? py_upper(u) : n == "lower" ? py_lower(u) : n == "capitalize" ? py_capitalize(u) : jinja_title(u)));
  }
  if (n == "length" || n == "count") {
    no_args(a, n, line);
    return integer(length(v, line));
  }
  if (n == "tojson") return do_tojson(v, a, line);
  if (n == "join") {
    const auto p = bind(a, {"d", "attribute"}, n, line);
    const std::string sep = p[0] ? to_str(*p[0], line) : "";
    std::string out;
    bool first = true;
    for (const Value& item : iterate(v, line)) {
      if (!first) out += sep;
      first = false;
      out += to_str(p[1] && p[1]->t != T::None ? attr_get(item, *p[1], nullptr, line) : item, line);
    }
    return str(std::move(out));
  }
  if (n == "replace") {
    const auto p = bind(a, {"old", "new", "count"}, n, line);
    if (!p[0] || !p[1]) fail(line, "replace() needs the old and the new string");
    const int64_t count = p[2] && p[2]->t != T::None ? want_int(*p[2], n, line) : -1;
    return str(py_replace(to_str(v, line), to_str(*p[0], line), to_str(*p[1], line), count));
  }
  if (n == "default" || n == "d") {
    const auto p = bind(a, {"default_value", "boolean"}, n, line);
    const bool boolean_mode = p[1] && truthy(*p[1]);
    if (v.t == T::Undefined || (boolean_mode && !truthy(v))) return p[0] ? *p[0] : str("");
    return v;
  }
  if (n == "first") {
    no_args(a, n, line);
    if (v.t == T::List && v.l->kind == LK::Generator) {
      if (v.l->pos < v.l->items.size()) return v.l->items[v.l->pos++];
    } else {
      const std::vector<Value> items = iterate(v, line);
      if (!items.empty()) return items.front();
    }
    return undef("No first item, sequence was empty.");
  }
  if (n == "last") {
    no_args(a, n, line);
    if (v.t == T::List && v.l->kind == LK::Generator) fail(line, "'generator' object is not reversible");
    const std::vector<Value> items = iterate(v, line);
    if (!items.empty()) return items.back();
    return undef("No last item, sequence was empty.");
  }
  if (n == "list") {
    no_args(a, n, line);
    return list(iterate(v, line));
  }
  if (n == "string") {
    no_args(a, n, line);
    return str(to_str(v, line));
  }
  if (n == "int") return do_int(v, a, line);
  if (n == "float") return do_float(v, a, line);
  if (n == "items") {
    no_args(a, n, line);
    if (v.t == T::Undefined) return generator({});
    if (!is_mapping(v)) fail(line, "items: can only get item pairs from a mapping");
    std::vector<Value> out;
    for (const auto& [k, x] : v.d->items) out.push_back(list({str(k), x}, LK::Tuple));
    return generator(std::move(out));
  }
  if (n == "select" || n == "reject" || n == "selectattr" || n == "rejectattr") return select(n, v, a, line);
  if (n == "map") return map_filter(v, a, line);
  if (n == "abs") {
    no_args(a, n, line);
    check_defined(v, line);
    if (is_intlike(v)) {
      if (ival(v) == std::numeric_limits<int64_t>::min()) overflow(line);
      return integer(std::llabs(ival(v)));
    }
    if (v.t == T::Float) return real(std::fabs(v.f));
    fail(line, "bad operand type for abs(): '" + type_name(v) + "'");
  }
  if (n == "reverse") {
    no_args(a, n, line);
    if (v.t == T::Str) {
      U32 u = decode(v.str());
      std::reverse(u.begin(), u.end());
      return str(encode(u));
    }
    if (v.t == T::List && v.l->kind == LK::Generator) {
      std::vector<Value> items = iterate(v, line);
      std::reverse(items.begin(), items.end());
      return list(std::move(items));
    }
    std::vector<Value> items = iterate(v, line);
    std::reverse(items.begin(), items.end());
    return generator(std::move(items));
  }
  fail(line, "unknown filter " + quote(n));
}

bool sameas(const Value& a, const Value& b) {
  if (a.t != b.t) return false;
  switch (a.t) {
    case T::None: return true;
    case T::Bool: return a.b == b.b;
    case T::Int: return a.i == b.i && a.i >= -5 && a.i <= 256;  // CPython's cached small ints
    case T::Str: return a.s == b.s;
    case T::List: return a.l == b.l;
    case T::Dict: case T::Namespace: return a.d == b.d;
    case T::Func: return a.fn == b.fn;
    default: return false;
  }
}

// value % 2 (odd, even, divisibleby) as Python computes it.
double py_mod_num(const Value& v, const Value& m, int line) {
  check_defined(v, line);
  check_defined(m, line);
  if (!is_num(v) || !is_num(m))
    fail(line, "unsupported operand type(s) for %: '" + type_name(v) + "' and '" + type_name(m) + "'");
  if (fval(m) == 0) fail(line, "division by zero");
  if (is_intlike(v) && is_intlike(m)) {
    int64_t r = ival(v) % ival(m);
    if (r != 0 && ((r < 0) != (ival(m) < 0))) r += ival(m);
    return double(r);
  }
  double r = std::fmod(fval(v), fval(m));
  if (r != 0 && ((r < 0) != (fval(m) < 0))) r += fval(m);
  return r;
}

bool apply_test(const std::string& n, const Value& v, const Args& a, int line) {
  auto arg = [&](size_t count) -> const Value& {
    if (!a.kw.empty()) fail(line, "test " + quote(n) + " takes no keyword arguments");
    if (a.pos.size() != count)
      fail(line, "test " + quote(n) + " takes " + std::to_string(count) + " argument(s), " +
                     std::to_string(a.pos.size()) + " given");
    return count ? a.pos[0] : v;
  };
  if (n == "defined" || n == "undefined") {
    arg(0);
    return (v.t != T::Undefined) == (n == "defined");
  }
  if (n == "none") return arg(0), v.t == T::None;
  if (n == "boolean") return arg(0), v.t == T::Bool;
  if (n == "true") return arg(0), v.t == T::Bool && v.b;
  if (n == "false") return arg(0), v.t == T::Bool && !v.b;
  if (n == "integer") return arg(0), v.t == T::Int;
  if (n == "float") return arg(0), v.t == T::Float;
  if (n == "number") return arg(0), is_num(v);
  if (n == "string") return arg(0), v.t == T::Str;
  if (n == "mapping") return arg(0), is_mapping(v);
  if (n == "callable") return arg(0), v.t == T::Func || v.t == T::Undefined;
  if (n == "iterable") return arg(0), v.t == T::Str || v.t == T::List || v.t == T::Dict || v.t == T::Undefined;
  if (n == "sequence") {
    arg(0);
    return v.t == T::Str || indexable(v) || is_mapping(v) || v.t == T::Undefined;
  }
  if (n == "odd" || n == "even") {
    arg(0);
    return py_mod_num(v, integer(2), line) == (n == "odd" ? 1 : 0);
  }
  if (n == "divisibleby") return py_mod_num(v, arg(1), line) == 0;
  if (n == "eq" || n == "equalto" || n == "==") return py_eq(v, arg(1));
  if (n == "ne" || n == "!=") return !py_eq(v, arg(1));
  if (n == "lt" || n == "lessthan" || n == "<") return py_order("<", v, arg(1), line);
  if (n == "le" || n == "<=") return py_order("<=", v, arg(1), line);
  if (n == "gt" || n == "greaterthan" || n == ">") return py_order(">", v, arg(1), line);
  if (n == "ge" || n == ">=") return py_order(">=", v, arg(1), line);
  if (n == "in") return contains(arg(1), v, line);
  if (n == "sameas") return sameas(v, arg(1));
  if (n == "lower") return arg(0), py_islower(decode(to_str(v, line)));
  if (n == "upper") return arg(0), py_isupper(decode(to_str(v, line)));
  fail(line, "unknown test " + quote(n));
}

Value str_method(const std::string& m, const Value& self, const Args& a, int line) {
  const std::string& s = self.str();
  auto no_kw = [&] {
    if (!a.kw.empty()) fail(line, m + "() takes no keyword arguments");
  };
  if (m == "strip" || m == "lstrip" || m == "rstrip") {
    no_kw();
    if (a.pos.size() > 1) fail(line, m + "() takes at most 1 argument");
    const std::string* chars = !a.pos.empty() && a.pos[0].t != T::None ? &want_str(a.pos[0], m, line) : nullptr;
    return str(py_strip(s, chars, m != "rstrip", m != "lstrip"));
  }
  if (m == "startswith" || m == "endswith") {
    no_kw();
    if (a.pos.size() != 1) fail(line, m + "() with start and end arguments is not supported");
    const Value& p = a.pos[0];
    std::vector<std::string> affixes;
    if (p.t == T::Str) {
      affixes.push_back(p.str());
    } else if (p.t == T::List && p.l->kind == LK::Tuple) {
      for (const Value& x : p.l->items) affixes.push_back(want_str(x, m, line));
    } else {
      fail(line, m + " first arg must be str or a tuple of str, not " + type_name(p));
    }
    for (const std::string& x : affixes) {
      if (x.size() > s.size()) continue;
      if (m == "startswith" ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0)
        return boolean(true);
    }
    return boolean(false);
  }
  if (m == "split") {
    const auto p = bind(a, {"sep", "maxsplit"}, m, line);
    return list(py_split(s, p[0], p[1] ? want_int(*p[1], m, line) : -1, line));
  }
  if (m == "upper" || m == "lower" || m == "title" || m == "capitalize") {
    no_args(a, m, line);
    const U32 u = decode(s);
    return str(encode(m == "upper" ? py_upper(u) : m == "lower" ? py_lower(u) : m == "title" ? py_title(u) : py_capitalize(u)));
  }
  if (m == "replace") {
    no_kw();
    if (a.pos.size() < 2 || a.pos.size() > 3) fail(line, "replace() takes 2 or 3 arguments");
    const int64_t count = a.pos.size() == 3 ? want_int(a.pos[2], m, line) : -1;
    return str(py_replace(s, want_str(a.pos[0], m, line), want_str(a.pos[1], m, line), count));
  }
  if (m == "format") return str(py_format(s, a, line));
  if (m == "join") {
    no_kw();
    if (a.pos.size() != 1) fail(line, "join() takes exactly one argument");
    std::string out;
    size_t k = 0;
    for (const Value& item : iterate(a.pos[0], line)) {
      if (item.t != T::Str)
        fail(line, "join(): sequence item " + std::to_string(k) + ": expected str instance, " + type_name(item) + " found");
      if (k++) out += s;
      out += item.str();
    }
    return str(std::move(out));
  }
  if (m == "find" || m == "count") {
    no_kw();
    if (a.pos.size() != 1) fail(line, m + "() with start and end arguments is not supported");
    const std::string& sub = want_str(a.pos[0], m, line);
    if (m == "find") {
      const size_t at = s.find(sub);
      return integer(at == std::string::npos ? -1 : int64_t(decode(std::string_view(s).substr(0, at)).size()));
    }
    if (sub.empty()) return integer(int64_t(decode(s).size()) + 1);
    int64_t count = 0;
    for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++count;
    return integer(count);
  }
  fail(line, "unsupported string method " + quote(m));
}

Value dict_method(const std::string& m, const Value& self, const Args& a, int line) {
  if (m == "get") {
    if (!a.kw.empty()) fail(line, "get() takes no keyword arguments");
    if (a.pos.empty() || a.pos.size() > 2) fail(line, "get expected 1 or 2 arguments");
    if (a.pos[0].t == T::Str)
      if (const Value* v = self.d->find(a.pos[0].str())) return *v;
    return a.pos.size() == 2 ? a.pos[1] : none();
  }
  no_args(a, m, line);
  std::vector<Value> out;
  for (const auto& [k, v] : self.d->items) {
    if (m == "items") out.push_back(list({str(k), v}, LK::Tuple));
    else out.push_back(m == "keys" ? str(k) : v);
  }
  return list(std::move(out), m == "items" ? LK::Items : m == "keys" ? LK::Keys : LK::Values);
}

// `namespaces` collects the namespaces made, which the renderer empties at the end:
// {% set ns.me = ns %} makes a cycle that reference counting alone never frees.
Value call_func(const FuncData& fn, const Args& a, int line, std::vector<std::weak_ptr<DictData>>* namespaces) {
  const std::string& n = fn.name;
  if (n == "range") return make_range(a, line);
  if (n == "namespace" || n == "dict") {
    Value v = make_dict(n, a, line);
    if (v.d->depth > kMaxValueDepth) fail(line, "value nested too deeply");
    if (v.t == T::Namespace && namespaces) namespaces->push_back(v.d);
    return v;
  }
  if (n == "raise_exception") {
    const auto p = bind(a, {"message"}, n, line);
    if (!p[0]) fail(line, "raise_exception() missing 1 required positional argument: 'message'");
    throw Failure{line, to_str(*p[0], line), true};
  }
  if (n == "strftime_now") {
    const auto p = bind(a, {"format"}, n, line);
    if (!p[0]) fail(line, "strftime_now() missing 1 required positional argument: 'format'");
    return str(strftime_now(want_str(*p[0], n, line), line));
  }
  if (n == "loop.cycle") {
    if (!a.kw.empty()) fail(line, "cycle() takes no keyword arguments");
    if (a.pos.empty()) fail(line, "no items for cycling given");
    return a.pos[size_t(fn.self.i) % a.pos.size()];
  }
  if (n.compare(0, 4, "str.") == 0) return str_method(n.substr(4), fn.self, a, line);
  if (n.compare(0, 5, "dict.") == 0) return dict_method(n.substr(5), fn.self, a, line);
  fail(line, "unknown function " + quote(n));
}

Value binop(const std::string& op, const Value& l, const Value& r, int line) {
  if (op == "~") return str(to_str(l, line) + to_str(r, line));
  check_defined(l, line);
  check_defined(r, line);
  auto type_error = [&]() {
    fail(line, "unsupported operand type(s) for " + op + ": '" + type_name(l) + "' and '" + type_name(r) + "'");
  };
  const bool nums = is_num(l) && is_num(r), ints = is_intlike(l) && is_intlike(r);
  int64_t x = 0;
  auto seq = [](const Value& v) { return v.t == T::List && (v.l->kind == LK::List || v.l->kind == LK::Tuple); };
  if (op == "+") {
    if (ints) {
      if (__builtin_add_overflow(ival(l), ival(r), &x)) overflow(line);
      return integer(x);
    }
    if (nums) return real(fval(l) + fval(r));
    if (l.t == T::Str && r.t == T::Str) return str(l.str() + r.str());
    if (seq(l) && seq(r) && l.l->kind == r.l->kind) {
      std::vector<Value> items = l.l->items;
      items.insert(items.end(), r.l->items.begin(), r.l->items.end());
      return list(std::move(items), l.l->kind);
    }
    type_error();
  }
  if (op == "-") {
    if (ints) {
      if (__builtin_sub_overflow(ival(l), ival(r), &x)) overflow(line);
      return integer(x);
    }
    if (nums) return real(fval(l) - fval(r));
    type_error();
  }
  if (op == "*") {
    if (ints) {
      if (__builtin_mul_overflow(ival(l), ival(r), &x)) overflow(line);
      return integer(x);
    }
    if (nums) return real(fval(l) * fval(r));
    const Value* s = l.t == T::Str || seq(l) ? &l : r.t == T::Str || seq(r) ? &r : nullptr;
    const Value* k = s == &l ? &r : &l;
    if (!s || !is_intlike(*k)) type_error();
    const int64_t times = std::max<int64_t>(0, ival(*k));
    const size_t unit = s->t == T::Str ? s->str().size() : s->l->items.size();
    if (unit && uint64_t(times) > (uint64_t(1) << 28) / unit) fail(line, "repetition result too large");
    if (s->t == T::Str) {
      std::string out;
      for (int64_t j = 0; j < times; ++j) out += s->str();
      return str(std::move(out));
    }
    std::vector<Value> items;
    for (int64_t j = 0; j < times; ++j) items.insert(items.end(), s->l->items.begin(), s->l->items.end());
    return list(std::move(items), s->l->kind);
  }
  if (op == "/") {
    if (!nums) type_error();
    if (fval(r) == 0) fail(line, "division by zero");
    return real(fval(l) / fval(r));
  }
  if (op == "//" || op == "%") {
    if (l.t == T::Str && op == "%") fail(line, "unsupported printf-style string formatting with '%'");
    if (!nums) type_error();
    if (fval(r) == 0) fail(line, op == "//" ? "integer division or modulo by zero" : "modulo by zero");
    if (ints) {
      const int64_t a = ival(l), b = ival(r);
      if (a == std::numeric_limits<int64_t>::min() && b == -1) {
        if (op == "%") return integer(0);
        overflow(line);
      }
      int64_t q = a / b, m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) {
        --q;
        m += b;
      }
      return integer(op == "//" ? q : m);
    }
    // CPython's float_divmod
    const double a = fval(l), b = fval(r);
    double mod = std::fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0) {
      if ((b < 0) != (mod < 0)) {
        mod += b;
        div -= 1.0;
      }
    } else {
      mod = std::copysign(0.0, b);
    }
    double floordiv;
    if (div != 0) {
      floordiv = std::floor(div);
      if (div - floordiv > 0.5) floordiv += 1.0;
    } else {
      floordiv = std::copysign(0.0, a / b);
    }
    return real(op == "//" ? floordiv : mod);
  }
  if (op == "**") {
    if (!nums) type_error();
    if (ints && ival(r) >= 0) {
      int64_t base = ival(l), e = ival(r), result = 1;
      while (e > 0) {
        if (e & 1)
          if (__builtin_mul_overflow(result, base, &result)) overflow(line);
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base)) overflow(line);
      }
      return integer(result);
    }
    const double a = fval(l), b = fval(r);
    if (a == 0 && b < 0) fail(line, "0.0 cannot be raised to a negative power");
    if (a < 0 && b != std::floor(b)) fail(line, "a negative number to a fractional power (a complex number)");
    const double p = std::pow(a, b);
    if (std::isinf(p) && std::isfinite(a) && std::isfinite(b)) fail(line, "numerical result out of range");
    return real(p);
  }
  fail(line, "unknown operator " + quote(op));
}

bool compare(const std::string& op, const Value& a, const Value& b, int line) {
  if (op == "==") return py_eq(a, b);
  if (op == "!=") return !py_eq(a, b);
  if (op == "in") return contains(b, a, line);
  if (op == "not in") return !contains(b, a, line);
  return py_order(op, a, b, line);
}

enum class Flow { Normal, Break, Continue };

class Renderer {
 public:
  explicit Renderer(const std::unordered_map<std::string, Value>& context) : ctx_(context) {}
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;
  ~Renderer() {
    frames_.clear();
    for (const auto& w : namespaces_)
      if (const auto ns = w.lock()) ns->items.clear();
  }

  std::string run(const Body& body, const std::vector<std::string>& fresh) {
    std::string out;
    out_ = &out;
    enter(fresh);
    exec(body);
    return out;
  }

 private:
  using Frame = std::vector<std::pair<std::string, Value>>;
  const std::unordered_map<std::string, Value>& ctx_;
  std::vector<Frame> frames_;  // the template's own variables: the top level, then one per loop iteration
  std::string* out_ = nullptr;
  std::vector<std::weak_ptr<DictData>> namespaces_;  // made by namespace(): emptied at the end

  Value lookup(const std::string& n) const {
    for (auto f = frames_.rbegin(); f != frames_.rend(); ++f)
      for (const auto& [k, v] : *f)
        if (k == n) return v;
    if (const auto it = ctx_.find(n); it != ctx_.end()) return it->second;
    if (among(kFunctions, n)) return func(n);
    return undef(quote(n) + " is undefined");
  }

  // A new frame, where the `fresh` names start undefined (Scopes).
  void enter(const std::vector<std::string>& fresh) {
    frames_.emplace_back();
    for (const std::string& n : fresh) frames_.back().emplace_back(n, undef(quote(n) + " is undefined"));
  }

  void assign(const std::string& n, Value v) {
    for (auto& [k, old] : frames_.back())
      if (k == n) {
        old = std::move(v);
        return;
      }
    frames_.back().emplace_back(n, std::move(v));
  }

  void bind_target(const Target& tg, const Value& v, int line) {
    if (!tg.attr.empty()) {
      const Value ns = lookup(tg.names[0]);
      if (ns.t != T::Namespace) fail(line, "cannot assign attribute on non-namespace object");
      ns.d->depth = std::max(ns.d->depth, 1 + depth_of(v));
      if (ns.d->depth > kMaxValueDepth) fail(line, "value nested too deeply");
      ns.d->set(tg.attr, v);
      return;
    }
    if (!tg.tuple) {
      assign(tg.names[0], v);
      return;
    }
    const std::vector<Value> items = iterate(v, line);
    if (items.size() < tg.names.size())
      fail(line, "not enough values to unpack (expected " + std::to_string(tg.names.size()) + ", got " +
                     std::to_string(items.size()) + ")");
    if (items.size() > tg.names.size())
      fail(line, "too many values to unpack (expected " + std::to_string(tg.names.size()) + ")");
    for (size_t k = 0; k < items.size(); ++k) assign(tg.names[k], items[k]);
  }

  Flow exec(const Body& body) {
    for (const auto& sp : body) {
      const Stmt& st = *sp;
      switch (st.k) {
        case S::Text:
          *out_ += st.text;
          break;
        case S::Print:
          *out_ += to_str(eval(*st.e), st.line);
          break;
        case S::If:
          for (const auto& [cond, branch] : st.branches) {
            if (cond && !truthy(eval(*cond))) continue;
            const Flow f = exec(branch);
            if (f != Flow::Normal) return f;
            break;
          }
          break;
        case S::For:
          if (const Flow f = exec_for(st); f != Flow::Normal) return f;
          break;
        case S::Set:
          bind_target(st.target, eval(*st.e), st.line);
          break;
        case S::SetBlock: {
          std::string captured;
          std::string* saved = std::exchange(out_, &captured);
          enter(st.fresh);
          exec(st.body);
          frames_.pop_back();
          out_ = saved;
          Value v = str(std::move(captured));
          for (const auto& f : st.filters) v = apply_filter(f->name, v, eval_args(*f), f->line);
          bind_target(st.target, v, st.line);
          break;
        }
        case S::Break: return Flow::Break;
        case S::Continue: return Flow::Continue;
        case S::Scope:
          enter(st.fresh);
          exec(st.body);
          frames_.pop_back();
          break;
      }
    }
    return Flow::Normal;
  }

  Flow exec_for(const Stmt& st) {
    std::vector<Value> items = iterate(eval(*st.e), st.line);
    if (st.cond) {  // `for x in xs if cond`: filtered first, so loop.length counts what is kept
      std::vector<Value> kept;
      for (Value& item : items) {
        frames_.emplace_back();
        bind_target(st.target, item, st.line);
        const bool keep = truthy(eval(*st.cond));
        frames_.pop_back();
        if (keep) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      if (st.orelse.empty()) return Flow::Normal;
      enter(st.fresh_else);
      const Flow f = exec(st.orelse);
      frames_.pop_back();
      return f;
    }
    const int64_t n = int64_t(items.size());
    for (int64_t k = 0; k < n; ++k) {
      enter(st.fresh);
      bind_target(st.target, items[size_t(k)], st.line);
      auto loop = std::make_shared<DictData>();
      loop->loop = true;
      auto& l = loop->items;
      l.emplace_back("index", integer(k + 1));
      l.emplace_back("index0", integer(k));
      l.emplace_back("revindex", integer(n - k));
      l.emplace_back("revindex0", integer(n - k - 1));
      l.emplace_back("first", boolean(k == 0));
      l.emplace_back("last", boolean(k == n - 1));
      l.emplace_back("length", integer(n));
      l.emplace_back("previtem", k > 0 ? items[size_t(k - 1)] : undef("there is no previous item"));
      l.emplace_back("nextitem", k + 1 < n ? items[size_t(k + 1)] : undef("there is no next item"));
      l.emplace_back("depth", integer(1));
      l.emplace_back("depth0", integer(0));
      l.emplace_back("cycle", func("loop.cycle", integer(k)));
      assign("loop", dict(std::move(loop)));
      const Flow f = exec(st.body);
      frames_.pop_back();
      if (f == Flow::Break) break;
    }
    return Flow::Normal;
  }

  Args eval_args(const Expr& e) {
    Args a;
    for (size_t k = 1; k < e.a.size(); ++k) a.pos.push_back(eval(*e.a[k]));
    for (const auto& [key, x] : e.kw) a.kw.emplace_back(key, eval(*x));
    return a;
  }

  Value eval(const Expr& e) {
    switch (e.k) {
      case E::Const: return e.v;
      case E::Name: return lookup(e.name);
      case E::List: case E::Tuple: {
        std::vector<Value> items;
        for (const auto& x : e.a) items.push_back(eval(*x));
        return list(std::move(items), e.k == E::Tuple ? LK::Tuple : LK::List);
      }
      case E::Dict: {
        auto d = std::make_shared<DictData>();
        for (size_t k = 0; k + 1 < e.a.size(); k += 2) {
          const Value key = eval(*e.a[k]);
          if (key.t != T::Str) fail(e.a[k]->line, "unsupported dict key of type '" + type_name(key) + "' (only strings)");
          d->set(key.str(), eval(*e.a[k + 1]));
        }
        return dict(std::move(d));
      }
      case E::Attr: return get_attr(eval(*e.a[0]), e.name, e.line);
      case E::Item: {
        const Value obj = eval(*e.a[0]);
        return get_item(obj, eval(*e.a[1]), e.line);
      }
      case E::Slice: {
        const Value obj = eval(*e.a[0]);
        Value parts[3];
        const Value* ptrs[3] = {nullptr, nullptr, nullptr};
        for (int k = 0; k < 3; ++k)
          if (e.a[size_t(k) + 1]) {
            parts[k] = eval(*e.a[size_t(k) + 1]);
            ptrs[k] = &parts[k];
          }
        return slice(obj, ptrs, e.line);
      }
      case E::Call: {
        const Value callee = eval(*e.a[0]);
        const Args a = eval_args(e);
        if (callee.t == T::Func) return call_func(*callee.fn, a, e.line, &namespaces_);
        check_defined(callee, e.line);
        fail(e.line, "'" + type_name(callee) + "' object is not callable");
      }
      case E::Filter: {
        const Value subject = eval(*e.a[0]);
        return apply_filter(e.name, subject, eval_args(e), e.line);
      }
      case E::Test: {
        const Value subject = eval(*e.a[0]);
        return boolean(apply_test(e.name, subject, eval_args(e), e.line) != e.negated);
      }
      case E::Neg: case E::Pos: {
        const Value v = eval(*e.a[0]);
        check_defined(v, e.line);
        const bool neg = e.k == E::Neg;
        if (is_intlike(v)) {
          if (neg && ival(v) == std::numeric_limits<int64_t>::min()) overflow(e.line);
          return integer(neg ? -ival(v) : ival(v));
        }
        if (v.t == T::Float) return real(neg ? -v.f : v.f);
        fail(e.line, std::string("bad operand type for unary ") + (neg ? "-" : "+") + ": '" + type_name(v) + "'");
      }
      case E::Not: return boolean(!truthy(eval(*e.a[0])));
      case E::Bin: {
        const Value l = eval(*e.a[0]);
        return binop(e.name, l, eval(*e.a[1]), e.line);
      }
      case E::And: {
        Value l = eval(*e.a[0]);
        return truthy(l) ? eval(*e.a[1]) : l;
      }
      case E::Or: {
        Value l = eval(*e.a[0]);
        return truthy(l) ? l : eval(*e.a[1]);
      }
      case E::Compare: {
        Value left = eval(*e.a[0]);
        for (size_t k = 0; k < e.ops.size(); ++k) {
          Value right = eval(*e.a[k + 1]);
          if (!compare(e.ops[k], left, right, e.line)) return boolean(false);
          left = std::move(right);
        }
        return boolean(true);
      }
      case E::Cond:
        if (truthy(eval(*e.a[0]))) return eval(*e.a[1]);
        if (e.a[2]) return eval(*e.a[2]);
        return undef("the inline if-expression on line " + std::to_string(e.line) +
                     " evaluated to false and no else section was defined");
    }
    fail(e.line, "unknown expression");
  }
};

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

Error error_of(const std::string& name, const Failure& f) {
  if (f.raised) return Error(name + ": raise_exception: " + one_line(f.what));
  if (f.line <= 0) return Error(name + ": " + one_line(f.what));
  return Error(name + ": line " + std::to_string(f.line) + ": " + one_line(f.what));
}

template <class J>
Value from_json(const J& j, int depth) {
  if (depth > 256) fail(0, "the context is nested too deeply");
  using vt = nlohmann::json::value_t;
  switch (j.type()) {
    case vt::null: return none();
    case vt::boolean: return boolean(j.template get<bool>());
    case vt::number_integer: return integer(j.template get<int64_t>());
    case vt::number_unsigned: {
      const uint64_t u = j.template get<uint64_t>();
      return u > uint64_t(std::numeric_limits<int64_t>::max()) ? real(double(u)) : integer(int64_t(u));
    }
    case vt::number_float: return real(j.template get<double>());
    case vt::string: return str(j.template get<std::string>());
    case vt::array: {
      std::vector<Value> items;
      for (const auto& x : j) items.push_back(from_json(x, depth + 1));
      return list(std::move(items));
    }
    case vt::object: {
      auto d = std::make_shared<DictData>();
      for (auto it = j.begin(); it != j.end(); ++it) d->set(it.key(), from_json(it.value(), depth + 1));
      return dict(std::move(d));
    }
    default: fail(0, "unsupported JSON value in the context");
  }
}

}  // namespace

struct Template::Impl {
  std::string name;
  Body body;
  std::vector<std::string> fresh;  // names that start undefined at the top level (Scopes)
};

namespace {

template <class J>
std::string render_with(const Template::Impl& impl, const J& context) {
  if (!context.is_object()) throw Error(impl.name + ": the context must be a JSON object");
  try {
    std::unordered_map<std::string, Value> vars;
    for (auto it = context.begin(); it != context.end(); ++it) vars[it.key()] = from_json(it.value(), 0);
    return Renderer(vars).run(impl.body, impl.fresh);
  } catch (const Failure& f) {
    throw error_of(impl.name, f);
  }
}

}  // namespace

Template::Template(const std::string& source, const std::string& name) {
  auto impl = std::make_shared<Impl>();
  impl->name = name;
  try {
    impl->body = Parser(Lexer(source).run()).parse();
    Scopes().frame(impl->body, nullptr, {}, impl->fresh);
  } catch (const Failure& f) {
    throw error_of(name, f);
  }
  impl_ = std::move(impl);
}

std::string Template::render(const nlohmann::json& context) const { return render_with(*impl_, context); }
std::string Template::render(const nlohmann::ordered_json& context) const { return render_with(*impl_, context); }

}  // namespace vkf::jinja
