// The Jinja subset of chat templates (src/text/jinja.hpp) and chat-template rendering
// (src/text/chat_template.hpp): one case per feature and per refusal, with its
// message. Expected texts are what jinja2 3.1 gives in transformers' environment
// (tests/jinja_check.py compares the two byte for byte on many more cases).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ctime>
#include <string>

#include "text/chat_template.hpp"
#include "text/jinja.hpp"
#include "vkformer/error.hpp"

namespace vkf::test {
namespace {

using nlohmann::ordered_json;

ordered_json context() {
  return ordered_json::parse(R"({
    "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "Hi there"},
                 {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "  bye  "}],
    "s": "  Hello, World  ", "n": 7, "f": 2.5, "l": [3, 1, 2], "e": "", "nothing": null, "t": true,
    "d": {"b": 1, "a": [1, 2.0, null, true, "x'y"]}, "u": "h\u00e9llo \u03a3\u0391\u03a3 \u00df"
  })");
}

std::string render(const std::string& source, const ordered_json& ctx = context()) {
  return jinja::Template(source).render(ctx);
}

// The one-line message of a template refused when parsed or rendered.
std::string error(const std::string& source, const ordered_json& ctx = context()) {
  try {
    render(source, ctx);
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    return what;
  }
  return "(rendered)";
}

TEST(Jinja, PrintsValuesAsPython) {
  EXPECT_EQ(render("plain text"), "plain text");
  EXPECT_EQ(render("{{ s }}|{{ n }}|{{ f }}|{{ nothing }}|{{ t }}|{{ e }}|{{ undefined_name }}|"),
            "  Hello, World  |7|2.5|None|True|||");
  EXPECT_EQ(render("{{ l }} {{ d }} {{ (1,) }} {{ (1, 'a') }} {{ [] }} {{ {} }}"),
            "[3, 1, 2] {'b': 1, 'a': [1, 2.0, None, True, \"x'y\"]} (1,) (1, 'a') [] {}");
  EXPECT_EQ(render("{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1.5e-7 }} {{ 0.0001 }} {{ -0.0 }} {{ 1e300 * 1e10 }}"),
            "1.0 0.30000000000000004 1e+16 1.5e-07 0.0001 -0.0 inf");
  EXPECT_EQ(render("{{ ['tab\\t', 'nl\\n', '\\x01', '\\u200b', '\\u00a0', '\u00e9', 'bs\\\\'] }}"),
            "['tab\\t', 'nl\\n', '\\x01', '\\u200b', '\\xa0', '\u00e9', 'bs\\\\']");
  EXPECT_EQ(render("{{ d.items() }} {{ d.keys() }} {{ range(3) }} {{ range(1, 9, 3) }}"),
            "dict_items([('b', 1), ('a', [1, 2.0, None, True, \"x'y\"])]) dict_keys(['b', 'a']) range(0, 3) range(1, 9, 3)");
  EXPECT_EQ(render("{{ 'a' 'b' }} {{ \"\\x41\\u00e9\\U0001F600\\n\\q\\101\" }} {{ \"it's\" }}"),
            "ab A\u00e9\U0001F600\n\\qA it's");
  EXPECT_EQ(render("{{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b11 }} {{ 1e3 }} {{ 2.5E-1 }}"), "1000 31 15 3 1000.0 0.25");
}

TEST(Jinja, WhitespaceControlTrimBlocksLstripBlocks) {
  EXPECT_EQ(render("a\n  {% if t %}\n  b\n  {% endif %}\nc\n"), "a\n  b\nc");  // one trailing newline dropped
  EXPECT_EQ(render("a  {%- if t -%}  b  {%- endif -%}  c"), "abc");
  EXPECT_EQ(render("a\n  {{- 'x' -}}\n  b"), "axb");
  EXPECT_EQ(render("x {# comment #}\n  {# own line #}\ny {#- strip -#} z"), "x yz");
  EXPECT_EQ(render("  {%+ if t %}kept{% endif +%}\nnext"), "  kept\nnext");
  EXPECT_EQ(render("{{ n }}\n    {% if t %}y{% endif %}|{{ n }}    {% if t %}y{% endif %}"), "7\ny|7    y");
  EXPECT_EQ(render("windows\r\nline\r\n  {% if t %}\r\nx\r\n  {% endif %}\r\n"), "windows\nline\nx\n");
  EXPECT_EQ(render("trailing\n\n"), "trailing\n");
}

TEST(Jinja, ForLoops) {
  EXPECT_EQ(render("{% for i in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                   "{{ loop.first }}{{ loop.last }}{{ loop.length }}/{{ loop.previtem }}/{{ loop.nextitem }}/"
                   "{{ loop.cycle('a', 'b') }} {% endfor %}"),
            "1032TrueFalse3//1/a 2121FalseFalse3/3/2/b 3210FalseTrue3/1//a ");
  EXPECT_EQ(render("{% for i in range(10) if i is odd %}{{ i }}:{{ loop.index }}/{{ loop.length }}"
                   "{{ ',' if not loop.last }}{% endfor %}"),
            "1:1/5,3:2/5,5:3/5,7:4/5,9:5/5");
  EXPECT_EQ(render("{% for i in [] %}x{% else %}empty{% endfor %} {% for i in l if i > 5 %}x{% else %}none{% endfor %}"),
            "empty none");
  EXPECT_EQ(render("{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}"
                   "{% endif %}{{ i }}{% endfor %}"),
            "0134");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v is number }};{% endfor %} {% for k in d %}{{ k }}{% endfor %} "
                   "{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %} {% for c in 'h\u00e9j' %}{{ c }}.{% endfor %}"),
            "b=True;a=False; ba 37 h.\u00e9.j.");
  EXPECT_EQ(error("{% for x in n %}{% endfor %}"), "chat_template: line 1: 'int' object is not iterable");
}

TEST(Jinja, IfAndSetScoping) {
  EXPECT_EQ(render("{% if n > 10 %}big{% elif n > 5 %}medium{% else %}small{% endif %}"), "medium");
  EXPECT_EQ(render("{% if undefined_name %}x{% elif nothing %}y{% else %}z{% endif %}"), "z");
  // A set inside a loop lasts for its iteration; one inside an if is the frame's.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in l %}{{ x }}{% set x = x + 10 %}{{ x }},{% endfor %}{{ x }}"),
            "111,111,111,1");
  EXPECT_EQ(render("{% if t %}{% set z = 5 %}{% endif %}{{ z }}"), "5");
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ a }}{{ b }} {% set (c, e2) = [3, 4] %}{{ c }}{{ e2 }}"), "12 34");
  EXPECT_EQ(render("{% set ns = namespace(total=1, found=false) %}{% for i in l %}{% set ns.total = ns.total * i %}"
                   "{% endfor %}{{ ns.total }} {{ ns }}"),
            "6 <Namespace {'total': 6, 'found': False}>");
  EXPECT_EQ(render("{% set captured %}  x {{ n }} {% endset %}[{{ captured }}] {% set up | upper | trim %} a {% endset %}[{{ up }}]"),
            "[  x 7 ] [A]");
  // jinja2 decides scopes statically: n is stored at the top level before any read
  // there, so the loop (run before the set) sees it undefined, not the context's 7.
  EXPECT_EQ(render("{% for i in [1] %}[{{ n }}]{% endfor %}{% set n = 5 %}{{ n }}"), "[]5");
  EXPECT_EQ(render("{{ n }}{% set n = 5 %}{{ n }}"), "75");
  EXPECT_EQ(error("{% set x = 1 %}{% set x.y = 2 %}"), "chat_template: line 1: cannot assign attribute on non-namespace object");
  EXPECT_EQ(error("{% set a, b = [1] %}"), "chat_template: line 1: not enough values to unpack (expected 2, got 1)");
}

TEST(Jinja, Expressions) {
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 6 / 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }}"),
            "3 -4 2 3.5 2.0 1024 0.5 64 4");
  EXPECT_EQ(render("{{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ n + f }} {{ t + 1 }} {{ 'ab' * 2 }} {{ [1] * 2 }} {{ [1] + [2] }}"),
            "3.0 0.5 9.5 2 abab [1, 1] [1, 2]");
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ nothing ~ t ~ 2.5 ~ undefined_name }} {{ 'x' + 'y' }}"), "a1NoneTrue2.5 xy");
  EXPECT_EQ(render("{{ 1 == 1.0 }} {{ t == 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 5 }}"),
            "True True True True True False");
  EXPECT_EQ(render("{{ 'ell' in s }} {{ 3 in l }} {{ 'b' in d }} {{ 'z' not in d }} {{ 1 in undefined_name }}"),
            "True True True True False");
  EXPECT_EQ(render("{{ t and 'yes' }} {{ e or 'fallback' }} {{ not e }} {{ 'a' if t else 'b' }} [{{ 'a' if not t }}]"),
            "yes fallback True a []");
  EXPECT_EQ(render("{{ messages[1].content }} {{ messages[1]['role'] }} {{ messages[-1].content }} {{ messages.0.role }} "
                   "{{ d['a'][1] }} {{ d.get('zz') }} {{ d.get('zz', 'x') }} {{ messages[9] }}|"),
            "Hi there user   bye   system 2.0 None x |");
  EXPECT_EQ(render("{{ l[1:] }} {{ l[:-1] }} {{ l[::-1] }} {{ l[::2] }} {{ u[1:4] }} {{ u[::-1] }} {{ messages[1:] | length }}"),
            "[1, 2] [3, 1] [2, 1, 3] [3, 2] \u00e9ll \u00df \u03a3\u0391\u03a3 oll\u00e9h 3");
  // Filters bind tighter than the operators.
  EXPECT_EQ(render("{{ '<' + messages[1].content | upper + '>' }} {{ l | length > 2 }}"), "<HI THERE> True");
}

TEST(Jinja, Tests) {
  EXPECT_EQ(render("{{ s is string }} {{ n is number }} {{ t is number }} {{ t is integer }} {{ f is float }} "
                   "{{ d is mapping }} {{ l is mapping }} {{ l is sequence }} {{ s is iterable }} {{ n is iterable }}"),
            "True True True False True True False True True False");
  EXPECT_EQ(render("{{ nothing is none }} {{ t is true }} {{ 1 is true }} {{ t is boolean }} {{ undefined_name is defined }} "
                   "{{ undefined_name is undefined }} {{ n is not defined }} {{ d.zz is defined }} {{ n is odd }} "
                   "{{ n is divisibleby 7 }} {{ n is eq 7 }} {{ n is equalto(7) }} {{ n is gt 8 }} {{ 2 is in l }}"),
            "True True False True False True False False True True True True False True");
}

TEST(Jinja, Filters) {
  EXPECT_EQ(render("[{{ s | trim }}] [{{ 'xxaxx' | trim('x') }}] {{ s | upper }} {{ u | lower }} {{ u | upper }} "
                   "{{ 'hELLO wORLD-foo(bar' | title }} {{ 'hello World' | capitalize }}"),
            "[Hello, World] [a]   HELLO, WORLD   h\u00e9llo \u03c3\u03b1\u03c2 \u00df H\u00c9LLO \u03a3\u0391\u03a3 SS "
            "Hello World-Foo(Bar Hello world");
  EXPECT_EQ(render("{{ s | length }} {{ u | length }} {{ l | count }} {{ d | length }} {{ undefined_name | length }}"),
            "16 11 3 2 0");
  EXPECT_EQ(render("{{ d | tojson }} {{ u | tojson }} {{ 'q\"\\\\\\n\\x01' | tojson }} {{ l | tojson(indent=2) }}"),
            "{\"b\": 1, \"a\": [1, 2.0, null, true, \"x'y\"]} \"h\u00e9llo \u03a3\u0391\u03a3 \u00df\" \"q\\\"\\\\\\n\\u0001\" "
            "[\n  3,\n  1,\n  2\n]");
  EXPECT_EQ(render("{{ d | tojson(sort_keys=true) }} {{ l | tojson(separators=(',', ':')) }} {{ '\u00e9' | tojson(ensure_ascii=true) }}"),
            "{\"a\": [1, 2.0, null, true, \"x'y\"], \"b\": 1} [3,1,2] \"\\u00e9\"");
  EXPECT_EQ(render("{{ l | join }} {{ l | join(', ') }} {{ messages | join('|', attribute='role') }}"),
            "312 3, 1, 2 system|user|assistant|user");
  EXPECT_EQ(render("{{ s | replace('l', 'L') }}|{{ s | replace('l', 'L', 1) }}|{{ 'ab' | replace('', '-') }}"),
            "  HeLLo, WorLd  |  HeLlo, World  |-a-b-");
  EXPECT_EQ(render("{{ undefined_name | default('d') }} {{ e | default('d') }} {{ e | default('d', true) }} {{ nothing | d('x') }}"),
            "d  d None");
  EXPECT_EQ(render("{{ l | first }} {{ l | last }} {{ s | first }} {{ d | first }} [{{ [] | first }}] {{ l | list }} {{ 'ab' | list }}"),
            "3 2   b [] [3, 1, 2] ['a', 'b']");
  EXPECT_EQ(render("{{ n | string }} {{ nothing | string }} {{ '42' | int }} {{ '12.7' | int }} {{ 'x' | int(5) }} "
                   "{{ f | int }} {{ '2.5' | float }} {{ n | float }} {{ 'x' | float }}"),
            "7 None 42 12 5 2 2.5 7.0 0.0");
  EXPECT_EQ(render("{% for k, v in d | items %}{{ k }};{% endfor %}"), "b;a;");
  EXPECT_EQ(render("{{ messages | selectattr('role', 'equalto', 'user') | list | length }} "
                   "{{ messages | rejectattr('role', 'eq', 'user') | map(attribute='content') | list }} "
                   "{{ l | select('odd') | list }} {{ l | reject('odd') | list }} {{ l | map('string') | join('-') }}"),
            "2 ['sys', 'Hello'] [3, 1] [2] 3-1-2");
  EXPECT_EQ(render("{% if [] | selectattr('x') %}generators are true{% endif %} {{ l | reverse | list }} {{ -3 | abs }}"),
            "generators are true [2, 1, 3] 3");
}

TEST(Jinja, Methods) {
  EXPECT_EQ(render("[{{ s.strip() }}] [{{ s.lstrip() }}] [{{ 'xxaxx'.rstrip('x') }}] {{ s.strip().startswith('Hello') }} "
                   "{{ s.endswith(('x', '  ')) }}"),
            "[Hello, World] [Hello, World  ] [xxa] True True");
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }} {{ ' a  b \\n c '.split() }} {{ 'a b c'.split(' ', 1) }}"),
            "['a', 'b', '', 'c'] ['a', 'b', 'c'] ['a', 'b c']");
  EXPECT_EQ(render("{{ s.upper() }} {{ 'hello world'.title() }} {{ u.title() }} {{ 'ab'.replace('b', 'c') }}"),
            "  HELLO, WORLD   Hello World H\u00e9llo \u03a3\u03b1\u03c2 Ss ac");
  EXPECT_EQ(render("{{ '{} and {}'.format('a', 1) }} {{ '{x}'.format(x=none) }} {{ ', '.join(['a', 'b']) }} {{ u.find('l') }}"),
            "a and 1 None a, b 2");
  EXPECT_EQ(render("{% for k, v in messages[0].items() %}{{ k }}{% endfor %} {{ d.keys() | list }} {{ d.values() | list | length }}"),
            "rolecontent ['b', 'a'] 2");
}

TEST(Jinja, Globals) {
  EXPECT_EQ(render("{{ range(3) | list }} {{ range(5, 0, -2) | list }} {{ dict(a=1) }} {{ namespace(a=1).a }}"),
            "[0, 1, 2] [5, 3, 1] {'a': 1} 1");
  EXPECT_EQ(error("{{ raise_exception('Roles must alternate') }}"), "chat_template: raise_exception: Roles must alternate");
  EXPECT_EQ(error("{{ raise_exception('two\\nlines') }}"), "chat_template: raise_exception: two lines");
  char year[8];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::strftime(year, sizeof year, "%Y", &tm);
  const std::string got = render("{{ strftime_now('%Y') }}|{{ strftime_now('%%') }}");
  EXPECT_TRUE(got == std::string(year) + "|%" || got.size() == 6) << got;  // unless the year turned meanwhile
}

TEST(Jinja, UndefinedAsJinja2Default) {
  EXPECT_EQ(render("[{{ missing }}]{% if missing %}x{% endif %}{{ missing is defined }} {{ missing | length }} "
                   "{{ missing | list }} {% for x in missing %}x{% endfor %}{{ d.missing }}{{ none.x }}"),
            "[]False 0 [] ");
  // Attributes and items of an undefined value, arithmetic and ordering are errors, as in jinja2.
  EXPECT_EQ(error("line one\n{{ missing.attr }}"), "chat_template: line 2: 'missing' is undefined");
  EXPECT_EQ(error("{{ missing['k'] }}"), "chat_template: line 1: 'missing' is undefined");
  EXPECT_EQ(error("{{ missing + 1 }}"), "chat_template: line 1: 'missing' is undefined");
  EXPECT_EQ(error("{{ d.zz.yy }}"), "chat_template: line 1: 'dict object' has no attribute 'zz'");
  EXPECT_EQ(error("{{ missing | tojson }}"), "chat_template: line 1: tojson: object of type Undefined is not JSON serializable");
}

TEST(Jinja, RuntimeErrorsNameTheLine) {
  EXPECT_EQ(error("a\nb\n{{ 1 / 0 }}"), "chat_template: line 3: division by zero");
  EXPECT_EQ(error("{{ n + 'x' }}"), "chat_template: line 1: unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(error("{{ n < 'a' }}"), "chat_template: line 1: '<' not supported between instances of 'int' and 'str'");
  EXPECT_EQ(error("{{ 1 in 'abc' }}"), "chat_template: line 1: 'in <string>' requires string as left operand, not int");
  EXPECT_EQ(error("{{ n | length }}"), "chat_template: line 1: object of type 'int' has no len()");
  EXPECT_EQ(error("{{ messages.append(1) }}"),
            "chat_template: line 1: unsupported list method 'append' (the sandbox allows no changes)");
  EXPECT_EQ(error("{{ l[1:2:0] }}"), "chat_template: line 1: slice step cannot be zero");
  EXPECT_EQ(error("{{ range(200000) | length }}"), "chat_template: line 1: range too big: the sandbox allows at most 100000 items");
  EXPECT_EQ(error("{{ messages | selectattr('role') }}"),
            "chat_template: line 1: cannot print a generator (jinja2 prints its address): add |list");
}

TEST(Jinja, SyntaxErrorsAtConstruction) {
  auto parse_error = [](const std::string& source) -> std::string {
    try {
      jinja::Template t(source, "my_template");
    } catch (const Error& e) {
      return e.what();
    }
    return "(parsed)";
  };
  EXPECT_EQ(parse_error("ok\n{% if %}x{% endif %}"), "my_template: line 2: expected an expression, got end of statement block");
  EXPECT_EQ(parse_error("{% for m in messages %}\nx"),
            "my_template: line 2: unexpected end of template: 'for' of line 1 is not closed (expected 'endfor' or 'else')");
  EXPECT_EQ(parse_error("{% endif %}"), "my_template: line 1: unexpected 'endif'");
  EXPECT_EQ(parse_error("{{ 'unterminated }}"), "my_template: line 1: unterminated string");
  EXPECT_EQ(parse_error("{{ 1 + }}"), "my_template: line 1: unexpected end of print statement");
  EXPECT_EQ(parse_error("{{ ) }}"), "my_template: line 1: unexpected ')'");
  EXPECT_EQ(parse_error("{# open"), "my_template: line 1: missing end of comment tag '#}'");
  EXPECT_EQ(parse_error("{{ x"), "my_template: line 1: unexpected end of template: '{{' is never closed");
  EXPECT_EQ(parse_error("{% break %}"), "my_template: line 1: 'break' outside of a for loop");
  EXPECT_EQ(parse_error("{% frobnicate %}"), "my_template: line 1: unknown tag 'frobnicate'");
  EXPECT_EQ(parse_error("{{ a $ b }}"), "my_template: line 1: unexpected character '$'");
}

TEST(Jinja, RefusesWhatItDoesNotImplement) {
  const std::pair<const char*, const char*> cases[] = {
      {"{% macro m() %}x{% endmacro %}", "unsupported Jinja feature 'macro'"},
      {"{% call m() %}x{% endcall %}", "unsupported Jinja feature 'call'"},
      {"{% filter upper %}x{% endfilter %}", "unsupported Jinja feature 'filter'"},
      {"{% include 'x' %}", "unsupported Jinja feature 'include'"},
      {"{% extends 'x' %}", "unsupported Jinja feature 'extends'"},
      {"{% import 'x' as y %}", "unsupported Jinja feature 'import'"},
      {"{% from 'x' import y %}", "unsupported Jinja feature 'from'"},
      {"{% block b %}x{% endblock %}", "unsupported Jinja feature 'block'"},
      {"{% with a = 1 %}{% endwith %}", "unsupported Jinja feature 'with'"},
      {"{% raw %}{{ x }}{% endraw %}", "unsupported Jinja feature 'raw'"},
      {"{% for x in l recursive %}{% endfor %}", "unsupported Jinja feature 'recursive' (recursive for loops)"},
      {"{{ 'a b' | wordcount }}", "unsupported filter 'wordcount'"},
      {"{{ 'x' | frobnicate }}", "unknown filter 'frobnicate'"},
      {"{{ x is frobnicated }}", "unknown test 'frobnicated'"},
      {"{{ cycler(1) }}", "unsupported Jinja function 'cycler'"},
      {"{{ my_macro(1) }}", "unknown function 'my_macro'"},
  };
  for (const auto& [source, what] : cases) {
    try {
      jinja::Template t(source);
      ADD_FAILURE() << source << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), std::string("chat_template: line 1: ") + what) << source;
    }
  }
  // Methods depend on the value: refused when called.
  EXPECT_EQ(error("{{ 'x'.zfill(3) }}"), "chat_template: line 1: unsupported string method 'zfill'");
  EXPECT_EQ(error("{{ '%s' % 1 }}"), "chat_template: line 1: unsupported printf-style string formatting with '%'");
  EXPECT_EQ(error("{{ '{:>5}'.format(1) }}"), "chat_template: line 1: format(): format specifications are not supported");
  EXPECT_EQ(error("{% for i in l %}{{ loop.changed(i) }}{% endfor %}"), "chat_template: line 1: unsupported loop.changed()");
}

TEST(Jinja, HostileTemplatesAreBounded) {
  std::string sum = "{{ 1";
  for (int k = 0; k < 100000; ++k) sum += "+1";
  EXPECT_EQ(error(sum + " }}"), "chat_template: line 1: expression nested too deeply");
  std::string ifs;
  for (int k = 0; k < 1000; ++k) ifs += "{% if t %}";
  EXPECT_EQ(error(ifs), "chat_template: line 1: blocks nested too deeply");
  EXPECT_EQ(error("{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}"),
            "chat_template: line 1: value nested too deeply");
  // A namespace holding itself: a cycle, emptied when the render ends (ASan's leak check).
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me.me is defined }}"), "True");
  EXPECT_EQ(error("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"), "chat_template: line 1: value nested too deeply to print");
}

TEST(Jinja, ParseOnceRenderMany) {
  const jinja::Template t("{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}");
  const jinja::Template copy = t;
  EXPECT_EQ(t.render(context()), "system:sys;user:Hi there;assistant:Hello;user:  bye  ;");
  EXPECT_EQ(copy.render(ordered_json{{"messages", ordered_json::array()}}), "");
  // nlohmann::json sorts keys; ordered_json keeps them (as Python's dicts do).
  const jinja::Template j("{{ m | tojson }}");
  EXPECT_EQ(j.render(nlohmann::json{{"m", {{"role", "user"}, {"content", "x"}}}}), "{\"content\": \"x\", \"role\": \"user\"}");
  EXPECT_EQ(j.render(ordered_json{{"m", {{"role", "user"}, {"content", "x"}}}}), "{\"role\": \"user\", \"content\": \"x\"}");
  EXPECT_THROW(t.render(nlohmann::json::array()), Error);
}

// ---- chat templates

const char* const kChatML =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

TEST(ChatTemplate, RendersChatML) {
  const std::vector<ChatMessage> messages = {{"user", "Hello!"}};
  EXPECT_EQ(render_chat(kChatML, messages, true, {{"eos_token", "<|im_end|>"}}),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(render_chat(kChatML, {{"system", "Be brief."}, {"user", "Hi"}}, false, nlohmann::json()),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

// What transformers 4.44.2's apply_chat_template(..., tokenize=False) returned for a
// tokenizer with bos_token=AddedToken("<s>"), eos_token="</s>", unk_token="<unk>",
// pad_token=None and additional_special_tokens=["<x>", "<y>"].
TEST(ChatTemplate, PassesWhatTransformersPasses) {
  const nlohmann::json tokens = nlohmann::json::parse(R"({
    "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false, "normalized": false,
                  "rstrip": false, "single_word": false, "special": true},
    "eos_token": "</s>", "unk_token": "<unk>", "pad_token": null, "additional_special_tokens": ["<x>", "<y>"]})");
  const std::vector<ChatMessage> messages = {{"system", "Be brief."}, {"user", "Hi \U0001F600"}};
  EXPECT_EQ(render_chat("{{ bos_token }}|{{ eos_token }}|{{ unk_token }}|{{ pad_token is defined }}|"
                        "{{ additional_special_tokens }}|{{ tools }}|{{ documents }}|{{ messages | tojson }}|"
                        "{{ add_generation_prompt }}",
                        messages, false, tokens),
            "<s>|</s>|<unk>|False|['<x>', '<y>']|None|None|[{\"role\": \"system\", \"content\": \"Be brief.\"}, "
            "{\"role\": \"user\", \"content\": \"Hi \U0001F600\"}]|False");
  EXPECT_EQ(render_chat("{% for m in messages %}{% if m.role == 'user' and m.content == '' %}"
                        "{{ raise_exception('empty user message') }}{% endif %}{% endfor %}ok",
                        {{"user", "x"}}, true, tokens),
            "ok");
  try {
    render_chat("{% for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}"
                "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
                "{% endif %}{% endfor %}",
                {{"user", "a"}, {"user", "b"}}, false, tokens);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "chat_template: raise_exception: Conversation roles must alternate user/assistant/user/assistant/...");
  }
}

TEST(ChatTemplate, TemplateOfTokenizerConfig) {
  EXPECT_EQ(chat_template_of(nlohmann::json::parse(R"({"chat_template": "{{ x }}"})")), "{{ x }}");
  EXPECT_EQ(chat_template_of(nlohmann::json::parse(R"({"bos_token": "<s>"})")), "");
  EXPECT_EQ(chat_template_of(nlohmann::json::parse(R"({"chat_template": null})")), "");
  EXPECT_EQ(chat_template_of(nlohmann::json::parse(
                R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})")),
            "D");
  try {
    chat_template_of(nlohmann::json::parse(R"({"chat_template": [{"name": "rag", "template": "R"}, {"name": "tool_use", "template": "T"}]})"));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "tokenizer_config.json: chat_template: several templates and none named \"default\" (rag, tool_use)");
  }
  EXPECT_THROW(chat_template_of(nlohmann::json::parse(R"({"chat_template": 5})")), Error);
}

TEST(ChatTemplate, SpecialTokensOfTokenizerConfig) {
  const nlohmann::json config = nlohmann::json::parse(R"({
    "added_tokens_decoder": {}, "bos_token": {"__type": "AddedToken", "content": "<|begin|>"},
    "eos_token": "<|end|>", "pad_token": null, "unk_token": "", "model_max_length": 8192,
    "additional_special_tokens": [{"content": "<a>"}, "<b>"]})");
  EXPECT_EQ(special_tokens_of(config, nlohmann::json{{"bos_token", "ignored"}}),
            nlohmann::json::parse(R"({"bos_token": "<|begin|>", "eos_token": "<|end|>", "additional_special_tokens": ["<a>", "<b>"]})"));
  // Without added_tokens_decoder (older files) special_tokens_map.json wins.
  const nlohmann::json legacy = nlohmann::json::parse(R"({"bos_token": "<s>", "eos_token": "</s>"})");
  EXPECT_EQ(special_tokens_of(legacy, nlohmann::json{{"eos_token", {{"content", "<eos>"}}}, {"pad_token", "<pad>"}}),
            nlohmann::json::parse(R"({"bos_token": "<s>", "eos_token": "<eos>", "pad_token": "<pad>"})"));
}

}  // namespace
}  // namespace vkf::test
