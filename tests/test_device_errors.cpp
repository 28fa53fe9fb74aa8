// Errors from the device: a lost device and out-of-memory, made to happen by
// fault injection (the checked-call hook) and by a memory limit. Each becomes
// a vkf::Error that says which call (Model::load, Session::forward, ...) and
// what it was doing; after a device loss every use of the Context says so.
#include <gtest/gtest.h>

#include <cstdlib>

#include "model_writer.hpp"
#include "vk/check.hpp"
#include "vk/context_impl.hpp"
#include "vkformer/session.hpp"

namespace vkf::test {
namespace {

/// Each test gets its own validated context (a lost one cannot be shared) and
/// leaves the fault hook disarmed.
class DeviceErrors : public ::testing::Test {
 protected:
  void TearDown() override {
    fault::set("");
    if (ctx_) EXPECT_EQ(ctx_->validation_messages(), 0u) << ctx_->last_validation_message();
  }
  Context& make_context(uint64_t memory_limit = 0, bool force_staging = false) {
    ContextOptions o;
    o.validation = 1;
    o.verbose = false;
    o.memory_limit_bytes = memory_limit;
    o.force_staging = force_staging;
    ctx_ = std::make_unique<Context>(o);
    return *ctx_;
  }
  static std::string model(const std::string& name) {
    const json cfg = tiny_config(Kind::EncDec);
    return write_model(name, cfg, tiny_weights(cfg));
  }
  std::unique_ptr<Context> ctx_;
};

/// `call` throws a vkf::Error containing every needle.
template <class F>
std::string expect_error_all(F&& call, std::initializer_list<std::string> needles) {
  try {
    call();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const auto& n : needles) EXPECT_NE(what.find(n), std::string::npos) << "lacks \"" << n << "\": " << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "not one line: " << what;
    return what;
  }
  return "";
}

const std::vector<Ids> kSrc = {{3, 4, 5}}, kTgt = {{1, 6}};

TEST_F(DeviceErrors, FaultSpecIsChecked) {
  expect_error([] { fault::set("submit"); }, "VKFORMER_FAULT_INJECT \"submit\": no RESULT");
  expect_error([] { fault::set("frobnicate:oom"); }, "unknown SITE \"frobnicate\"");
  expect_error([] { fault::set("submit:tired"); }, "unknown RESULT \"tired\"");
  expect_error([] { fault::set("alloc:oom:0"); }, "N must be a positive integer");
  expect_error([] { fault::set("alloc:oom:x"); }, "expected SITE:RESULT[:N]");
  fault::set("vkQueueSubmit:VK_ERROR_UNKNOWN:2");  // exact names work too
  fault::set("");
  EXPECT_FALSE(fault::armed);
}

TEST_F(DeviceErrors, DeviceLostInForwardThenEveryCallSaysSo) {
  Context& ctx = make_context();
  const std::string dir = model("lost-forward");
  auto m = Model::load(ctx, dir);
  Session s(m);
  Tensor kept = ctx.tensor({4}, std::vector<float>{1, 2, 3, 4});
  fault::set("submit:device_lost");
  expect_error_all([&] { s.forward(kSrc, kTgt); },
                   {"Session::forward (1 sequence): submitting the forward pass of ",
                    " dispatches: vkQueueSubmit failed: VK_ERROR_DEVICE_LOST (the device was lost"});
  EXPECT_TRUE(ctx.device_lost());
  const std::string lost = "the Vulkan device (" + ctx.caps().device_name + ") was lost earlier";
  expect_error_all([&] { s.forward(kSrc, kTgt); }, {"Session::forward: " + lost, "create a new one"});
  expect_error_all([&] { s.generate(kSrc); }, {"Session::generate: " + lost});
  expect_error_all([&] { Model::load(ctx, dir); }, {"Model::load(" + dir + "): " + lost});
  expect_error_all([&] { ctx.tensor({4}); }, {"tensor: " + lost});
  expect_error_all([&] { ctx.read(kept); }, {"read: " + lost});
  expect_error_all([&] { ctx.write(kept, {0, 0, 0, 0}); }, {"write: " + lost});
  Recorder rec(ctx);
  expect_error_all([&] { add(rec, {&kept, &kept, &kept, ""}); }, {lost});
  expect_error_all([&] { ctx.submit(rec); }, {lost});
  expect_error_all([&] { s.record_forward(rec, kSrc, kTgt); }, {"Session::record_forward: " + lost});
}

// Context is a list of tags, outermost first; a tag already there is not
// added again; what() reads as the tags and the detail joined by ": ".
TEST(VulkanErrorContext, TagsReadOutermostFirstOnce) {
  VulkanError e(VK_ERROR_DEVICE_LOST, "vkQueueSubmit failed: VK_ERROR_DEVICE_LOST");
  e.add_context("submitting the forward pass of 119 dispatches");
  e.add_context("Session::forward (2 sequences)");
  e.add_context("submitting the forward pass of 119 dispatches");
  EXPECT_STREQ(e.what(), "Session::forward (2 sequences): submitting the forward pass of 119 dispatches: "
                         "vkQueueSubmit failed: VK_ERROR_DEVICE_LOST");
  EXPECT_EQ(e.context(), (std::vector<std::string>{"Session::forward (2 sequences)",
                                                   "submitting the forward pass of 119 dispatches"}));
  EXPECT_EQ(e.detail(), "vkQueueSubmit failed: VK_ERROR_DEVICE_LOST");
  EXPECT_EQ(e.result(), VK_ERROR_DEVICE_LOST);

  int described = 0;
  auto tag = [&] {
    ++described;
    return std::string("outer");
  };
  EXPECT_EQ(with_context(tag, [] { return 7; }), 7);
  EXPECT_EQ(described, 0);  // only a failure is described
  try {
    with_context(tag, [&] { rethrow_with_context(e, "inner"); });
    ADD_FAILURE() << "expected a VulkanError";
  } catch (const VulkanError& x) {
    EXPECT_EQ(x.context(), (std::vector<std::string>{"outer", "inner", "Session::forward (2 sequences)",
                                                     "submitting the forward pass of 119 dispatches"}));
    EXPECT_EQ(x.result(), VK_ERROR_DEVICE_LOST);
  }
  EXPECT_EQ(e.context().size(), 2u);  // rethrow_with_context added to a copy
}

TEST_F(DeviceErrors, DeviceLostInEmbed) {
  Context& ctx = make_context();
  auto m = Model::load(ctx, std::string(VKF_MODELS_DIR) + "/use_lite_tiny");
  Session s(m);
  fault::set("submit:device_lost");
  expect_error_all([&] { s.embed({{3, 4, 5}, {6}}); }, {"Session::embed (2 sentences): ", "VK_ERROR_DEVICE_LOST"});
  EXPECT_TRUE(ctx.device_lost());
  expect_error_all([&] { s.embed({{3}}); }, {"Session::embed: the Vulkan device (" + ctx.caps().device_name + ") was lost"});
}

TEST_F(DeviceErrors, DeviceLostWhileWaiting) {
  Context& ctx = make_context();
  auto m = Model::load(ctx, model("lost-wait"));
  Session s(m);
  s.forward(kSrc, kTgt);  // recorded and run once
  fault::set("wait:device_lost");
  expect_error_all([&] { s.forward(kSrc, kTgt); },
                   {"Session::forward (1 sequence): submitting the forward pass",
                    "vkWaitForFences failed: VK_ERROR_DEVICE_LOST"});
  EXPECT_TRUE(ctx.device_lost());
}

TEST_F(DeviceErrors, DeviceLostDuringGeneration) {
  Context& ctx = make_context();
  auto m = Model::load(ctx, model("lost-generate"));
  Session s(m);
  GenerateOptions g;
  g.max_new_tokens = 6;
  g.stop_at_eos = false;
  fault::set("submit:device_lost:3");  // the first pass, a step, then this one
  expect_error_all([&] { s.generate(kSrc, g); },
                   {"Session::generate (1 sequence, beam 1, after ", " decode steps): submitting",
                    "vkQueueSubmit failed: VK_ERROR_DEVICE_LOST"});
  EXPECT_TRUE(ctx.device_lost());
}

TEST_F(DeviceErrors, DeviceLostWhileUploadingAModel) {
  Context& ctx = make_context(0, /*force_staging=*/true);  // uploads are submissions
  const std::string dir = model("lost-load");
  fault::set("submit:device_lost:2");
  expect_error_all([&] { Model::load(ctx, dir); },
                   {"Model::load(" + dir + "): uploading tensor \"", "\" [", "] f32: vkQueueSubmit failed: "
                                                                          "VK_ERROR_DEVICE_LOST"});
  EXPECT_TRUE(ctx.device_lost());
}

TEST_F(DeviceErrors, OutOfMemoryFromTheDriverWhileLoading) {
  Context& ctx = make_context();
  const std::string dir = model("oom-load");
  fault::set("alloc:oom");
  expect_error_all([&] { Model::load(ctx, dir); },
                   {"Model::load(" + dir + "): uploading tensor \"src_embed.weight\" [11, 8] f32: out of device "
                                           "memory: vkAllocateMemory returned VK_ERROR_OUT_OF_DEVICE_MEMORY for "
                                           "a block of 64.0 MiB holding a tensor [11, 8] f32; ",
                    " available (", "device-local heap "});
  // Not fatal: the context works on, and the next load succeeds.
  EXPECT_FALSE(ctx.device_lost());
  auto m = Model::load(ctx, dir);
  EXPECT_EQ(Session(m).forward(kSrc, kTgt).batch, 1u);
}

TEST_F(DeviceErrors, MapFailureCleansUp) {
  Context& ctx = make_context();
  if (!ctx.host_mapped()) GTEST_SKIP() << "device memory is not mapped on this device";
  const uint64_t before = ctx.available_memory();
  fault::set("map:VK_ERROR_MEMORY_MAP_FAILED");
  expect_error_all([&] { ctx.tensor({7, 3}); },
                   {"vkMapMemory failed: VK_ERROR_MEMORY_MAP_FAILED (device memory could not be mapped)"});
  EXPECT_EQ(ctx.available_memory(), before) << "the failed block was freed";
  EXPECT_EQ(ctx.read(ctx.tensor({3}, std::vector<float>{1, 2, 3})), (std::vector<float>{1, 2, 3}));
}

TEST_F(DeviceErrors, DeviceLostInSubmitAsync) {
  Context& ctx = make_context();
  Tensor a = ctx.tensor({5}, std::vector<float>(5, 1.f));
  Tensor out = ctx.tensor({5});
  Recorder rec(ctx);
  add(rec, {&a, &a, &out, ""});
  fault::set("submit:device_lost");
  expect_error_all([&] { ctx.submit_async(rec, {}); }, {"vkQueueSubmit failed: VK_ERROR_DEVICE_LOST"});
  EXPECT_TRUE(ctx.device_lost());
  Recorder again(ctx);
  expect_error_all([&] { ctx.submit_async(again, {}); }, {"submit_async: the Vulkan device"});
}

TEST_F(DeviceErrors, PipelineCreationFailureNamesTheShader) {
  Context& ctx = make_context();
  Tensor a = ctx.tensor({5}, std::vector<float>(5, 1.f));
  Tensor out = ctx.tensor({5});
  Recorder rec(ctx);
  fault::set("pipeline:host_oom");
  expect_error_all([&] { add(rec, {&a, &a, &out, ""}); },
                   {"creating the pipeline add", "vkCreateComputePipelines failed: VK_ERROR_OUT_OF_HOST_MEMORY"});
  EXPECT_FALSE(ctx.device_lost());
}

TEST_F(DeviceErrors, ModelLargerThanTheMemoryLimitIsRefusedBeforeUploading) {
  Context& ctx = make_context(4096);  // the tiny model needs over 12 KiB
  EXPECT_EQ(ctx.available_memory(), 4096u);
  const std::string dir = model("limit-load");
  expect_error_all([&] { Model::load(ctx, dir); },
                   {"Model::load(" + dir + "): out of device memory: the weights need ",
                    " KiB in f32, more than the device can give: 4.0 KiB available (memory limit 4.0 KiB set by "
                    "VKFORMER_MEMORY_LIMIT or ContextOptions"});
  EXPECT_EQ(ctx.available_memory(), 4096u) << "nothing may be uploaded before the check";
  EXPECT_FALSE(ctx.device_lost());
}

TEST_F(DeviceErrors, AHugePositionTableIsRefusedBeforeAllocating) {
  // The file is tiny, but 4e9 sinusoidal positions × 8 would be 119 GiB:
  // refused by the fit check, not by the host running out building the table.
  Context& ctx = make_context();
  json cfg = tiny_config(Kind::EncoderOnly);
  const TensorMap file = tiny_weights(cfg);
  cfg["max_positions"] = 4000000000u;
  const std::string dir = write_model("huge-positions", cfg, file);
  expect_error_all([&] { Model::load(ctx, dir); },
                   {"Model::load(" + dir + "): out of device memory: the weights need 119.2 GiB in f32, more "
                                           "than the device can give: "});
}

TEST_F(DeviceErrors, TheFitCheckIsExact) {
  // The check counts what the uploads take, to the byte: a limit of exactly
  // that loads, one byte less is refused before uploading.
  Context& probe = make_context();
  const std::string dir = model("limit-exact");
  const uint64_t before = probe.available_memory();
  auto m = Model::load(probe, dir);
  const uint64_t weights = before - probe.available_memory();
  ASSERT_GT(weights, 10000u);
  m.reset();
  EXPECT_NO_THROW(Model::load(make_context(weights), dir));
  expect_error_all([&] { Model::load(make_context(weights - 1), dir); },
                   {"the weights need " + format_bytes(weights) + " in f32"});
}

TEST_F(DeviceErrors, ForwardOverTheMemoryLimitSaysWhatItNeeded) {
  // What the weights take, measured on an unlimited context.
  Context& probe = make_context();
  const std::string dir = model("limit-forward");
  const uint64_t before = probe.available_memory();
  auto m = Model::load(probe, dir);
  const uint64_t weights = before - probe.available_memory();
  m.reset();
  // Then room for the weights and a small batch, not for a large one.
  Context& ctx = make_context(weights + (32 << 10));
  auto m2 = Model::load(ctx, dir);
  Session s(m2);
  const std::vector<Ids> src(16, Ids(16, 3)), tgt(16, Ids(16, 1));
  expect_error_all([&] { s.forward(src, tgt); },
                   {"Session::forward (16 sequences): out of device memory: a tensor [16, 16", " needs ",
                    "memory limit "});
  EXPECT_FALSE(ctx.device_lost());
  EXPECT_EQ(s.forward(kSrc, kTgt).batch, 1u);  // a small batch still runs
}

TEST_F(DeviceErrors, MemoryLimitFromTheEnvironment) {
  ::setenv("VKFORMER_MEMORY_LIMIT", "1M", 1);
  EXPECT_EQ(make_context().available_memory(), 1u << 20);
  ::setenv("VKFORMER_MEMORY_LIMIT", "2KiB", 1);
  EXPECT_EQ(make_context().available_memory(), 2u << 10);
  EXPECT_EQ(make_context(4096).available_memory(), 4096u);  // the option wins
  for (const char* bad : {"lots", "12Q", "0", "-5M", "1.5G"}) {
    ::setenv("VKFORMER_MEMORY_LIMIT", bad, 1);
    expect_error([&] { make_context(); }, std::string("VKFORMER_MEMORY_LIMIT \"") + bad + "\": expected a positive size");
  }
  ::unsetenv("VKFORMER_MEMORY_LIMIT");
  ctx_.reset();
}

}  // namespace
}  // namespace vkf::test
