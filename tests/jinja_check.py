#!/usr/bin/env python3
"""vkformer's Jinja subset (src/text/jinja.cpp, through tests/jinja_render) against
jinja2 itself, configured as transformers' apply_chat_template configures it:
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True), the loop
controls, transformers' tojson filter, raise_exception, strftime_now and the
{% generation %} tag.

  jinja_check.py JINJA_RENDER TEMPLATE_DIR

1. Every TEMPLATE_DIR/*.jinja (chat templates written from the families' documented
   formats) against conversations with and without a system message, one turn and
   several, empty content, Unicode, quotes and braces, whitespace, bad role orders,
   add_generation_prompt true and false: the output must be byte-equal, and a
   conversation that jinja2 refuses (raise_exception, an undefined value...) must be
   refused too, a raise_exception with the same message.
2. Short templates, one per feature, compared the same way.
3. What vkformer does not implement (macro, call, filter blocks, include, ...) must be
   refused with a message naming it.
Prints one summary line per template. Runs with Debian's /usr/bin/python3 and
python3-jinja2 (3.1.2).
"""
import json
import os
import subprocess
import sys
import tempfile
from datetime import datetime

try:
    import jinja2
    from jinja2 import nodes
    from jinja2.exceptions import TemplateError
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.exit("jinja_check: jinja2 is missing: install python3-jinja2 (tools/install-deps.sh)")


def reference_env():
    # As transformers' _compile_jinja_template (4.44.2; the loop controls and
    # strftime_now as later versions add them).
    def raise_exception(message):
        raise TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    class Generation(Extension):
        # transformers' AssistantTracker renders {% generation %}...{% endgeneration %}
        # as its body (it also records where, which does not change the text).
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

        def _render(self, caller):
            return caller()

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, "jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


ENV = reference_env()


def reference(source, context):
    """('ok', text) or ('raise', message) for raise_exception or ('error', why)."""
    try:
        return ("ok", ENV.from_string(source).render(**context))
    except TemplateError as e:
        if type(e) is TemplateError:
            return ("raise", str(e))
        return ("error", f"{type(e).__name__}: {e}")
    except Exception as e:  # TypeError, ValueError, ZeroDivisionError... from Python itself
        return ("error", f"{type(e).__name__}: {e}")


class Runner:
    def __init__(self, binary, workdir):
        self.binary = binary
        self.workdir = workdir
        self.count = 0

    def run(self, source, context):
        """(returncode, stdout bytes, stderr text) of jinja_render."""
        self.count += 1
        tpath = os.path.join(self.workdir, f"t{self.count}.jinja")
        cpath = os.path.join(self.workdir, f"c{self.count}.json")
        with open(tpath, "w", encoding="utf-8", newline="") as f:
            f.write(source)
        with open(cpath, "w", encoding="utf-8") as f:
            json.dump(context, f, ensure_ascii=False)
        p = subprocess.run([self.binary, tpath, cpath], capture_output=True, timeout=60)
        os.unlink(tpath)
        os.unlink(cpath)
        return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def check(runner, source, context, label, failures):
    """Compares one case; returns 'equal', 'refused' (by both) or None (a mismatch)."""
    want = reference(source, context)
    rc, out, err = runner.run(source, context)
    err_lines = err.rstrip("\n").split("\n")
    if want[0] == "ok":
        if rc == 0 and out == want[1].encode("utf-8"):
            return "equal"
        got = out.decode("utf-8", "replace") if rc == 0 else f"<exit {rc}> {err.strip()}"
        failures.append(f"{label}\n    jinja2:   {want[1]!r}\n    vkformer: {got!r}")
        return None
    if rc != 1 or len(err_lines) != 1 or not err_lines[0].startswith("chat_template: "):
        failures.append(f"{label}\n    jinja2 refuses ({want[1]})\n    vkformer: <exit {rc}> "
                        f"{out.decode('utf-8', 'replace')!r} {err!r}")
        return None
    if want[0] == "raise":
        expected = "chat_template: raise_exception: " + " ".join(want[1].splitlines())
        if err_lines[0] != expected:
            failures.append(f"{label}\n    jinja2 raises:   {expected!r}\n    vkformer:        {err_lines[0]!r}")
            return None
    return "refused"


def U(c):
    return {"role": "user", "content": c}


def A(c):
    return {"role": "assistant", "content": c}


def S(c):
    return {"role": "system", "content": c}


SYSTEM = "You are a terse assistant."

CONVERSATIONS = [
    ("one turn", [U("Hello!")]),
    ("system + one turn", [S(SYSTEM), U("Hello!")]),
    ("multi-turn", [U("What is 2+2?"), A("4."), U("And 3+3?")]),
    ("system + multi-turn", [S(SYSTEM), U("Hi"), A("Hello. How can I help?"), U("Tell me a joke."), A("No."),
                             U("Please?"), A("Fine: ..."), U("Again")]),
    ("ends with assistant", [U("Hi"), A("Hello")]),
    ("empty content", [U(""), A(""), U("")]),
    ("empty system", [S(""), U("x")]),
    ("unicode", [S("システム: 日本語で答えてください。"),
                 U("你好，世界 🌍👩‍👩‍👧‍👦 café ñ é (e\u0301) Ω ΣΑΣ ﬁ ß İ \U0001F600"),
                 A("مرحبا שָׁלוֹם 🇫🇷 한국어"),
                 U("\u200b zero width, \u00a0nbsp, \u3000ideographic space, \u2028line sep")]),
    ("quotes and braces", [U('He said "hi" and \'bye\' {{ not_a_tag }} {% if %} {# c #} \\ back\\slash \\n </s> <|im_end|>'),
                           A("{'a': 1} [1, 2] {\"k\": \"v\"} }}{{"),
                           U("%s %d {} {0} {%- -%}")]),
    ("whitespace", [U("  padded  \n\t"), A("\n\nlines\n\n"), U("\r\nwindows\r\n")]),
    ("roles not alternating", [U("a"), U("b")]),
    ("system only", [S(SYSTEM)]),
    ("other role", [U("a"), {"role": "tool", "content": "42"}]),
    ("no messages", []),
]

SPECIAL_TOKENS = {
    "chatml_qwen2": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                     "additional_special_tokens": ["<|im_start|>", "<|im_end|>"]},
    "llama3": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "smollm2": {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "unk_token": "<|endoftext|>",
                "pad_token": "<|im_end|>"},
}
DEFAULT_TOKENS = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}


def chat_context(name, messages, add_generation_prompt):
    # What apply_chat_template passes: the special tokens map, then messages, tools,
    # documents and add_generation_prompt.
    ctx = dict(SPECIAL_TOKENS.get(name, DEFAULT_TOKENS))
    ctx.update(messages=messages, tools=None, documents=None, add_generation_prompt=add_generation_prompt)
    return ctx


SNIPPET_CONTEXT = {
    "messages": [S("sys"), U("Hi there"), A("Hello"), U("  bye  ")],
    "s": "  Hello, World  ", "n": 7, "neg": -7, "f": 2.5, "big": 1e16, "small": 1.5e-7,
    "d": {"b": 1, "a": [1, 2.0, None, True, "x'y"], "items": "key named items"},
    "l": [3, 1, 2], "e": "", "nothing": None, "t": True, "ff": False, "zero": 0,
    "u": "héllo wörld ΣΑΣ ß ǆ ﬁ İ 日本 🎉", "nested": [{"a": {"b": [10, 20]}}, {"a": {"b": [30]}}],
    "tools": None, "bos_token": "<s>",
}

SNIPPETS = [
    # output and printing of values
    "{{ s }}|{{ n }}|{{ f }}|{{ big }}|{{ small }}|{{ nothing }}|{{ t }}|{{ ff }}|{{ e }}|{{ zero }}",
    "{{ d }}|{{ l }}|{{ messages[0] }}|{{ nested }}|{{ (1,) }}|{{ (1, 'a') }}|{{ () }}|{{ [] }}|{{ {} }}",
    "{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e300 * 1e10 }} {{ -0.0 }} {{ 1/3 }} {{ 100000000000000000.0 }} {{ 0.0001 }} {{ 0.00001 }}",
    "{{ \"it's\" }} {{ ['it\\'s', \"q\\\"d\", 'both \\' \"', 'tab\\t', 'nl\\n', 'bs\\\\', '\\x01', 'é', '\\u200b', '\\u00a0', '🎉'] }}",
    "{{ 'a' 'b' }} {{ \"\\x41\\u00e9\\U0001F600\\n\\q\\101\" }}",
    "{{ d.items() }} {{ d.keys() }} {{ d.values() }} {{ range(3) }} {{ range(1, 10, 3) }} {{ range(5)[::-1] }}",
    "{{ undefined_thing }}[{{ undefined_thing }}]{{ d.missing }}{{ messages[10] }}{{ none.x }}{{ 'x'.nope }}",
    # whitespace control, trim_blocks, lstrip_blocks
    "a\n  {% if t %}\n  b\n  {% endif %}\nc\n",
    "a  {%- if t -%}  b  {%- endif -%}  c",
    "a\n  {{- 'x' -}}\n  b",
    "x {# comment #}\n  {# own line #}\ny {#- strip -#} z",
    "  {%+ if t %}kept{% endif +%}\nnext",
    "line\n\t\t{% for i in l %}\n\t{{ i }}\n\t\t{% endfor %}\nend",
    "{% if t %}a{% endif %}   \n{{ 'b' }}  {% if t %}\nc{% endif %}",
    "trailing newline kept\n\n",
    "windows\r\nline\r\n  {% if t %}\r\nx\r\n  {% endif %}\r\n",
    # arithmetic, comparison, logic
    "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 7 / 2 }} {{ 6 / 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }}",
    "{{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 1 + 2 * 3 - 4 }} {{ (1 + 2) * 3 }} {{ n + f }} {{ t + 1 }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ 3 * 'x' }}",
    "{{ 'a' ~ 1 ~ none ~ t ~ 2.5 ~ undefined_thing ~ [1] }} {{ 'x' + 'y' }} {{ [1] + [2] }} {{ (1,) + (2,) }}",
    "{{ 1 == 1.0 }} {{ t == 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 5 }} {{ nothing == none }} {{ undefined_thing == undefined_thing }} {{ d == {'b': 1, 'a': [1, 2.0, None, True, \"x'y\"], 'items': 'key named items'} }}",
    "{{ 'ell' in s }} {{ 3 in l }} {{ 'b' in d }} {{ 'z' not in d }} {{ 1 in undefined_thing }} {{ (1, 2) in [(1, 2)] }}",
    "{{ t and 'yes' }} {{ ff or 'fallback' }} {{ e or nothing }} {{ not e }} {{ l and d }} {{ not undefined_thing }}",
    "{{ 'a' if t else 'b' }} {{ 'a' if ff else 'b' }} [{{ 'a' if ff }}] {{ 'x' if n > 5 else 'y' if n > 2 else 'z' }}",
    "{{ -n }} {{ +f }} {{ - -n }} {{ -l[0] }} {{ n - -1 }}",
    # attribute, item, slice
    "{{ messages[1].content }} {{ messages[1]['role'] }} {{ messages[-1].content }} {{ messages.0.role }} {{ d['a'][1] }} {{ nested[0].a.b[1] }} {{ d.items is defined }}",
    "{{ d['items'] }} {{ d.get('b') }} {{ d.get('zz') }} {{ d.get('zz', 'dflt') }} {{ d['get'] is defined }}",
    "{{ l[1:] }} {{ l[:-1] }} {{ l[::-1] }} {{ l[::2] }} {{ l[5:] }} {{ l[-10:10] }} {{ u[1:4] }} {{ u[::-1] }} {{ u[-3:] }} {{ s[2] }} {{ u[7] }}",
    "{{ messages[1:] | length }} {{ messages[:1][0].role }} {{ (l[1:])[0] }} {{ l[nothing:2] }}",
    # tests
    "{{ s is string }} {{ n is number }} {{ t is number }} {{ t is integer }} {{ n is integer }} {{ f is float }} {{ d is mapping }} {{ l is mapping }} {{ l is sequence }} {{ d is sequence }} {{ s is iterable }} {{ n is iterable }}",
    "{{ nothing is none }} {{ n is none }} {{ t is true }} {{ 1 is true }} {{ ff is false }} {{ t is boolean }} {{ undefined_thing is defined }} {{ undefined_thing is undefined }} {{ n is not defined }} {{ d.zz is defined }} {{ n is odd }} {{ n is even }} {{ n is divisibleby 7 }} {{ n is divisibleby(2) }}",
    "{{ n is eq 7 }} {{ n is equalto(7) }} {{ n is ne 7 }} {{ n is lt 8 }} {{ n is gt 8 }} {{ n is le 7 }} {{ n is ge 8 }} {{ 2 is in l }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ nothing is sameas none }} {{ undefined_thing is iterable }} {{ undefined_thing is sequence }} {{ range is callable }}",
    # filters
    "[{{ s | trim }}] [{{ 'xxaxx' | trim('x') }}] {{ s | upper }} {{ s | lower }} {{ u | upper }} {{ u | lower }} {{ u | title }} {{ 'hELLO wORLD-foo(bar [baz' | title }} {{ u | capitalize }} {{ 'ǆemal' | capitalize }}",
    "{{ s | length }} {{ u | length }} {{ l | count }} {{ d | length }} {{ undefined_thing | length }} {{ messages | length }}",
    "{{ d | tojson }} {{ messages[0] | tojson }} {{ u | tojson }} {{ 'q\"\\\\\\n\\t\\x01\\x7f' | tojson }} {{ l | tojson(indent=2) }} {{ d | tojson(indent=1) }} {{ [] | tojson(indent=2) }} {{ {} | tojson(indent=2) }}",
    "{{ d | tojson(sort_keys=true) }} {{ l | tojson(separators=(',', ':')) }} {{ u | tojson(ensure_ascii=true) }} {{ d | tojson(indent='\\t') }} {{ f | tojson }} {{ big | tojson }} {{ (1, 2) | tojson }} {{ nothing | tojson }} {{ 'é' | tojson(4) }}",
    "{{ l | join }} {{ l | join(', ') }} {{ messages | join('|', attribute='role') }} {{ u | join('.') }} {{ undefined_thing | join(',') }}",
    "{{ s | replace('l', 'L') }} {{ s | replace('l', 'L', 1) }} {{ 'ab' | replace('', '-') }} {{ nothing | replace('N', 'n') }}",
    "{{ undefined_thing | default('dflt') }} {{ e | default('dflt') }} {{ e | default('dflt', true) }} {{ nothing | default('dflt') }} {{ undefined_thing | d('d') }} {{ nothing | d('x', boolean=true) }}",
    "{{ l | first }} {{ l | last }} {{ s | first }} {{ d | first }} [{{ [] | first }}] {{ messages | first }} {{ u | last }}",
    "{{ s | list }} {{ d | list }} {{ range(3) | list }} {{ (1, 2) | list }} {{ undefined_thing | list }}",
    "{{ n | string }} {{ nothing | string }} {{ l | string }} {{ f | string }} {{ (n | string) + 'x' }}",
    "{{ '42' | int }} {{ ' 12 ' | int }} {{ '12.7' | int }} {{ 'x' | int }} {{ 'x' | int(5) }} {{ f | int }} {{ t | int }} {{ nothing | int }} {{ '1_000' | int }} {{ '0x1F' | int(0, 16) }} {{ '0b101' | int(base=0) }} {{ '-3' | int }}",
    "{{ '2.5' | float }} {{ n | float }} {{ 'x' | float }} {{ 'x' | float(1.5) }} {{ '1e3' | float }} {{ ' inf ' | float }} {{ '-Infinity' | float }} {{ nothing | float }}",
    "{% for k, v in d | items %}{{ k }}={{ v }};{% endfor %} {% for k, v in d.items() %}{{ loop.index }}{{ k }}{% endfor %} {{ undefined_thing | items | list }}",
    "{{ messages | selectattr('role', 'equalto', 'user') | list | length }} {{ messages | rejectattr('role', 'eq', 'user') | map(attribute='content') | list }} {{ nested | selectattr('a.b.1') | list | length }} {{ messages | selectattr('content') | list | length }}",
    "{{ l | select('odd') | list }} {{ l | reject('odd') | list }} {{ l | select('gt', 1) | list }} {{ l | select | list }} {{ [0, 1, '', 'a', none] | select | list }}",
    "{{ messages | map(attribute='role') | list }} {{ nested | map(attribute='a.b.0') | list }} {{ messages | map(attribute='zz', default='?') | list }} {{ l | map('string') | join('-') }} {{ ['a', 'B'] | map('upper') | list }} {{ [' a ', 'b '] | map('trim') | list }}",
    "{% if [] | selectattr('x') %}generators are true{% endif %} {{ l | map('abs') | list }} {{ -3 | abs }} {{ f | abs }}",
    "{{ l | reverse | list }} {{ s | reverse }} {{ d | reverse | list }} {{ messages | map(attribute='role') | reverse | list }}",
    # string methods
    "[{{ s.strip() }}] [{{ s.lstrip() }}] [{{ s.rstrip() }}] [{{ 'xxaxx'.strip('x') }}] [{{ '\\u3000 wide \\u00a0'.strip() }}]",
    "{{ s.startswith('  H') }} {{ s.endswith('d  ') }} {{ s.strip().startswith(('x', 'H')) }} {{ 'abc'.endswith(('c',)) }}",
    "{{ 'a,b,,c'.split(',') }} {{ ' a  b \\n c '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a b c'.split(maxsplit=1) }} {{ ''.split() }} {{ ''.split(',') }}",
    "{{ s.upper() }} {{ s.lower() }} {{ u.title() }} {{ 'hello world'.title() }} {{ \"they're bill's\".title() }} {{ u.capitalize() }} {{ u.upper() }} {{ u.lower() }}",
    "{{ s.replace('l', 'L') }} {{ s.replace('l', 'L', 2) }} {{ 'ab'.replace('', '|') }} {{ 'aaa'.replace('a', 'b', 0) }}",
    "{{ '{} and {}'.format('a', 1) }} {{ '{1}{0}'.format('a', 'b') }} {{ '{x}-{y}'.format(x=1, y=none) }} {{ '{{}} {!r}'.format('q') }} {{ '{}'.format(l) }}",
    "{{ ', '.join(['a', 'b']) }} {{ '-'.join('abc') }} {{ u.find('w') }} {{ s.find('zz') }} {{ 'banana'.count('an') }} {{ 'ab'.count('') }}",
    # statements
    "{% set x = 1 %}{% for i in l %}{{ x }}{% set x = x + 10 %}{{ x }},{% endfor %}{{ x }}",
    "{% for i in l %}{% if i == 1 %}{{ y }}{% endif %}{% set y = i %}{% endfor %}|{{ y }}",
    "{% if t %}{% set z = 5 %}{% endif %}{{ z }} {% for i in l %}{% endfor %}[{{ i }}]",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }} {% set (c, e2) = [3, 4] %}{{ c }}{{ e2 }} {% set tup = 1, 2 %}{{ tup }}",
    "{% set ns = namespace(a=1, l=[]) %}{% for i in l %}{% set ns.a = ns.a * i %}{% endfor %}{{ ns.a }} {{ ns }} {{ ns.missing }}|{{ ns['a'] }}",
    "{% set ns = namespace(d) %}{{ ns.b }} {% set ns2 = namespace({'q': 1}, r=2) %}{{ ns2 }}",
    "{% set captured %}  x {{ n }} {% endset %}[{{ captured }}] {% set up | upper | trim %} shout {% endset %}[{{ up }}]",
    "{% for i in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}/{{ loop.previtem }}/{{ loop.nextitem }}/{{ loop.cycle('a', 'b') }}{{ loop.depth }}{{ loop.depth0 }} {% endfor %}",
    "{% for i in range(10) if i is odd %}{{ i }}:{{ loop.index }}/{{ loop.length }}{{ ',' if not loop.last }}{% else %}none{% endfor %}",
    "{% for i in [] %}x{% else %}empty{% endfor %} {% for i in l if i > 5 %}x{% else %}filtered away{% endfor %}",
    "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}",
    "{% for i in l %}{% for j in l %}{% if j == 1 %}{% break %}{% endif %}{{ i }}{{ j }},{% endfor %}{{ loop.index }};{% endfor %}",
    "{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %} {% for k in d %}{{ k }}{% endfor %} {% for c in 'héj' %}{{ c }}.{% endfor %}",
    "{% for m in messages %}{% if loop.first %}first:{% elif loop.last %}last:{% else %}mid:{% endif %}{{ m.role }} {% endfor %}",
    "{% for m in messages %}{{ loop }} {{ [loop] }} {% endfor %}",
    "{% if n > 10 %}big{% elif n > 5 %}medium{% else %}small{% endif %} {% if undefined_thing %}x{% elif nothing %}y{% else %}z{% endif %}",
    "{% print n %} {% generation %}{{ 'generated' }}{% endgeneration %} {{ dict(a=1, b=[2]) }} {{ range(2, 8, 2) | list }}",
    "{{ messages[0]['content'] if messages[0]['role'] == 'system' else '' }}{% set rest = messages[1:] if messages[0]['role'] == 'system' else messages %}{{ rest | length }}",
    "{{ bos_token + messages[1].content | trim + '!' }} {{ 'a' ~ 'b' + 'c' }} {{ ('x' ~ 1) | length }}",
    "{%- for message in messages -%}\n  {{- '<|' + message.role + '|>\\n' + message.content | trim + '\\n' -}}\n{%- endfor -%}",
    "{{ strftime_now('%%') }} {{ strftime_now('') }}[]",
    # scoping: a name whose first mention in a frame is a store starts undefined there,
    # even when the context has it (jinja2's idtracking)
    "{% for i in [1] %}{{ n }}{% endfor %}{% set n = 5 %}{{ n }}",
    "{% for i in [1] %}{{ n }}{% endfor %}{% if t %}{% set n = 5 %}{% endif %}{{ n }}",
    "{% for i in [1] %}{{ n }}{% endfor %}{% if t %}{% set n = 5 %}{% elif ff %}{% set n = 6 %}{% else %}{% set n = 7 %}{% endif %}{{ n }}",
    "{% for i in [1] %}{{ n }}{% endfor %}{% if t %}{% set n = 5 %}{% else %}{% set n = 7 %}{% endif %}{{ n }}",
    "{% for a in [1] %}{% for b in [1] %}{{ n }}{% endfor %}{% set n = 2 %}{{ n }}{% endfor %}{{ n }}",
    "{% set n = n + 1 %}{{ n }}{% for i in [1] %}{% set n = n + 1 %}{{ n }}{% endfor %}{{ n }}",
    "{% for i in [1] %}{% set s2 %}{{ n }}{% endset %}{{ s2 }}{% endfor %}{% set n = 0 %}",
    "{% set s2 %}{{ n }}{% set n = 3 %}{{ n }}{% endset %}{{ s2 }}{{ n }}",
    "{% generation %}{{ n }}{% endgeneration %}{% set n = 1 %}",
    "{% for i in [] %}{% else %}{{ n }}{% endfor %}{% set n = 2 %}",
    "{% for i in [1] if n %}{{ i }}{% endfor %}{% set n = 0 %}{{ n }}",
    "{% for i in [1] %}{% if t %}{{ n }}{% endif %}{% set n = 2 %}{% endfor %}",
    "{% for i in [1, 2] %}{% if i == 2 %}{{ n }}{% else %}{% set n = 9 %}{{ n }}{% endif %}{% endfor %}",
    "{% set ns = namespace(v=n) %}{% for i in [1] %}{% set ns.v = ns.v + n %}{% endfor %}{{ ns.v }}{% set n = 0 %}",
    "{{ x }}\n    {% if t %}y{% endif %}|{{ x }}    {% if t %}y{% endif %}|\u3000 {% if t %}x{% endif %}",
    "{{ messages | selectattr('role', '==', 'user') | list | length }} {{ l | select('>', 1) | list }}",
    # corners found by comparing random templates
    "{{ f is even }} {{ f is odd }} {{ 3.0 is odd }} {{ '\u0661\u0662' | int }} {{ '\u0661.5' | float }} {{ \"\\\u00e9\\\u20ac\" }}",
    "{{ d[1, 2] }}|{{ l[] }}|{{ ff and not [1] }}",
    "{{ 'ΣΑΣ ΣΑΣ' | lower }} {{ 'ǅ ǆ Ǆ ﬁ ß ŉ' | title }} {{ 'ǅ ǆ Ǆ ﬁ ß ŉ'.title() }} {{ 'e\u0301t hello-world (x) [y] <z> {w}' | title }} {{ 'İstanbul' | lower }} {{ 'ﬀ' | capitalize }}",
    # refused by jinja2 (and so by vkformer)
    "{{ 1 / 0 }}",
    "{{ 1 // 0 }}",
    "{{ n + 'x' }}",
    "{{ undefined_thing + 1 }}",
    "{{ undefined_thing.attr }}",
    "{{ undefined_thing['k'] }}",
    "{{ undefined_thing < 1 }}",
    "{{ n < 'a' }}",
    "{{ 1 in 'abc' }}",
    "{{ n | length }}",
    "{{ undefined_thing | tojson }}",
    "{{ raise_exception('Custom: ' ~ n) }}",
    "{% if messages | length > 1 %}{{ raise_exception('too many\\nlines') }}{% endif %}",
    "{% set x = 1 %}{% set x.y = 2 %}",
    "{% set a, b = [1] %}",
    "{% set a, b = [1, 2, 3] %}",
    "{{ messages.append(1) }}",
    "{{ d.update({}) }}",
    "{{ l[1:2:0] }}",
    "{{ range(1, 10, 0) }}",
    "{% for x in n %}{% endfor %}",
    "{% for x in nothing %}{% endfor %}",
    "{{ 'a' < 1 }}",
    "{% if %}x{% endif %}",
    "{% for %}",
    "{% if t %}unclosed",
    "{% endif %}",
    "{{ 'unterminated }}",
    "{{ 1 + }}",
    "{{ l[0:1, 2] }}",
    "{{ ) }}",
    "{# unclosed comment",
    "{{ n is divisibleby }}",
    "{{ messages | selectattr('role', 'nosuchtest') | list }}",
    "{{ l | map('nosuchfilter') | list }}",
    "{% break %}",
    "{{ 10 ** 400.0 }}",
]

UNSUPPORTED = [
    ("{% macro m() %}x{% endmacro %}{{ m() }}", "unsupported Jinja feature 'macro'"),
    ("{% call foo() %}x{% endcall %}", "unsupported Jinja feature 'call'"),
    ("{% filter upper %}x{% endfilter %}", "unsupported Jinja feature 'filter'"),
    ("{% include 'other.jinja' %}", "unsupported Jinja feature 'include'"),
    ("{% extends 'base.jinja' %}", "unsupported Jinja feature 'extends'"),
    ("{% import 'macros.jinja' as m %}", "unsupported Jinja feature 'import'"),
    ("{% from 'macros.jinja' import m %}", "unsupported Jinja feature 'from'"),
    ("{% block b %}x{% endblock %}", "unsupported Jinja feature 'block'"),
    ("{% with a = 1 %}{{ a }}{% endwith %}", "unsupported Jinja feature 'with'"),
    ("{% autoescape true %}x{% endautoescape %}", "unsupported Jinja feature 'autoescape'"),
    ("{% raw %}{{ x }}{% endraw %}", "unsupported Jinja feature 'raw'"),
    ("{% for x in [1] recursive %}{{ loop(x) }}{% endfor %}", "unsupported Jinja feature 'recursive'"),
    ("{% do messages.append(1) %}", "unknown tag 'do'"),
    ("{{ 'a b' | wordcount }}", "unsupported filter 'wordcount'"),
    ("{{ [2, 1] | sort }}", "unsupported filter 'sort'"),
    ("{{ 'x' | frobnicate }}", "unknown filter 'frobnicate'"),
    ("{{ x is frobnicated }}", "unknown test 'frobnicated'"),
    ("{{ cycler(1, 2) }}", "unsupported Jinja function 'cycler'"),
    ("{{ my_macro(1) }}", "unknown function 'my_macro'"),
    ("{{ 'x'.zfill(3) }}", "unsupported string method 'zfill'"),
    ("{{ '%s' % 1 }}", "printf-style"),
    ("{{ '{:>5}'.format(1) }}", "format specifications are not supported"),
    ("{% for i in [1] %}{{ loop.changed(i) }}{% endfor %}", "unsupported loop.changed()"),
]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, template_dir = sys.argv[1], sys.argv[2]
    print(f"jinja2 {jinja2.__version__}")
    failures = []
    ok = True
    with tempfile.TemporaryDirectory() as work:
        runner = Runner(binary, work)
        names = sorted(n for n in os.listdir(template_dir) if n.endswith(".jinja"))
        if not names:
            sys.exit(f"no .jinja templates in {template_dir}")
        for file in names:
            name = file[:-len(".jinja")]
            with open(os.path.join(template_dir, file), encoding="utf-8", newline="") as f:
                source = f.read()
            results = []
            for conv_name, messages in CONVERSATIONS:
                for gen in (False, True):
                    ctx = chat_context(name, messages, gen)
                    results.append(check(runner, source, ctx, f"{file}: {conv_name}, add_generation_prompt={gen}",
                                         failures))
            equal, refused = results.count("equal"), results.count("refused")
            same = equal + refused == len(results)
            ok &= same
            print(f"{name}: {len(results)} cases compared, {equal} byte-equal, {refused} refused by both"
                  f"{'' if same else ', ' + str(len(results) - equal - refused) + ' DIFFERENT'}")

        results = [check(runner, src, SNIPPET_CONTEXT, f"snippet {src!r}", failures) for src in SNIPPETS]
        equal, refused = results.count("equal"), results.count("refused")
        same = equal + refused == len(results)
        ok &= same
        print(f"snippets: {len(results)} cases compared, {equal} byte-equal, {refused} refused by both"
              f"{'' if same else ', ' + str(len(results) - equal - refused) + ' DIFFERENT'}")

        refused = 0
        for src, needle in UNSUPPORTED:
            rc, out, err = runner.run(src, SNIPPET_CONTEXT)
            lines = err.rstrip("\n").split("\n")
            if rc == 1 and len(lines) == 1 and needle in lines[0] and lines[0].startswith("chat_template: line "):
                refused += 1
            else:
                failures.append(f"unsupported {src!r}: expected a one-line error with {needle!r}, got <exit {rc}> "
                                f"{out.decode('utf-8', 'replace')!r} {err!r}")
        ok &= refused == len(UNSUPPORTED)
        print(f"unsupported features: {len(UNSUPPORTED)} cases, {refused} refused with a message naming them")

    for f in failures:
        print("MISMATCH " + f)
    if not ok or failures:
        sys.exit(1)
    print("all equal")


if __name__ == "__main__":
    main()
