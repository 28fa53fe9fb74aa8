// The vkformer command line. CLI11 lives only in this file: it is slow to compile.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>

#include "kernel_bench.hpp"
#include "vkformer/context.hpp"
#include "vkformer/ops.hpp"
#include "vkformer/recorder.hpp"

namespace {

void print_devices() {
  auto devs = vkf::list_devices();
  for (const auto& d : devs)
    std::printf("%u: %s (%s, driver %s)%s\n", d.index, d.name.c_str(), d.type.c_str(),
                d.driver.c_str(), d.index == 0 ? "  <- default" : "");
}

void print_caps(const vkf::Capabilities& c) {
  std::printf("selected: %s (%s, driver %s)\n", c.device_name.c_str(), c.device_type.c_str(),
              c.driver_name.c_str());
  std::printf("  subgroup size %u (arithmetic %s, shuffle %s)\n", c.subgroup_size,
              c.subgroup_arithmetic ? "yes" : "no", c.subgroup_shuffle ? "yes" : "no");
  std::printf("  shared memory %u KiB, max invocations %u, max workgroups %u x %u x %u\n",
              c.max_shared_memory / 1024, c.max_workgroup_invocations, c.max_workgroup_count[0],
              c.max_workgroup_count[1], c.max_workgroup_count[2]);
  std::printf("  maxStorageBufferRange %llu MiB, storage offset alignment %llu\n",
              (unsigned long long)(c.max_storage_buffer_range >> 20),
              (unsigned long long)c.min_storage_buffer_offset_alignment);
  std::printf("  fp16 storage %s, fp16 arithmetic %s, timestamps %s, device-local memory %llu MiB\n",
              c.storage_16bit ? "yes" : "no", c.shader_float16 ? "yes" : "no",
              c.timestamps ? "yes" : "no", (unsigned long long)(c.device_local_bytes >> 20));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vkformer: Transformer inference in Vulkan compute shaders"};
  app.require_subcommand(1);
  vkf::ContextOptions ctx_opts;
  app.add_option("--device", ctx_opts.device,
                 "device index or name substring (default: VKFORMER_DEVICE, else the best)");
  app.add_flag("--no-subgroups", ctx_opts.disable_subgroups, "do not use subgroup operations");
  app.add_flag("--no-fp16", ctx_opts.disable_fp16, "do not use 16-bit storage");

  auto* devices = app.add_subcommand("devices", "list Vulkan devices and what the chosen one offers");

  vkf::tools::KernelOptions ko;
  auto* kernel = app.add_subcommand(
      "kernel", "run one kernel on given shapes: checked against its CPU reference, timed with "
                "timestamp queries");
  kernel->add_option("op", ko.op, "kernel")->required()->check(CLI::IsMember(vkf::tools::kernel_ops()));
  kernel->add_option("--variant", ko.variant, "variant name, or all (default: the engine's pick)");
  kernel->add_option("--dtype", ko.dtype, "storage of weights, tables or K/V: f32 or f16");
  kernel->add_option("--act", ko.act, "gemm activation: none, relu, gelu, gelu_tanh, silu");
  kernel->add_option("--bias", ko.bias, "gemm: add a bias (default true)");
  kernel->add_flag("--residual", ko.residual, "gemm, layernorm: fused residual add");
  kernel->add_option("--m", ko.m, "gemm M (tokens); rows for layernorm, add, topk");
  kernel->add_option("--n", ko.n, "gemm N (outputs); row length for layernorm, add, topk; embedding vocab; copy_rows width");
  kernel->add_option("--k", ko.k, "gemm K (inputs); embedding d");
  kernel->add_option("--batch", ko.batch, "attention / embedding / copy_rows batch");
  kernel->add_option("--heads", ko.heads, "attention heads");
  kernel->add_option("--head-dim", ko.head_dim, "attention head dim");
  kernel->add_option("--q-len", ko.q_len, "query length (embedding: sequence length; copy_rows: rows copied)");
  kernel->add_option("--kv-len", ko.kv_len, "key/value length (copy_rows: rows of the destination cache)");
  kernel->add_option("--mask", ko.mask, "attention mask: none, padding, causal, both");
  kernel->add_option("--topk", ko.topk, "k for topk");
  kernel->add_option("--warmup", ko.warmup, "untimed runs first");
  kernel->add_option("--repeat", ko.repeat, "timed runs");
  bool no_check = false;
  kernel->add_flag("--no-check", no_check, "skip the CPU reference check");

  auto* warm = app.add_subcommand(
      "pipelines", "create and run once every kernel variant, and report the time: the first-use cost "
                   "that the pipeline cache (and the driver's own shader cache) saves on the next start");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*devices) {
      print_devices();
      vkf::Context ctx(ctx_opts);
      print_caps(ctx.caps());
      return 0;
    }
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
  } catch (const vkf::Error& e) {
    std::fprintf(stderr, "vkformer: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vkformer: unexpected error: %s\n", e.what());
    return 2;
  }
  return 0;
}
