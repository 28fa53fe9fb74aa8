// The vkformer command line. CLI11 lives only in this file: it is slow to compile.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "bench_ops.hpp"
#include "kernel_bench.hpp"
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

// Every unsigned option: "-1" is a usage error (strtoull would wrap it to 2^64 - 1).
const CLI::Validator kNotNegative(
    [](std::string& s) -> std::string {
      const size_t first = s.find_first_not_of(" \t");
      return first != std::string::npos && s[first] == '-' ? "must not be negative, got " + s : "";
    },
    "");

/// Adds kFinite to every floating-point option of `app` and its subcommands,
/// kNotNegative to every unsigned one, and drops the "=[]" --help would show
/// for list options without a default.
void add_value_checks(CLI::App* app) {
  for (CLI::Option* opt : app->get_options()) {
    const std::string type = opt->get_type_name();
    if (type.find("FLOAT") != std::string::npos) opt->check(kFinite);
    if (type.find("UINT") != std::string::npos) opt->check(kNotNegative);
    if (opt->get_default_str() == "[]") opt->default_str("");
  }
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) add_value_checks(sub);
}

int run(int argc, char** argv);

}  // namespace

int main(int argc, char** argv) {
  vkf::tools::install_output_cleanup();
  const int rc = run(argc, argv);
  const int out = vkf::tools::finish_stdout();
  return rc ? rc : out;
}

namespace {

int run(int argc, char** argv) {
  CLI::App app{"vkformer: Transformer inference in Vulkan compute shaders"};
  app.require_subcommand(1);
  app.option_defaults()->always_capture_default();  // --help shows every default
  app.set_version_flag("--version", std::string("vkformer ") + VKF_VERSION + " (" + vkf_git_revision() + ")");
  app.fallthrough();  // --device and the other context options work after the subcommand too
  vkf::ContextOptions ctx_opts;
  app.add_option("--device", ctx_opts.device,
                 "device index or name substring (default: VKFORMER_DEVICE, else the best)");
  app.add_option("--device-profile", ctx_opts.device_profile,
                 "clamp what the engine may use: full, min, no-fp16, no-subgroup, or several joined by "
                 "commas (default: VKFORMER_DEVICE_PROFILE, else full)");
  app.add_flag("--no-subgroups", ctx_opts.disable_subgroups, "the same as adding no-subgroup to the profile");
  app.add_flag("--no-fp16", ctx_opts.disable_fp16, "the same as adding no-fp16 to the profile");
  bool quiet = false;
  app.add_flag("-q,--quiet", quiet, "do not print the device line on stderr");
  app.add_option("--max-dispatches-per-submit", ctx_opts.max_dispatches_per_submit,
                 "split longer recordings into several queue submissions (default: "
                 "VKFORMER_MAX_DISPATCHES_PER_SUBMIT, else never)");

  app.add_option("--tuning", ctx_opts.tuning,
                 "tuned kernel configurations: off, auto (the cache directory's database) or a database file; "
                 "bench ops and bench model also take compare (default: VKFORMER_TUNING, else auto)");

  bool devices_json = false;
  auto* devices = app.add_subcommand("devices", "list Vulkan devices, their limits, and which one is picked");
  devices->add_flag("--json", devices_json, "print JSON");

  vkf::tools::ModelRunOptions mo;
  auto* forward = app.add_subcommand("forward", "run the whole stack on a batch and write the output as .npy");
  forward->add_option("--model", mo.model_dir, "model directory (config.json + model.safetensors)")->required();
  forward->add_option("--src-ids", mo.src_ids, "comma-separated source ids; repeat for each sequence")->required();
  forward->add_option("--precision", mo.precision, "weight storage: fp32 or fp16");
  forward->add_option("--tgt-ids", mo.tgt_ids, "comma-separated target ids (enc-dec models), one per source (default: the decoder start token alone)");
  forward->add_option("--out", mo.out, "output .npy: logits, or the last hidden state (- for stdout)")->required();
  forward->add_option("--type-ids", mo.type_ids, "comma-separated token types (BERT), one per --src-ids; default 0");
  forward->add_option("--output", mo.output, "HF encoders: hidden (last hidden state) or pooler; default: the head's logits");

  vkf::tools::GenerateCliOptions go;
  auto* generate = app.add_subcommand(
      "generate", "continue prompts (ids, or text with the directory's tokenizer) with the KV cache: greedy, beam "
                  "search or sampling; defaults from generation_config.json");
  generate->add_option("--model", go.model_dir, "model directory (config.json + model.safetensors)")->required();
  generate->add_option("--src-ids", go.src_ids, "comma-separated prompt ids; repeat for each sequence");
  generate->add_option("--prompt", go.prompts, "prompt text (needs a tokenizer); repeatable");
  generate->add_option("texts", go.texts, "more prompts; put -- before one that starts with -");
  generate->add_option("--input", go.input, "file of prompts (a JSON array, or one per line; - for stdin)");
  generate->add_option("--precision", go.precision, "weight storage: fp32 or fp16");
  generate->add_option("--beam", go.beam, "beam width (1: greedy or sampling; default: generation_config.json's num_beams, else 1)");
  generate->add_option("--max-new-tokens", go.max_new_tokens,
                       "most tokens to generate per sequence (default: generation_config.json's, else 32; "
                       "0: no limit but the model's positions)");
  generate->add_option("--length-penalty", go.length_penalty,
                       "beam score = sum log p / length^this (default: generation_config.json's, else 1)");
  generate->add_flag("--do-sample", go.do_sample, "sample from the processed distribution instead of greedy");
  generate->add_flag("--greedy", go.greedy, "greedy (or beam) even if generation_config.json says do_sample");
  generate->add_option("--temperature", go.temperature, "sampling: divide the logits by this (> 0; default: generation_config.json's, else 1)");
  generate->add_option("--top-k", go.top_k, "sampling: keep the k likeliest tokens (0: off; default: generation_config.json's, else 50, as HF)");
  generate->add_option("--top-p", go.top_p, "sampling: nucleus, in (0, 1] (1: off; default: generation_config.json's, else 1)");
  generate->add_option("--min-p", go.min_p, "sampling: drop tokens below min-p x the top probability (0: off; default: generation_config.json's, else 0)");
  generate->add_option("--repetition-penalty", go.repetition_penalty,
                       "divide (or multiply, if negative) the logits of tokens already in the sequence (1: off; default: "
                       "generation_config.json's, else 1)");
  generate->add_option("--no-repeat-ngram-size", go.no_repeat_ngram_size, "never repeat an n-gram of this size (0: off; default: generation_config.json's, else 0)");
  generate->add_option("--seed", go.seed, "sampling: seed of the host generator (default 0)");
  generate->add_option("--stop", go.stops, "stop when this text appears; it is not printed (repeatable)");
  generate->add_flag("--stream", go.stream, "print the text as it is generated (one prompt)");
  generate->add_flag("--no-cache", go.no_cache, "recompute the whole prefix every step (slow; for checking)");
  generate->add_flag("--json", go.json, "print {\"sequences\": [[...], ...], \"texts\": [...]}");

  // Shape options shared by `kernel` and `bench ops`; returns them so bench can tell whether any was given.
  auto add_shape_options = [](CLI::App* c, vkf::tools::KernelOptions& k) {
    return std::vector<CLI::Option*>{
        c->add_option("--m", k.shape.m, "gemm M (tokens); rows for layernorm, add, topk"),
        c->add_option("--n", k.shape.n, "gemm N (outputs); row length for layernorm, add, topk; embedding vocab; copy_rows width"),
        c->add_option("--k", k.shape.k, "gemm K (inputs); embedding d"),
        c->add_option("--batch", k.shape.batch, "attention / embedding / copy_rows batch"),
        c->add_option("--heads", k.shape.heads, "attention heads"),
        c->add_option("--head-dim", k.shape.head_dim, "attention head dim"),
        c->add_option("--q-len", k.shape.q_len, "query length (embedding: sequence length; copy_rows: rows copied)"),
        c->add_option("--kv-len", k.shape.kv_len, "key/value length (copy_rows: rows of the destination cache)"),
        c->add_option("--mask", k.shape.mask, "attention mask: none, padding, causal, both"),
        c->add_option("--topk", k.shape.topk, "k for topk")};
  };

  vkf::tools::KernelOptions ko;
  auto* kernel = app.add_subcommand(
      "kernel", "run one kernel on given shapes: checked against its CPU reference, timed with "
                "timestamp queries");
  kernel->add_option("op", ko.op, "kernel")->required()->check(CLI::IsMember(vkf::op_names(true)));
  kernel->add_option("--variant", ko.variant, "variant name, or all (default: the engine's pick)");
  kernel->add_option("--dtype", ko.dtype, "storage of weights, tables or K/V: f32 or f16");
  kernel->add_option("--act", ko.act, "gemm activation: none, relu, gelu, gelu_tanh, silu, tanh");
  kernel->add_option("--bias", ko.shape.bias, "gemm: add a bias (default true)");
  kernel->add_flag("--residual", ko.shape.residual, "gemm, layernorm: fused residual add");
  add_shape_options(kernel, ko);
  kernel->add_option("--warmup", ko.warmup, "untimed runs first");
  kernel->add_option("--repeat", ko.repeat, "timed runs");
  bool no_check = false;
  kernel->add_flag("--no-check", no_check, "skip the CPU reference check");


  // `bench` groups the benchmarks: `bench ops` (kernels) and `bench model` (whole models).
  auto* bench = app.add_subcommand("bench", "benchmarks, reported against the device's measured roofline");
  bench->require_subcommand(1);
  vkf::tools::BenchOpsOptions bo;
  bo.base.shape.bias = false;  // plain Y = X·Wᵀ, the same product OpenBLAS computes
  auto* bench_ops = bench->add_subcommand(
      "ops", "time every kernel variant at the standard (or given) shapes, each checked against its "
             "CPU reference, as a % of the roofline; OpenBLAS as the GEMM baseline");
  bench_ops->add_option("--op", bo.ops, "kernels to run, or all (default)")
      ->check(CLI::IsMember(vkf::tools::bench_op_names()));
  auto shape_opts = add_shape_options(bench_ops, bo.base);
  bench_ops->add_option("--shape", bo.shapes, "shape(s) instead of the standard ones: MxNxK, MxN, or "
                        "key=value,... (m n k batch heads head_dim q_len kv_len mask topk dtype); repeatable");
  bench_ops->add_option("--variant", bo.base.variant, "variant name, or all (default: the engine's pick)");
  bench_ops->add_option("--precision", bo.precision, "storage of weights, tables or K/V: fp32 or fp16 "
                        "(default: each standard shape's own)");
  bench_ops->add_option("--warmup", bo.base.warmup, "untimed runs first");
  bench_ops->add_option("--repeat", bo.base.repeat, "timed runs");
  bench_ops->add_option("--json", bo.json, "write the results as JSON to this file (default: none)");
  bench_ops->add_option("--svg", bo.svg, "write a roofline chart (SVG) to this file (default: none)");
  bool bench_no_check = false;
  bench_ops->add_flag("--no-check", bench_no_check, "skip the CPU reference checks");
  bench_ops->add_flag("--remeasure-peak", bo.remeasure_peak, "measure the device peak again, ignoring the cache");

  auto* warm = app.add_subcommand(
      "pipelines", "create and run once every kernel variant, and report the time: the first-use cost "
                   "that the pipeline cache (and the driver's own shader cache) saves on the next start");

  vkf::tools::ProfileOptions po;
  auto* profile = app.add_subcommand(
      "profile", "time a forward pass and a decode step (with the KV cache and without) on random ids");
  profile->add_option("--model", po.model_dir, "model directory")->required();
  profile->add_option("--precision", po.precision, "weight storage: fp32 or fp16");
  profile->add_option("--batch", po.batch, "sequences");
  profile->add_option("--src-len", po.src_len, "source (or prompt) length");
  profile->add_option("--tgt-len", po.tgt_len, "target length; the decode step is at its last position, tgt-len - 1 (decoder-only: at src-len + tgt-len)");
  profile->add_option("--repeat", po.repeat, "timed forward passes");

  vkf::tools::BenchModelOptions bmo;
  auto* bench_model = bench->add_subcommand(
      "model", "device time per layer and per op of a forward pass and a decode step (timestamp "
               "queries), wall times, tokens/s, submissions, cache speedup; on random ids");
  bench_model->add_option("--model", bmo.model_dir, "model directory")->required();
  bench_model->add_option("--precision", bmo.precision, "weight storage: fp32 or fp16");
  bench_model->add_option("--batch", bmo.batch, "sequences");
  bench_model->add_option("--src-len", bmo.src_len, "source (or prompt) length");
  bench_model->add_option("--tgt-len", bmo.tgt_len,
                          "target length; the decode step is at its last position, tgt-len - 1 (decoder-only: at src-len + tgt-len, 0 allowed)");
  bench_model->add_option("--repeat", bmo.repeat, "runs; figures are medians");
  bench_model->add_option("--json", bmo.json, "write the figures as JSON to this file (default: none)");
  bench_model->add_option("--svg", bmo.svg, "bar chart of the forward pass (and FILE-step.svg of the decode step; default: none)");

  vkf::tools::TuneOptions tuo;
  auto* tune = app.add_subcommand(
      "tune", "measure each tunable kernel's configurations on this device (each checked against its CPU "
              "reference) and keep the fastest in the tuning database");
  tune->add_option("--op", tuo.ops, "ops to tune (default: every tunable op)");
  tune->add_option("--shape", tuo.shapes, "shapes as bench ops takes them (default: each op's standard shapes)");
  tune->add_option("--model", tuo.model.model_dir, "tune the shapes this model runs instead");
  tune->add_option("--precision", tuo.model.precision, "--model's weight storage: fp32 or fp16");
  tune->add_option("--batch", tuo.model.batch, "--model's batch");
  tune->add_option("--src-len", tuo.model.src_len, "--model's source (or prompt) length");
  tune->add_option("--tgt-len", tuo.model.tgt_len, "--model's target length (decode steps up to it are tuned too)");
  tune->add_option("--budget-s", tuo.budget_s, "stop searching after this many seconds (default 600)");
  tune->add_option("--repeat", tuo.repeat, "timed runs per configuration; the median counts (default 7)");
  tune->add_option("--db", tuo.db, "database file to update (default: --tuning's, else the cache directory's)");

  vkf::tools::TokenizeOptions tko;
  auto* tokenize = app.add_subcommand("tokenize", "print the ids of texts under a model's tokenizer (or the text of ids)");
  tokenize->add_option("--model", tko.model_dir, "model directory (tokenizer.json, vocab.txt, or vocab.json + merges.txt)")
      ->required();
  tokenize->add_option("texts", tko.texts, "texts (UTF-8); put -- before them if one starts with -");
  tokenize->add_option("--input", tko.input, "file of texts (a JSON array, or one per line; - for stdin), tokenized first");
  tokenize->add_flag("--json", tko.json, "print [[ids...], ...] instead of one line of ids per text");
  tokenize->add_flag("--tokens", tko.tokens, "print the tokens too (a JSON array after each line of ids; "
                                             "with --json, [{\"ids\": [...], \"tokens\": [...]}, ...])");
  tokenize->add_flag("--decode", tko.decode, "the texts are id lists (\"5 17 42\" or \"5,17,42\"): print their text");
  tokenize->add_flag("--no-special", tko.no_special, "encode without the special tokens ([CLS], <s>, ...)");
  tokenize->add_flag("--keep-special", tko.keep_special, "with --decode: keep the special tokens in the text");
  tokenize->add_option("--max-length", tko.max_length, "at most N ids per text, special tokens included (truncation)");

  vkf::tools::EmbedOptions eo;
  auto* embed = app.add_subcommand("embed", "sentence embeddings (USE lite, sentence-transformers and HF encoders): cosine similarities, JSON or .npy");
  embed->add_option("--model", eo.model_dir, "model directory (config.json, model.safetensors, tokenizer.json)")->required();
  embed->add_option("sentences", eo.sentences, "sentences (UTF-8); put -- before one that starts with -");
  embed->add_option("--input", eo.input, "file of sentences (a JSON array, or one per line; - for stdin), embedded first");
  embed->add_option("--ids", eo.ids, "comma-separated token ids instead of sentences; repeat per sequence");
  embed->add_option("--precision", eo.precision, "weight storage: fp32 or fp16");
  embed->add_option("--out", eo.out, "write the embeddings as float32 [n, d] .npy (- for stdout; default: none)");
  embed->add_option("--repeat", eo.repeat, "embed N times: time of the first call and median of the others");
  embed->add_flag("--profile", eo.profile, "then print the device time of one more call, by op");
  embed->add_flag("--json", eo.json, "print {\"embeddings\": [[...], ...]} instead of the similarity table");
  embed->add_option("--batch-size", eo.batch_size, "texts per submission (default 64)");
  embed->add_option("--pooling", eo.pooling, "HF encoders: mean, cls, max or mean_sqrt_len (default: the directory's 1_Pooling)");
  embed->add_flag("--normalize", eo.normalize, "HF encoders: L2-normalize (default: as the directory's modules.json says)");
  vkf::tools::TranslateOptions to;
  vkf::tools::HeadOptions co, fo;
  auto add_head_options = [&](CLI::App* c, vkf::tools::HeadOptions& h, const char* k_help) {
    c->add_option("--model", h.model_dir, "HF model directory (config.json, model.safetensors, tokenizer.json)")->required();
    c->add_option("texts", h.texts, "texts (UTF-8); put -- before one that starts with -");
    c->add_option("--input", h.input, "file of texts (a JSON array, or one per line; - for stdin), first");
    c->add_option("--precision", h.precision, "weight storage: fp32 or fp16");
    c->add_option("--top-k", h.top_k, k_help);
    c->add_option("--batch-size", h.batch_size, "texts per submission (default 32)");
    c->add_flag("--json", h.json, "print JSON as HF's pipeline returns it");
  };
  auto* classify = app.add_subcommand("classify", "labels with scores from an HF sequence or token classifier");
  add_head_options(classify, co, "labels per text (default 1)");
  auto* fill_mask = app.add_subcommand("fill-mask", "the likeliest tokens for each mask token of an HF masked LM");
  add_head_options(fill_mask, fo, "tokens per mask (default 5)");

  auto* translate = app.add_subcommand("translate", "text to text with an encoder-decoder model and its tokenizer");
  translate->add_option("--model", to.model_dir,
                        "model directory (config.json, model.safetensors, tokenizer.json or OPUS-MT's source.spm + vocab.json)")->required();
  translate->add_option("text", to.texts, "texts to translate; one output line each, in order");
  translate->add_option("--input", to.input, "file of texts (a JSON array, or one per line; - for stdin), first");
  translate->add_option("--beam", to.beam, "beam width (1: greedy; default: generation_config.json's num_beams, else 1)");
  translate->add_option("--max-new-tokens", to.max_new_tokens, "most tokens to generate per text (0, the default: no limit but the model's max_positions)");
  translate->add_option("--length-penalty", to.length_penalty,
                        "beam score = sum log p / length^this (default: generation_config.json's, else 1)");
  translate->add_option("--precision", to.precision, "weight storage: fp32 or fp16");
  translate->add_option("--batch-size", to.batch_size, "texts per padded batch (default 256)");
  vkf::tools::SoakOptions so;
  auto* soak = app.add_subcommand(
      "soak", "many forward passes over alternating shapes and batch sizes: outputs must stay identical, "
              "device memory and RSS must not grow, the validation layer (when on) must stay silent");
  soak->add_option("--model", so.model_dir, "model directory")->required();
  soak->add_option("--iterations", so.iterations, "forward passes after the warm-up");
  soak->add_option("--shapes", so.shapes, "distinct shapes cycled through");
  soak->add_option("--precision", so.precision, "weight storage: fp32 or fp16");
  soak->add_option("--max-rss-growth", so.max_rss_growth_mib, "allowed RSS growth in MiB");
  soak->add_flag("--json", so.json, "print the figures as JSON");

  vkf::tools::ServeOptions sv;
  auto* serve = app.add_subcommand(
      "serve", "an HTTP server: OpenAI's /v1/embeddings, /v1/completions, /v1/models; the Open Inference "
               "Protocol v2 (KServe); /health and Prometheus /metrics (docs/serving.md)");
  serve->add_option("--model", sv.models, "model directory, or NAME=DIR; repeatable (the name defaults to the directory's)")
      ->required();
  serve->add_option("--host", sv.host, "address to listen on (default 127.0.0.1: this machine only)");
  serve->add_option("--port", sv.port, "port (default 8080; 0: any free port, printed at start)");
  serve->add_option("--api-key", sv.api_key, "require \"Authorization: Bearer KEY\" (all but the health checks)");
  serve->add_option("--precision", sv.precision, "weight storage: fp32 or fp16");
  serve->add_option("--threads", sv.threads, "HTTP connections served at once (default 16)");
  serve->add_option("--max-queue", sv.max_queue, "requests waiting for the device; beyond: 503 with Retry-After (default 64)");
  serve->add_option("--max-batch", sv.max_batch, "sequences per embedding submission (default 32)");
  serve->add_option("--batch-window-ms", sv.batch_window_ms, "how long an embedding request waits for others to batch with (default 5)");
  serve->add_option("--max-decode-batch", sv.max_decode_batch, "sequences generated together, joining and leaving between steps (default 8; 0: one request at a time)");
  serve->add_option("--max-body-kb", sv.max_body_kb, "largest request body in KiB; beyond: 413 (default 1024)");
  serve->add_option("--max-inputs", sv.max_inputs, "texts (or prompts × n) per request (default 256)");
  serve->add_option("--max-tokens", sv.max_tokens, "largest max_tokens a completion may ask (default 512)");
  serve->add_option("--timeout-s", sv.timeout_s, "a request not answered within this gets 504 (default 600)");

  add_value_checks(&app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, and exit 2 for every usage error (CLI11's own codes are 104-114).
    std::string what = e.what();
    for (char& c : what)
      if (c == '\n') c = ' ';
    std::fprintf(stderr, "vkformer: error: %s (see vkformer --help)\n", vkf::tools::printable(what).c_str());
    return 2;
  }
  if (quiet) ctx_opts.verbose = false;
  try {
    // What each command reads may not be overwritten by what it writes.
    for (const std::string& p : {mo.model_dir, go.model_dir, go.input, po.model_dir, bmo.model_dir, tko.model_dir,
                                 tko.input, eo.model_dir, eo.input, co.model_dir, co.input, fo.model_dir, fo.input,
                                 to.model_dir, to.input, so.model_dir})
      vkf::tools::add_input_path(p);
    if (*forward) vkf::tools::check_output_path(mo.out, "--out");
    if (*embed && !eo.out.empty()) vkf::tools::check_output_path(eo.out, "--out");
    // bench prints its table on stdout: its files need names.
    auto bench_file = [](const std::string& path, const char* option) {
      if (path == "-") throw vkf::tools::UsageError(std::string("bench ") + option + " needs a file name (its table goes to stdout)");
      if (!path.empty()) vkf::tools::check_output_path(path, option);
    };
    if (*bench_ops) bench_file(bo.json, "--json"), bench_file(bo.svg, "--svg");
    if (*bench_model) bench_file(bmo.json, "--json"), bench_file(bmo.svg, "--svg");
    if (*devices) return vkf::tools::run_devices(ctx_opts, devices_json);
    if (*forward) return vkf::tools::run_forward(ctx_opts, mo);
    if (*generate) return vkf::tools::run_generate(ctx_opts, go);
    if (*tokenize) return vkf::tools::run_tokenize(tko);
    if (*embed) return vkf::tools::run_embed(ctx_opts, eo);
    if (*classify) return vkf::tools::run_classify(ctx_opts, co);
    if (*fill_mask) return vkf::tools::run_fill_mask(ctx_opts, fo);
    if (*translate) return vkf::tools::run_translate(ctx_opts, to);
    if (*profile) return vkf::tools::run_profile(ctx_opts, po);
    if (*bench_ops) {
      bo.base.check = !bench_no_check;
      bo.compare_tuning = ctx_opts.tuning == "compare";
      for (auto* opt : shape_opts) bo.shape_given = bo.shape_given || opt->count() > 0;
      return vkf::tools::run_bench_ops(ctx_opts, bo);
    }
    if (*bench_model) return vkf::tools::run_bench_model(ctx_opts, bmo);
    if (*tune) return vkf::tools::run_tune(ctx_opts, tuo);
    if (*soak) return vkf::tools::run_soak(ctx_opts, so);
    if (*serve) return vkf::tools::run_serve(ctx_opts, sv);
    if (*kernel) {
      ko.check = !no_check;
      vkf::Context ctx(ctx_opts);
      auto results = vkf::tools::run_kernel(ctx, ko);
      vkf::tools::print_results(results);
      for (auto& r : results)
        if (!r.passed) return 1;
      return 0;
    }
    if (*warm) {
      auto t0 = std::chrono::steady_clock::now();
      vkf::Context ctx(ctx_opts);
      auto t1 = std::chrono::steady_clock::now();
      size_t n = vkf::tools::create_all_pipelines(ctx);
      auto t2 = std::chrono::steady_clock::now();
      std::printf("context %.1f ms, %zu pipelines in %.1f ms\n",
                  std::chrono::duration<double, std::milli>(t1 - t0).count(), n,
                  std::chrono::duration<double, std::milli>(t2 - t1).count());
      return 0;
    }
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
