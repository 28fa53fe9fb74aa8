// The vkformer command line. CLI11 lives only in this file: it is slow to compile.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <new>

#include "bench_ops.hpp"
#include "kernel_bench.hpp"
#include "chat_command.hpp"
#include "generate_command.hpp"
#include "model_commands.hpp"
#include "revision.hpp"
#include "tokenize_command.hpp"
#include "embed_command.hpp"
#include "head_commands.hpp"
#include "translate_command.hpp"
#include "tune_command.hpp"
#include "soak_command.hpp"
#include "output_file.hpp"
#include "serve/server.hpp"
#include "terminal_text.hpp"
#include "usage_error.hpp"
#include "vkformer/context.hpp"
#include "vkformer/ops.hpp"
#include "vkformer/recorder.hpp"


namespace {

// Every floating-point option: NaN and ±inf are usage errors (a NaN compares
// false with every bound, so range checks alone would let it through).
const CLI::Validator kFinite(
    [](std::string& s) -> std::string {
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (end != s.c_str() && *end == '\0' && !std::isfinite(v)) return "must be a finite number, got " + s;
      return "";
    },
    "");

// Every unsigned option: "-1" is a usage error (strtoull would wrap it to 2^64 - 1),
// and so is a value above 2^64 - 1 (strtoull would clamp it).
const CLI::Validator kNotNegative(
    [](std::string& s) -> std::string {
      const size_t first = s.find_first_not_of(" \t");
      if (first != std::string::npos && s[first] == '-') return "must not be negative, got " + s;
      errno = 0;
      char* end = nullptr;
      std::strtoull(s.c_str(), &end, 0);
      if (end != s.c_str() && errno == ERANGE) return "must be at most 18446744073709551615, got " + s;
      return "";
    },
    "");

// --seed: the whole uint64 range, nothing outside it (neither wrapped nor clamped).
const CLI::Validator kSeedRange(
    [](std::string& s) -> std::string {
      const size_t first = s.find_first_not_of(" \t");
      errno = 0;
      char* end = nullptr;
      std::strtoull(s.c_str(), &end, 0);
      if ((first != std::string::npos && s[first] == '-') || (end != s.c_str() && errno == ERANGE))
        return "must be from 0 to 18446744073709551615 (2^64 - 1), got " + s;
      return "";
    },
    "");

// CLI11 reads an argument "[a,b]" as the list a, b (and "[]" as nothing) for
// every option that takes several values, positional texts included: a text
// must reach the tokenizer byte for byte. main escapes an argument (or the value
// of --name=VALUE) that starts with '[' by putting kRawMark before it (and one
// that starts with kRawMark itself, so the escape can be undone exactly); every
// option's first transform takes the mark off again.
constexpr char kRawMark = '\x1f';

bool needs_raw_mark(const std::string& s) { return !s.empty() && (s[0] == '[' || s[0] == kRawMark); }

std::vector<std::string> escape_raw_args(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  bool positional_only = false;  // after "--"
  for (size_t i = 1; i < args.size(); ++i) {
    std::string& a = args[i];
    if (!positional_only && a == "--") {
      positional_only = true;
    } else if (needs_raw_mark(a)) {
      a.insert(a.begin(), kRawMark);
    } else if (!positional_only && a.rfind("--", 0) == 0) {
      const size_t eq = a.find('=');
      if (eq != std::string::npos && needs_raw_mark(a.substr(eq + 1))) a.insert(a.begin() + eq + 1, kRawMark);
    }
  }
  return args;
}

const CLI::Validator kRawUnmark(
    [](std::string& s) -> std::string {
      if (!s.empty() && s[0] == kRawMark) s.erase(0, 1);
      return "";
    },
    "");

/// A CLI11 message with the escape marks taken off.
std::string unmarked(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), kRawMark), s.end());
  return s;
}

/// Adds kFinite to every floating-point option of `app` and its subcommands,
/// kNotNegative to every unsigned one, and drops the "=[]" --help would show
/// for list options without a default.
void add_value_checks(CLI::App* app) {
  for (CLI::Option* opt : app->get_options()) {
    opt->transform(kRawUnmark);  // first, before every other check
    const std::string type = opt->get_type_name();
    if (type.find("FLOAT") != std::string::npos) opt->check(kFinite);
    if (type.find("UINT") != std::string::npos) opt->check(kNotNegative);
    if (opt->get_default_str() == "[]") opt->default_str("");
  }
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) add_value_checks(sub);
}

/// Every command's options, filled in by the parser; the command table's rows
/// point into it.
struct Cli {
  vkf::ContextOptions ctx;
  bool quiet = false;
  std::vector<const std::string*> inputs;  ///< what the commands read, never overwritten by what they write

  bool devices_json = false;
  vkf::tools::ModelRunOptions forward;
  vkf::tools::QuantizeOptions quantize;
  vkf::tools::GenerateCliOptions generate, chat;
  vkf::tools::KernelOptions kernel;
  bool kernel_no_check = false;
  vkf::tools::BenchOpsOptions bench_ops;
  std::vector<CLI::Option*> bench_shape_options;  ///< whether any was given: bench_ops.shape_given
  bool bench_no_check = false;
  vkf::tools::ProfileOptions profile;
  vkf::tools::BenchModelOptions bench_model;
  vkf::tools::TuneOptions tune;
  vkf::tools::TokenizeOptions tokenize;
  vkf::tools::EmbedOptions embed;
  vkf::tools::HeadOptions classify, fill_mask;
  vkf::tools::TranslateOptions translate;
  vkf::tools::SoakOptions soak;
  vkf::tools::ServeOptions serve;
};

// ---- option groups: each option declared once ------------------------------

/// The device and context options, on the top-level app: with fallthrough they
/// work after the subcommand too.
void add_device_options(CLI::App& app, Cli& c) {
  app.add_option("--device", c.ctx.device,
                 "device index or name substring (default: VKFORMER_DEVICE, else the best)");
  app.add_option("--device-profile", c.ctx.device_profile,
                 "clamp what the engine may use: full, min, no-fp16, no-subgroup, gpu, no-coopmat, or several joined by "
                 "commas (default: VKFORMER_DEVICE_PROFILE, else full)");
  app.add_flag("--no-subgroups", c.ctx.disable_subgroups, "the same as adding no-subgroup to the profile");
  app.add_flag("--no-fp16", c.ctx.disable_fp16, "the same as adding no-fp16 to the profile");
  app.add_flag("-q,--quiet", c.quiet, "do not print the device line on stderr");
  app.add_option("--max-dispatches-per-submit", c.ctx.max_dispatches_per_submit,
                 "split longer recordings into several queue submissions (default: "
                 "VKFORMER_MAX_DISPATCHES_PER_SUBMIT, else never)");
  app.add_option("--tuning", c.ctx.tuning,
                 "tuned kernel configurations: off, auto (the cache directory's database) or a database file; "
                 "bench ops and bench model also take compare (default: VKFORMER_TUNING, else auto)");
}

/// --model DIR, required: an input that no output of the command may overwrite.
CLI::Option* add_model(CLI::App& cmd, Cli& c, std::string& dir, const char* help = "model directory") {
  c.inputs.push_back(&dir);
  return cmd.add_option("--model", dir, help)->required();
}

/// --precision: how the weights are stored (parse_precision).
void add_precision(CLI::App& cmd, std::string& precision,
                   const char* help = "weight storage: fp32, fp16, or q8_0, q4_0, q4_1 (linear layers quantized at load)") {
  cmd.add_option("--precision", precision, help);
}

/// --kv-cache: how generation stores K and V (vkf::KvCacheType).
void add_kv_cache(CLI::App& cmd, std::string& kv_cache) {
  cmd.add_option("--kv-cache", kv_cache,
                 "KV cache storage: f32, f16 (half the memory; needs fp16 storage) or auto (default: the model "
                 "family's choice where the device stores fp16, else f32)")
      ->check(CLI::IsMember({"auto", "f32", "f16"}));
}

/// The model group: --model and --precision.
void add_model_group(CLI::App& cmd, Cli& c, std::string& dir, std::string& precision,
                     const char* help = "model directory") {
  add_model(cmd, c, dir, help);
  add_precision(cmd, precision);
}

/// How generate and chat generate: --precision, the length, the search and its
/// sampling processors, --stop, --stream, --no-cache (generation_config.json's
/// values when not given).
void add_generation_options(CLI::App& cmd, vkf::tools::GenerateCliOptions& o, bool chat = false) {
  add_precision(cmd, o.precision);
  cmd.add_option("--max-new-tokens", o.max_new_tokens,
                 chat ? "most tokens per answer (default: none; an answer ends at its end of turn or the model's positions)"
                      : "most tokens to generate per sequence (default: generation_config.json's, else 32; "
                        "0: no limit but the model's positions)");
  if (!chat)  // one answer, streamed: no beams, nothing to choose
    cmd.add_option("--length-penalty", o.length_penalty,
                   "beam score = sum log p / length^this (default: generation_config.json's, else 1)");
  cmd.add_flag("--do-sample", o.do_sample, "sample from the processed distribution instead of greedy");
  cmd.add_flag("--greedy", o.greedy, "greedy (or beam) even if generation_config.json says do_sample");
  cmd.add_option("--temperature", o.temperature, "sampling: divide the logits by this (> 0; default: generation_config.json's, else 1)");
  cmd.add_option("--top-k", o.top_k, "sampling: keep the k likeliest tokens (0: off; default: generation_config.json's, else 50, as HF)");
  cmd.add_option("--top-p", o.top_p, "sampling: nucleus, in (0, 1] (1: off; default: generation_config.json's, else 1)");
  cmd.add_option("--min-p", o.min_p, "sampling: drop tokens below min-p x the top probability (0: off; default: generation_config.json's, else 0)");
  cmd.add_option("--repetition-penalty", o.repetition_penalty,
                 "divide (or multiply, if negative) the logits of tokens already in the sequence (1: off; default: "
                 "generation_config.json's, else 1)");
  cmd.add_option("--no-repeat-ngram-size", o.no_repeat_ngram_size, "never repeat an n-gram of this size (0: off; default: generation_config.json's, else 0)");
  cmd.add_option("--seed", o.seed, "sampling: seed of the host generator, 0 to 2^64 - 1 (default 0)")->check(kSeedRange);
  cmd.add_option("--stop", o.stops, "stop when this text appears; it is not printed (repeatable)");
  if (!chat) cmd.add_flag("--stream", o.stream, "print the text as it is generated (one prompt)");
  cmd.add_flag("--no-cache", o.no_cache, "recompute the whole prefix every step (slow; for checking)");
  add_kv_cache(cmd, o.kv_cache);
}

/// The random workload of `profile` and `bench model`: the model group, --batch,
/// --src-len, --tgt-len (`tgt_len_note` ends its help) and --repeat.
void add_workload(CLI::App& cmd, Cli& c, vkf::tools::ProfileOptions& o, const std::string& tgt_len_note,
                  const char* repeat_help) {
  add_model_group(cmd, c, o.model_dir, o.precision);
  cmd.add_option("--batch", o.batch, "sequences");
  cmd.add_option("--src-len", o.src_len, "source (or prompt) length");
  cmd.add_option("--tgt-len", o.tgt_len, "target length; the decode step is at its last position, tgt-len - 1 "
                                         "(decoder-only: at src-len + tgt-len" + tgt_len_note + ")");
  cmd.add_option("--repeat", o.repeat, repeat_help);
  add_kv_cache(cmd, o.kv_cache);
}

/// --json: print JSON (what `help` says) instead of the command's text.
void add_json(CLI::App& cmd, bool& json, const char* help) { cmd.add_flag("--json", json, help); }

/// Texts as positional arguments (`name`) and --input FILE: an input.
void add_texts(CLI::App& cmd, Cli& c, const char* name, std::vector<std::string>& texts, const char* texts_help,
               std::string& input, const char* input_help) {
  cmd.add_option(name, texts, texts_help);
  cmd.add_option("--input", input, input_help);
  c.inputs.push_back(&input);
}

/// Shape options shared by `kernel` and `bench ops`; returns them so bench can tell whether any was given.
std::vector<CLI::Option*> add_shape_options(CLI::App& c, vkf::tools::KernelOptions& k) {
  return {c.add_option("--m", k.shape.m, "gemm M (tokens); rows for layernorm, add, topk"),
          c.add_option("--n", k.shape.n, "gemm N (outputs); row length for layernorm, add, topk; embedding vocab; copy_rows width"),
          c.add_option("--k", k.shape.k, "gemm K (inputs); embedding d"),
          c.add_option("--batch", k.shape.batch, "attention / embedding / copy_rows batch"),
          c.add_option("--heads", k.shape.heads, "attention heads"),
          c.add_option("--head-dim", k.shape.head_dim, "attention head dim"),
          c.add_option("--q-len", k.shape.q_len, "query length (embedding: sequence length; copy_rows: rows copied)"),
          c.add_option("--kv-len", k.shape.kv_len, "key/value length (copy_rows: rows of the destination cache)"),
          c.add_option("--mask", k.shape.mask, "attention mask: none, padding, causal, both"),
          c.add_option("--topk", k.shape.topk, "k for topk")};
}

/// `classify` and `fill-mask`: an HF model with a head, and texts.
void add_head_options(CLI::App& cmd, Cli& c, vkf::tools::HeadOptions& h, const char* k_help) {
  add_model(cmd, c, h.model_dir, "HF model directory (config.json, model.safetensors, tokenizer.json)");
  add_texts(cmd, c, "texts", h.texts, "texts (UTF-8); put -- before one that starts with -", h.input,
            "file of texts (a JSON array, or one per line; - for stdin), first");
  add_precision(cmd, h.precision);
  cmd.add_option("--top-k", h.top_k, k_help);
  cmd.add_option("--batch-size", h.batch_size, "texts per submission (default 32)");
  add_json(cmd, h.json, "print JSON as HF's pipeline returns it");
}

/// bench prints its table on stdout: its files need names.
void check_bench_file(const std::string& path, const char* option) {
  if (path == "-") throw vkf::tools::UsageError(std::string("bench ") + option + " needs a file name (its table goes to stdout)");
  if (!path.empty()) vkf::tools::check_output_path(path, option);
}

int run_pipelines(const vkf::ContextOptions& ctx_opts) {
  auto t0 = std::chrono::steady_clock::now();
  vkf::Context ctx(ctx_opts);
  auto t1 = std::chrono::steady_clock::now();
  size_t n = vkf::tools::create_all_pipelines(ctx);
  auto t2 = std::chrono::steady_clock::now();
  std::printf("context %.1f ms, %zu pipelines in %.1f ms\n", std::chrono::duration<double, std::milli>(t1 - t0).count(),
              n, std::chrono::duration<double, std::milli>(t2 - t1).count());
  return 0;
}

int run_kernel_command(const vkf::ContextOptions& ctx_opts, const vkf::tools::KernelOptions& ko) {
  vkf::Context ctx(ctx_opts);
  auto results = vkf::tools::run_kernel(ctx, ko);
  vkf::tools::print_results(results);
  for (auto& r : results)
    if (!r.passed) return 1;
  return 0;
}

// ---- the command table -------------------------------------------------------

/// One subcommand: its name ("bench ops" sits under `bench`), its help line, its
/// own options, and what runs it (none for a group such as `bench`).
struct Command {
  const char* name;
  const char* help;
  std::function<void(CLI::App&)> options;
  std::function<int()> run;
};

/// The subcommands in the order --help lists them.
std::vector<Command> command_table(Cli& c) {
  namespace t = vkf::tools;
  return {
      {"devices", "list Vulkan devices, their limits, and which one is picked",
       [&](CLI::App& cmd) { add_json(cmd, c.devices_json, "print JSON"); },
       [&] { return t::run_devices(c.ctx, c.devices_json); }},

      {"forward", "run the whole stack on a batch and write the output as .npy",
       [&](CLI::App& cmd) {
         t::ModelRunOptions& o = c.forward;
         add_model(cmd, c, o.model_dir, "model directory (config.json + model.safetensors)");
         cmd.add_option("--src-ids", o.src_ids, "comma-separated source ids; repeat for each sequence")->required();
         add_precision(cmd, o.precision);
         cmd.add_option("--tgt-ids", o.tgt_ids, "comma-separated target ids (enc-dec models), one per source (default: the decoder start token alone)");
         cmd.add_option("--out", o.out, "output .npy: logits, or the last hidden state (- for stdout)")->required();
         cmd.add_option("--type-ids", o.type_ids, "comma-separated token types (BERT), one per --src-ids; default 0");
         cmd.add_option("--output", o.output, "HF encoders: hidden (last hidden state) or pooler; default: the head's logits");
       },
       [&] {
         t::check_output_path(c.forward.out, "--out");
         return t::run_forward(c.ctx, c.forward);
       }},

      {"quantize", "write a copy of a model directory or GGUF file with its linear layers' matrices in q8_0, q4_0 "
                   "or q4_1, loaded without re-quantizing",
       [&](CLI::App& cmd) {
         t::QuantizeOptions& o = c.quantize;
         cmd.add_option("IN", o.in, "model directory (config.json + model.safetensors or shards), or a GGUF file")->required();
         cmd.add_option("OUT", o.out, "new directory (a GGUF file for a GGUF) to write; must not exist")->required();
         cmd.add_option("--type", o.type, "block format: q8_0, q4_0 or q4_1")->required();
       },
       [&] { return t::run_quantize(c.quantize); }},

      {"generate", "continue prompts (ids, or text with the directory's tokenizer) with the KV cache: greedy, beam "
                   "search or sampling; defaults from generation_config.json",
       [&](CLI::App& cmd) {
         t::GenerateCliOptions& o = c.generate;
         add_model(cmd, c, o.model_dir, "model directory (config.json + model.safetensors)");
         cmd.add_option("--src-ids", o.src_ids, "comma-separated prompt ids; repeat for each sequence");
         cmd.add_option("--prompt", o.prompts, "prompt text (needs a tokenizer); repeatable");
         add_texts(cmd, c, "texts", o.texts, "more prompts; put -- before one that starts with -", o.input,
                   "file of prompts (a JSON array, or one per line; - for stdin)");
         cmd.add_option("--chat", o.chat, "one user message, through the model's chat template (tokenizer_config.json)");
         cmd.add_option("--system", o.system, "with --chat: the system message");
         cmd.add_option("--beam", o.beam, "beam width (1: greedy or sampling; default: generation_config.json's num_beams, else 1)");
         add_generation_options(cmd, o);
         add_json(cmd, o.json, "print {\"sequences\": [[...], ...], \"texts\": [...]}");
       },
       [&] { return t::run_generate(c.ctx, c.generate); }},

      {"chat", "talk with a model through its chat template: on a terminal, streamed answers, /reset, /exit; "
               "piped, each line of stdin is the next message",
       [&](CLI::App& cmd) {
         t::GenerateCliOptions& o = c.chat;
         add_model(cmd, c, o.model_dir, "model directory with a chat template (tokenizer_config.json)");
         cmd.add_option("--system", o.system, "the system message");
         add_generation_options(cmd, o, true);
       },
       [&] { return t::run_chat(c.ctx, c.chat); }},

      {"kernel", "run one kernel on given shapes: checked against its CPU reference, timed with "
                 "timestamp queries",
       [&](CLI::App& cmd) {
         t::KernelOptions& o = c.kernel;
         cmd.add_option("op", o.op, "kernel")->required()->check(CLI::IsMember(vkf::op_names(true)));
         cmd.add_option("--variant", o.variant, "variant name, or all (default: the engine's pick)");
         cmd.add_option("--dtype", o.dtype, "storage of weights, tables or K/V: f32 or f16 (gemm, embedding: also q8_0, q4_0, q4_1, q4_k, q6_k)");
         cmd.add_option("--act", o.act, "gemm activation: none, relu, gelu, gelu_tanh, silu, tanh");
         cmd.add_option("--bias", o.shape.bias, "gemm: add a bias (default true)");
         cmd.add_flag("--residual", o.shape.residual, "gemm, layernorm: fused residual add");
         add_shape_options(cmd, o);
         cmd.add_option("--warmup", o.warmup, "untimed runs first");
         cmd.add_option("--repeat", o.repeat, "timed runs");
         cmd.add_flag("--no-check", c.kernel_no_check, "skip the CPU reference check");
       },
       [&] {
         c.kernel.check = !c.kernel_no_check;
         return run_kernel_command(c.ctx, c.kernel);
       }},

      // `bench` groups the benchmarks: `bench ops` (kernels) and `bench model` (whole models).
      {"bench", "benchmarks, reported against the device's measured roofline", nullptr, nullptr},

      {"bench ops", "time every kernel variant at the standard (or given) shapes, each checked against its "
                    "CPU reference, as a % of the roofline; OpenBLAS as the GEMM baseline",
       [&](CLI::App& cmd) {
         t::BenchOpsOptions& o = c.bench_ops;
         o.base.shape.bias = false;  // plain Y = X·Wᵀ, the same product OpenBLAS computes
         cmd.add_option("--op", o.ops, "kernels to run, or all (default)")->check(CLI::IsMember(t::bench_op_names()));
         c.bench_shape_options = add_shape_options(cmd, o.base);
         cmd.add_option("--shape", o.shapes, "shape(s) instead of the standard ones: MxNxK, MxN, or "
                        "key=value,... (m n k batch heads head_dim q_len kv_len mask topk dtype); repeatable");
         cmd.add_option("--variant", o.base.variant, "variant name, or all (default: the engine's pick)");
         add_precision(cmd, o.precision, "storage of weights, tables or K/V: fp32 or fp16 (default: each standard shape's own)");
         cmd.add_option("--warmup", o.base.warmup, "untimed runs first");
         cmd.add_option("--repeat", o.base.repeat, "timed runs");
         cmd.add_option("--json", o.json, "write the results as JSON to this file (default: none)");
         cmd.add_option("--svg", o.svg, "write a roofline chart (SVG) to this file (default: none)");
         cmd.add_flag("--no-check", c.bench_no_check, "skip the CPU reference checks");
         cmd.add_flag("--remeasure-peak", o.remeasure_peak, "measure the device peak again, ignoring the cache");
       },
       [&] {
         t::BenchOpsOptions& o = c.bench_ops;
         check_bench_file(o.json, "--json"), check_bench_file(o.svg, "--svg");
         o.base.check = !c.bench_no_check;
         o.compare_tuning = c.ctx.tuning == "compare";
         for (auto* opt : c.bench_shape_options) o.shape_given = o.shape_given || opt->count() > 0;
         return t::run_bench_ops(c.ctx, o);
       }},

      {"pipelines", "create and run once every kernel variant, and report the time: the first-use cost "
                    "that the pipeline cache (and the driver's own shader cache) saves on the next start",
       [](CLI::App&) {}, [&] { return run_pipelines(c.ctx); }},

      {"profile", "time a forward pass and a decode step (with the KV cache and without) on random ids",
       [&](CLI::App& cmd) {
         add_workload(cmd, c, c.profile, "", "timed forward passes");
       },
       [&] { return t::run_profile(c.ctx, c.profile); }},

      {"bench model", "device time per layer and per op of a forward pass and a decode step (timestamp "
                      "queries), wall times, tokens/s, submissions, cache speedup; on random ids",
       [&](CLI::App& cmd) {
         t::BenchModelOptions& o = c.bench_model;
         add_workload(cmd, c, o, ", 0 allowed", "runs; figures are medians");
         cmd.add_option("--json", o.json, "write the figures as JSON to this file (default: none)");
         cmd.add_option("--svg", o.svg, "bar chart of the forward pass (and FILE-step.svg of the decode step; default: none)");
       },
       [&] {
         check_bench_file(c.bench_model.json, "--json"), check_bench_file(c.bench_model.svg, "--svg");
         return t::run_bench_model(c.ctx, c.bench_model);
       }},

      {"tune", "measure each tunable kernel's configurations on this device (each checked against its CPU "
               "reference) and keep the fastest in the tuning database",
       [&](CLI::App& cmd) {
         t::TuneOptions& o = c.tune;
         cmd.add_option("--op", o.ops, "ops to tune (default: every tunable op)");
         cmd.add_option("--shape", o.shapes, "shapes as bench ops takes them (default: each op's standard shapes)");
         add_model(cmd, c, o.model.model_dir, "tune the shapes this model runs instead")->required(false);
         add_precision(cmd, o.model.precision, "--model's weight storage: fp32, fp16, q8_0, q4_0 or q4_1");
         cmd.add_option("--batch", o.model.batch, "--model's batch");
         cmd.add_option("--src-len", o.model.src_len, "--model's source (or prompt) length");
         cmd.add_option("--tgt-len", o.model.tgt_len, "--model's target length (decode steps up to it are tuned too)");
         cmd.add_option("--budget-s", o.budget_s, "stop searching after this many seconds (default 600)");
         cmd.add_option("--repeat", o.repeat, "timed runs per configuration; the median counts (default 7)");
         cmd.add_option("--db", o.db, "database file to update (default: --tuning's, else the cache directory's)");
       },
       [&] { return t::run_tune(c.ctx, c.tune); }},

      {"tokenize", "print the ids of texts under a model's tokenizer (or the text of ids)",
       [&](CLI::App& cmd) {
         t::TokenizeOptions& o = c.tokenize;
         add_model(cmd, c, o.model_dir, "model directory (tokenizer.json, vocab.txt, or vocab.json + merges.txt)");
         add_texts(cmd, c, "texts", o.texts, "texts (UTF-8); put -- before them if one starts with -", o.input,
                   "file of texts (a JSON array, or one per line; - for stdin), tokenized first");
         add_json(cmd, o.json, "print [[ids...], ...] instead of one line of ids per text");
         cmd.add_flag("--tokens", o.tokens, "print the tokens too (a JSON array after each line of ids; "
                                            "with --json, [{\"ids\": [...], \"tokens\": [...]}, ...])");
         cmd.add_flag("--decode", o.decode, "the texts are id lists (\"5 17 42\" or \"5,17,42\"): print their text");
         cmd.add_flag("--no-special", o.no_special, "encode without the special tokens ([CLS], <s>, ...)");
         cmd.add_flag("--keep-special", o.keep_special, "with --decode: keep the special tokens in the text");
         cmd.add_option("--max-length", o.max_length, "at most N ids per text, special tokens included (truncation)");
       },
       [&] { return t::run_tokenize(c.tokenize); }},

      {"embed", "sentence embeddings (USE lite, sentence-transformers and HF encoders): cosine similarities, JSON or .npy",
       [&](CLI::App& cmd) {
         t::EmbedOptions& o = c.embed;
         add_model(cmd, c, o.model_dir, "model directory (config.json, model.safetensors, tokenizer.json)");
         add_texts(cmd, c, "sentences", o.sentences, "sentences (UTF-8); put -- before one that starts with -", o.input,
                   "file of sentences (a JSON array, or one per line; - for stdin), embedded first");
         cmd.add_option("--ids", o.ids, "comma-separated token ids instead of sentences; repeat per sequence");
         add_precision(cmd, o.precision);
         cmd.add_option("--out", o.out, "write the embeddings as float32 [n, d] .npy (- for stdout; default: none)");
         cmd.add_option("--repeat", o.repeat, "embed N times: time of the first call and median of the others");
         cmd.add_flag("--profile", o.profile, "then print the device time of one more call, by op");
         add_json(cmd, o.json, "print {\"embeddings\": [[...], ...]} instead of the similarity table");
         cmd.add_option("--batch-size", o.batch_size, "texts per submission (default 64)");
         cmd.add_option("--pooling", o.pooling, "HF encoders: mean, cls, max or mean_sqrt_len (default: the directory's 1_Pooling)");
         cmd.add_flag("--normalize", o.normalize, "HF encoders: L2-normalize (default: as the directory's modules.json says)");
       },
       [&] {
         if (!c.embed.out.empty()) t::check_output_path(c.embed.out, "--out");
         return t::run_embed(c.ctx, c.embed);
       }},

      {"classify", "labels with scores from an HF sequence or token classifier",
       [&](CLI::App& cmd) { add_head_options(cmd, c, c.classify, "labels per text (default 1)"); },
       [&] { return t::run_classify(c.ctx, c.classify); }},

      {"fill-mask", "the likeliest tokens for each mask token of an HF masked LM",
       [&](CLI::App& cmd) { add_head_options(cmd, c, c.fill_mask, "tokens per mask (default 5)"); },
       [&] { return t::run_fill_mask(c.ctx, c.fill_mask); }},

      {"translate", "text to text with an encoder-decoder model and its tokenizer",
       [&](CLI::App& cmd) {
         t::TranslateOptions& o = c.translate;
         add_model(cmd, c, o.model_dir,
                   "model directory (config.json, model.safetensors, tokenizer.json or OPUS-MT's source.spm + vocab.json)");
         add_texts(cmd, c, "text", o.texts, "texts to translate; one output line each, in order", o.input,
                   "file of texts (a JSON array, or one per line; - for stdin), first");
         cmd.add_option("--beam", o.beam, "beam width (1: greedy; default: generation_config.json's num_beams, else 1)");
         cmd.add_option("--max-new-tokens", o.max_new_tokens, "most tokens to generate per text (0, the default: no limit but the model's max_positions)");
         cmd.add_option("--length-penalty", o.length_penalty,
                        "beam score = sum log p / length^this (default: generation_config.json's, else 1)");
         add_precision(cmd, o.precision);
         cmd.add_option("--batch-size", o.batch_size, "texts per padded batch (default 256)");
       },
       [&] { return t::run_translate(c.ctx, c.translate); }},

      {"soak", "many forward passes over alternating shapes and batch sizes: outputs must stay identical, "
               "device memory and RSS must not grow, the validation layer (when on) must stay silent",
       [&](CLI::App& cmd) {
         t::SoakOptions& o = c.soak;
         add_model(cmd, c, o.model_dir);
         cmd.add_option("--iterations", o.iterations, "forward passes after the warm-up");
         cmd.add_option("--shapes", o.shapes, "distinct shapes cycled through");
         add_precision(cmd, o.precision);
         cmd.add_option("--max-rss-growth", o.max_rss_growth_mib, "allowed RSS growth in MiB");
         add_json(cmd, o.json, "print the figures as JSON");
       },
       [&] { return t::run_soak(c.ctx, c.soak); }},

      {"serve", "an HTTP server: OpenAI's /v1/embeddings, /v1/completions, /v1/chat/completions, /v1/models; the Open Inference "
                "Protocol v2 (KServe); /health and Prometheus /metrics (docs/serving.md)",
       [&](CLI::App& cmd) {
         t::ServeOptions& o = c.serve;
         cmd.add_option("--model", o.models, "model directory, or NAME=DIR; repeatable (the name defaults to the directory's)")
             ->required();
         cmd.add_option("--host", o.host, "address to listen on (default 127.0.0.1: this machine only)");
         cmd.add_option("--port", o.port, "port (default 8080; 0: any free port, printed at start)");
         cmd.add_option("--api-key", o.api_key, "require \"Authorization: Bearer KEY\" (all but the health checks)");
         add_precision(cmd, o.precision);
         add_kv_cache(cmd, o.kv_cache);
         cmd.add_option("--threads", o.threads, "requests handled at once, 1 to 256 (default 16); idle or slow connections hold none");
         cmd.add_option("--max-queue", o.max_queue, "requests waiting for the device; beyond: 503 with Retry-After (default 64)");
         cmd.add_option("--max-batch", o.max_batch, "sequences per embedding submission (default 32)");
         cmd.add_option("--batch-window-ms", o.batch_window_ms, "how long an embedding request waits for others to batch with (default 5)");
         cmd.add_option("--max-decode-batch", o.max_decode_batch, "sequences generated together, joining and leaving between steps (default 8; 0: one request at a time)");
         cmd.add_option("--max-body-kb", o.max_body_kb, "largest request body in KiB; beyond: 413 (default 1024)");
         cmd.add_option("--max-inputs", o.max_inputs, "texts (or prompts × n) per request (default 256)");
         cmd.add_option("--max-tokens", o.max_tokens, "largest max_tokens a completion may ask (default 512)");
         cmd.add_option("--timeout-s", o.timeout_s, "a request not answered within this gets 504 (default 600)");
         cmd.add_option("--request-timeout-s", o.request_timeout_s,
                        "a request's headers and body must arrive within this, else 408; idle kept-alive connections close after it (default 10)");
         cmd.add_option("--max-connections", o.max_connections, "connections open at once; beyond: 503 and close (default 512)");
       },
       [&] { return t::run_serve(c.ctx, c.serve); }},
  };
}

/// Adds the table's subcommands to `app`; returns each row's CLI11 subcommand.
std::vector<CLI::App*> add_commands(CLI::App& app, const std::vector<Command>& table) {
  std::vector<CLI::App*> subs;
  for (const Command& cmd : table) {
    const std::string name = cmd.name;
    const size_t space = name.find(' ');
    CLI::App* parent = space == std::string::npos ? &app : app.get_subcommand(name.substr(0, space));
    CLI::App* sub = parent->add_subcommand(name.substr(space == std::string::npos ? 0 : space + 1), cmd.help);
    if (cmd.options) cmd.options(*sub);
    else sub->require_subcommand(1);  // a group: one of its subcommands
    subs.push_back(sub);
  }
  return subs;
}

int run(int argc, char** argv);

}  // namespace

int main(int argc, char** argv) {
  vkf::tools::install_output_cleanup();
  const int rc = run(argc, argv);
  if (rc != 0) {  // its error is said; a lost stdout would be a second line
    std::fflush(stdout);
    return rc;
  }
  return vkf::tools::finish_stdout();
}

namespace {

int run(int argc, char** argv) {
  CLI::App app{"vkformer: Transformer inference in Vulkan compute shaders"};
  app.require_subcommand(1);
  app.option_defaults()->always_capture_default();  // --help shows every default
  app.set_version_flag("--version", std::string("vkformer ") + VKF_VERSION + " (" + vkf_git_revision() + ")");
  app.fallthrough();  // --device and the other context options work after the subcommand too
  Cli c;
  add_device_options(app, c);
  const std::vector<Command> table = command_table(c);
  const std::vector<CLI::App*> subs = add_commands(app, table);
  add_value_checks(&app);
  try {
    std::vector<std::string> args = escape_raw_args(argc, argv);
    std::vector<char*> arg_ptrs;
    for (std::string& a : args) arg_ptrs.push_back(a.data());
    app.parse(argc, arg_ptrs.data());
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, and exit 2 for every usage error (CLI11's own codes are 104-114).
    std::string what = unmarked(e.what());
    for (char& ch : what)
      if (ch == '\n') ch = ' ';
    std::fprintf(stderr, "vkformer: error: %s (see vkformer --help)\n", vkf::tools::printable(what).c_str());
    return 2;
  }
  if (c.quiet) c.ctx.verbose = false;
  try {
    // What each command reads may not be overwritten by what it writes.
    for (const std::string* p : c.inputs) vkf::tools::add_input_path(*p);
    for (size_t i = 0; i < table.size(); ++i)
      if (*subs[i] && table[i].run) return table[i].run();
  } catch (const vkf::tools::UsageError& e) {
    std::fprintf(stderr, "vkformer: error: %s\n", vkf::tools::printable(e.what()).c_str());
    return 2;
  } catch (const vkf::Error& e) {
    std::fprintf(stderr, "vkformer: error: %s\n", vkf::tools::printable(e.what()).c_str());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "vkformer: error: out of host memory (the input or an option asks for more than this machine has)\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vkformer: error: unexpected: %s\n", vkf::tools::printable(e.what()).c_str());
    return 1;
  }
  return 0;
}

}  // namespace
