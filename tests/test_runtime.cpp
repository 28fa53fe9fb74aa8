// The Vulkan runtime: device choice, memory, transfers, barriers, grids,
// timestamps and the pipeline cache.
#include <sys/stat.h>

#include <cstdlib>

#include "test_util.hpp"
#include "vk/context_impl.hpp"

namespace vkf::test {

TEST_F(DeviceTest, CapabilitiesAreQueried) {
  const Capabilities& c = ctx().caps();
  EXPECT_FALSE(c.device_name.empty());
  EXPECT_GE(c.subgroup_size, 1u);
  EXPECT_GE(c.max_shared_memory, 16384u);
  EXPECT_GE(c.max_workgroup_invocations, 128u);
  EXPECT_GE(c.max_storage_buffer_range, uint64_t(1) << 27);
  EXPECT_GE(c.max_workgroup_count[0], 65535u);
  EXPECT_GT(c.min_storage_buffer_offset_alignment, 0u);
}

TEST(Devices, ListedInPreferenceOrder) {
  auto devs = list_devices();
  ASSERT_FALSE(devs.empty());
  auto rank = [](const std::string& t) {
    return t == "discrete" ? 0 : t == "integrated" ? 1 : t == "virtual" ? 2 : t == "cpu" ? 3 : 4;
  };
  for (size_t i = 1; i < devs.size(); ++i) EXPECT_LE(rank(devs[i - 1].type), rank(devs[i].type));
}

TEST(Devices, UnknownSelectorIsAClearError) {
  ContextOptions o;
  o.verbose = false;
  o.device = "no-such-gpu";
  try {
    Context c(o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-gpu"), std::string::npos) << e.what();
  }
  o.device = "99";
  EXPECT_THROW(Context c(o), Error);
}

TEST_F(DeviceTest, SubAllocationsAreAlignedAndReused) {
  const uint64_t align = ctx().caps().min_storage_buffer_offset_alignment;
  std::vector<Tensor> ts;
  for (int i = 0; i < 50; ++i) ts.push_back(ctx().tensor({int64_t(1 + 37 * i)}));
  VkBuffer first = ts[0].allocation()->buffer;
  for (auto& t : ts) {
    EXPECT_EQ(t.allocation()->offset % align, 0u);
    EXPECT_EQ(t.allocation()->buffer, first) << "small tensors share one block";
  }
  VkDeviceSize off = ts[10].allocation()->offset;
  ts[10] = Tensor();
  Tensor again = ctx().tensor({1 + 37 * 10});
  EXPECT_EQ(again.allocation()->offset, off) << "freed space is reused";
}

TEST_F(DeviceTest, IndependentDispatchesNeedNoBarrier) {
  auto d = random_vector(1000, 3);
  Tensor a = ctx().tensor({1000}, d), b = ctx().tensor({1000}, d);
  Tensor y1 = ctx().tensor({1000}), y2 = ctx().tensor({1000}), y3 = ctx().tensor({1000});
  Recorder rec(ctx());
  add(rec, {&a, &b, &y1});
  add(rec, {&a, &b, &y2});
  EXPECT_EQ(rec.barriers(), 0u);
  add(rec, {&y1, &y2, &y3});  // reads what the first two wrote
  EXPECT_EQ(rec.barriers(), 1u);
  add(rec, {&a, &b, &y1});    // overwrites what the third read
  EXPECT_EQ(rec.barriers(), 2u);
  ctx().submit(rec);
  auto out = ctx().read(y3);
  for (size_t i = 0; i < d.size(); ++i) ASSERT_FLOAT_EQ(out[i], 4 * d[i]);
}

TEST_F(DeviceTest, RecorderCanBeResubmittedAndReset) {
  std::vector<float> ones(64, 1.f);
  Tensor a = ctx().tensor({64}, ones), y = ctx().tensor({64}, ones);
  Tensor tmp = ctx().tensor({64});
  Recorder rec(ctx());
  add(rec, {&a, &y, &tmp});
  add(rec, {&tmp, &a, &y});  // y += 2 each submission
  ctx().submit(rec);
  ctx().submit(rec);
  EXPECT_FLOAT_EQ(ctx().read(y)[5], 5.f);
  EXPECT_THROW(add(rec, {&a, &a, &tmp}), Error);
  rec.reset();
  add(rec, {&a, &a, &tmp});
  ctx().submit(rec);
  EXPECT_FLOAT_EQ(ctx().read(tmp)[63], 2.f);
}

TEST_F(DeviceTest, TimestampsTimeEveryDispatch) {
  if (!ctx().caps().timestamps) GTEST_SKIP() << "device has no timestamps";
  auto d = random_vector(4096, 4);
  Tensor a = ctx().tensor({4096}, d), y = ctx().tensor({4096});
  Recorder rec(ctx(), true);
  add(rec, {&a, &a, &y});
  add(rec, {&y, &a, &y});
  ctx().submit(rec);
  auto t = rec.timings();
  ASSERT_EQ(t.size(), 2u);
  for (auto& x : t) {
    EXPECT_EQ(x.label, "add/default");
    EXPECT_GE(x.ms, 0.0);
    EXPECT_LT(x.ms, 10000.0);
  }
}

// With the workgroup-count limit clamped, a grid folds into y and z and
// every workgroup still finds its own elements.
TEST_F(DeviceTest, LargeGridsFoldIntoYAndZ) {
  ScopedCaps caps(ctx());
  caps->max_workgroup_count[0] = 5;
  caps->max_workgroup_count[1] = 3;
  const int64_t n = 1024 * 40 + 17;  // 41 workgroups of 1024 elements: 5 × 3 × 3
  auto a = random_vector(size_t(n), 5), b = random_vector(size_t(n), 6);
  Tensor ta = ctx().tensor({n}, a), tb = ctx().tensor({n}, b), ty = ctx().tensor({n});
  Recorder rec(ctx());
  add(rec, {&ta, &tb, &ty});
  ctx().submit(rec);
  EXPECT_LE(ref::max_rel_error(ctx().read(ty), ref::add(a, b)), kF32Bound);
}

TEST(Transfers, StagingPathRoundTrips) {
  ContextOptions o;
  o.validation = 1;
  o.verbose = false;
  o.force_staging = true;
  Context c(o);
  auto d = random_vector(333, 7);
  Tensor t32 = c.tensor({333}, d);
  EXPECT_EQ(t32.allocation()->mapped, nullptr);
  EXPECT_EQ(c.read(t32), d);
  if (c.caps().f16_tensors()) {
    Tensor t16 = c.tensor({333}, d, DType::F16);
    EXPECT_EQ(c.read(t16), round_to_half(d));
  }
  std::vector<int32_t> ids = {0, -1, 7, 1 << 30};
  Tensor ti = c.tensor_i32({4}, ids);
  EXPECT_EQ(c.read_i32(ti), ids);
  // A dispatch between staged upload and download.
  Tensor y = c.tensor({333});
  Recorder rec(c);
  add(rec, {&t32, &t32, &y});
  c.submit(rec);
  auto out = c.read(y);
  for (size_t i = 0; i < d.size(); ++i) ASSERT_FLOAT_EQ(out[i], 2 * d[i]);
  EXPECT_EQ(c.validation_messages(), 0u) << c.last_validation_message();
}

TEST(Transfers, HalfConversionRoundsToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(65504.f), 0x7bff);
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(5.9604645e-8f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3c00);  // tie -> even
  EXPECT_EQ(float_to_half(1.0f + 3.0f / 2048), 0x3c02);  // tie -> even (up)
  for (uint32_t h = 0; h < 0x7c00; ++h) ASSERT_EQ(float_to_half(half_to_float(uint16_t(h))), h);
}

TEST(PipelineCache, SavedToDiskPerDevice) {
  std::string dir = std::string(::testing::TempDir()) + "vkf-cache-test";
  ContextOptions o;
  o.validation = 1;
  o.verbose = false;
  o.cache_dir = dir;
  {
    Context c(o);
    Tensor a = c.tensor({8}), y = c.tensor({8});
    Recorder rec(c);
    add(rec, {&a, &a, &y});
    c.submit(rec);
    EXPECT_GE(c.pipelines_created(), 1u);
  }
  // The file is named by the device's pipeline-cache UUID and driver version.
  Context c(o);
  char uuid[33];
  for (int i = 0; i < 16; ++i) std::snprintf(uuid + 2 * i, 3, "%02x", c.caps().pipeline_cache_uuid[i]);
  std::string file = dir + "/pipelines-" + uuid + "-" + std::to_string(c.caps().driver_version) + ".bin";
  struct stat st;
  ASSERT_EQ(stat(file.c_str(), &st), 0) << file;
  EXPECT_GE(st.st_size, 32);
}

}  // namespace vkf::test

namespace vkf::test {

// The canary: proves the layer is really on and its messages are counted,
// so that the zero-message checks everywhere else mean something.
TEST(Validation, MessagesAreCounted) {
  ContextOptions o;
  o.validation = 1;
  o.verbose = false;
  Context c(o);
  EXPECT_EQ(c.validation_messages(), 0u);
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = 0;  // invalid: VUID-VkBufferCreateInfo-size-00912
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VkBuffer b = VK_NULL_HANDLE;
  testing::internal::CaptureStderr();
  vkCreateBuffer(c.vk_device(), &bi, nullptr, &b);
  std::string logged = testing::internal::GetCapturedStderr();
  if (b) vkDestroyBuffer(c.vk_device(), b, nullptr);
  EXPECT_GE(c.validation_messages(), 1u);
  EXPECT_NE(logged.find("00912"), std::string::npos) << logged;
}

}  // namespace vkf::test

namespace vkf::test {

// Synchronization validation is on too: two unsynchronized writes to one
// buffer in one command buffer are reported as a hazard.
TEST(Validation, SynchronizationHazardsAreCounted) {
  ContextOptions o;
  o.validation = 1;
  o.verbose = false;
  Context c(o);
  Tensor t = c.tensor({256});
  const Allocation& a = *t.allocation();
  auto& s = internals(c);
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = s.command_pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb;
  ASSERT_EQ(vkAllocateCommandBuffers(s.device, &ai, &cb), VK_SUCCESS);
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  vkBeginCommandBuffer(cb, &bi);
  testing::internal::CaptureStderr();
  vkCmdFillBuffer(cb, a.buffer, a.offset, 1024, 0);
  vkCmdFillBuffer(cb, a.buffer, a.offset, 1024, 1);  // write-after-write, no barrier
  std::string logged = testing::internal::GetCapturedStderr();
  vkEndCommandBuffer(cb);
  vkFreeCommandBuffers(s.device, s.command_pool, 1, &cb);
  EXPECT_GE(c.validation_messages(), 1u);
  EXPECT_NE(logged.find("WRITE_AFTER_WRITE"), std::string::npos) << logged;
}

}  // namespace vkf::test
