// Running inside a host application: vkformer on the host's instance, device
// and queue; recording into the host's command buffer (way b) or submitting
// with a fence the host waits on (way a); the host's buffers as tensors; and
// two threads running two sessions on one context.
#include <cstdio>
#include <thread>

#include "model_util.hpp"
#include "vkformer/tuning.hpp"

namespace vkf::test {
namespace {

/// What a host application would have: its own instance (validation and
/// synchronization validation on, messages counted), device and queue.
struct HostApp {
  ValidationLog log;
  InstanceHandles inst;
  VkPhysicalDevice phys = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  VkCommandPool pool = VK_NULL_HANDLE;
  bool f16 = false;

  HostApp() {
    inst = create_instance(true, &log);
    uint32_t index;
    phys = select_device(inst.instance, "", &index);
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, nullptr);
    std::vector<VkQueueFamilyProperties> q(n);
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, q.data());
    while (!(q[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family;
    f16 = query_capabilities(phys).storage_16bit;
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    f11.storageBuffer16BitAccess = f16;
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    f2.pNext = &f11;
    float prio = 1;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &prio;
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = &f2;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    EXPECT_EQ(vkCreateDevice(phys, &dci, nullptr, &device), VK_SUCCESS);
    vkGetDeviceQueue(device, family, 0, &queue);
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.queueFamilyIndex = family;
    EXPECT_EQ(vkCreateCommandPool(device, &pci, nullptr, &pool), VK_SUCCESS);
  }
  ~HostApp() {
    vkDestroyCommandPool(device, pool, nullptr);
    vkDestroyDevice(device, nullptr);
    destroy_instance(inst);
  }
  HostVulkan handles() const {
    HostVulkan h;
    h.instance = inst.instance;
    h.physical_device = phys;
    h.device = device;
    h.queue_family_index = family;
    h.queue = queue;
    h.get_instance_proc_addr = vkGetInstanceProcAddr;
    h.storage_buffer_16bit_access = f16;
    return h;
  }
  /// A host buffer the way an app makes one, bound to host-visible memory.
  std::pair<VkBuffer, VkDeviceMemory> buffer(VkDeviceSize size, VkBufferUsageFlags usage) {
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = size;
    bi.usage = usage;
    VkBuffer b;
    EXPECT_EQ(vkCreateBuffer(device, &bi, nullptr, &b), VK_SUCCESS);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device, b, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(phys, &mp);
    uint32_t type = 0;
    while (!(req.memoryTypeBits & (1u << type))) ++type;
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = type;
    VkDeviceMemory m;
    EXPECT_EQ(vkAllocateMemory(device, &ai, nullptr, &m), VK_SUCCESS);
    vkBindBufferMemory(device, b, m, 0);
    return {b, m};
  }
};

std::vector<std::vector<float>> golden_forward(const nlohmann::json& g) {
  return g["forward"].get<std::vector<std::vector<float>>>();
}

/// A ForwardOutput from raw [batch, len, dim] data (padded positions ignored).
ForwardOutput as_output(std::vector<float> data, const std::vector<Ids>& seqs, uint32_t dim) {
  ForwardOutput o;
  o.batch = uint32_t(seqs.size());
  for (auto& s : seqs) {
    o.len = std::max<uint32_t>(o.len, uint32_t(s.size()));
    o.lengths.push_back(uint32_t(s.size()));
  }
  o.dim = dim;
  o.data = std::move(data);
  return o;
}

}  // namespace

TEST(HostVulkan, RecordsIntoTheHostsCommandBuffer) {
  HostApp app;
  const auto g = golden("encdec_postln_relu");
  const std::vector<Ids> src = ids_of(g["src"]), tgt = ids_of(g["tgt"]);
  const uint32_t dim = g["dim"];
  {
    ContextOptions o;
    o.verbose = false;
    Context ctx(app.handles(), o);
    EXPECT_TRUE(ctx.adopted());
    // Nothing says the host enabled subgroupSizeControl: no pipeline may require a size.
    EXPECT_FALSE(ctx.caps().subgroup_size_control);
    EXPECT_FALSE(ctx.caps().compute_full_subgroups);
    auto model = Model::load(ctx, model_dir("encdec_postln_relu"));
    Session s(model);
    size_t T = 0;
    for (const Ids& t : tgt) T = std::max(T, t.size());
    const VkDeviceSize bytes = VkDeviceSize(src.size()) * T * dim * 4;  // [batch, T, vocab] logits
    auto [buf, mem] = app.buffer(bytes, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT);
    Tensor logits = ctx.wrap_buffer(buf, 0, bytes, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                                      VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                                    {int64_t(src.size()), int64_t(T), int64_t(dim)});

    // Way (b): the host's command buffer, the host's submission.
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = app.pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VkCommandBuffer cb;
    ASSERT_EQ(vkAllocateCommandBuffers(app.device, &ai, &cb), VK_SUCCESS);
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    vkBeginCommandBuffer(cb, &bi);
    // The recorder owns the descriptor sets the commands use: it lives until
    // the host's submission has finished.
    Recorder host_rec(ctx, cb);
    s.record_forward(host_rec, src, tgt, &logits);
    host_rec.end();
    vkEndCommandBuffer(cb);
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    vkCreateFence(app.device, &fci, nullptr, &fence);
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    ASSERT_EQ(vkQueueSubmit(app.queue, 1, &si, fence), VK_SUCCESS);
    vkWaitForFences(app.device, 1, &fence, VK_TRUE, UINT64_MAX);
    EXPECT_LE(forward_error(as_output(ctx.read(logits), tgt, dim), golden_forward(g)), 1e-4);

    // Way (a): vkformer submits to the host's queue and signals the host's fence.
    vkResetFences(app.device, 1, &fence);
    Recorder rec(ctx);
    Tensor out = s.record_forward(rec, src, tgt);
    SubmitSync sync;
    sync.fence = fence;
    ctx.submit_async(rec, sync);
    vkWaitForFences(app.device, 1, &fence, VK_TRUE, UINT64_MAX);
    EXPECT_LE(forward_error(as_output(ctx.read(out), tgt, dim), golden_forward(g)), 1e-4);

    vkDestroyFence(app.device, fence, nullptr);
    vkDestroyBuffer(app.device, buf, nullptr);
    vkFreeMemory(app.device, mem, nullptr);
  }
  // The context is gone; the host's device is not.
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = 64;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VkBuffer b;
  EXPECT_EQ(vkCreateBuffer(app.device, &bi, nullptr, &b), VK_SUCCESS);
  vkDestroyBuffer(app.device, b, nullptr);
  EXPECT_EQ(app.log.count.load(), 0u) << app.log.last;
}

TEST(HostVulkan, NamesWhatTheHostLacks) {
  HostApp app;
  HostVulkan h = app.handles();
  ContextOptions o;
  o.verbose = false;
  h.queue = VK_NULL_HANDLE;
  expect_error([&] { Context c(h, o); }, "queue must all be given");
  h = app.handles();
  h.queue_family_index = 99;
  expect_error([&] { Context c(h, o); }, "queue_family_index 99");
  Context ctx(app.handles(), o);
  const auto buf_mem = app.buffer(1024, VK_BUFFER_USAGE_VERTEX_BUFFER_BIT);
  VkBuffer buf = buf_mem.first;  // not a structured binding: C++17 lambdas cannot capture one (clang)
  VkDeviceMemory mem = buf_mem.second;
  expect_error([&] { ctx.wrap_buffer(buf, 0, 1024, VK_BUFFER_USAGE_VERTEX_BUFFER_BIT, {4}); },
               "VK_BUFFER_USAGE_STORAGE_BUFFER_BIT");
  expect_error([&] { ctx.wrap_buffer(buf, 0, 1024, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, {512}); },
               "the buffer has 1024");
  vkDestroyBuffer(app.device, buf, nullptr);
  vkFreeMemory(app.device, mem, nullptr);
  EXPECT_EQ(app.log.count.load(), 0u) << app.log.last;
}

// The same GPU, tuned with subgroup size control, shares its tuning key with a
// host application's device without it: entries that require a subgroup size
// are left out there (the op would refuse them), the others still apply.
TEST(HostVulkan, LeavesOutTunedSubgroupSizes) {
  HostApp app;
  const std::string path = ::testing::TempDir() + "host_tuning.json";
  std::remove(path.c_str());
  ContextOptions o;
  o.verbose = false;
  o.tuning = path;
  {
    Context probe(app.handles(), o);
    TuningTable t;
    t.best["layernorm"]["m=8,n=64,dtype=f32"] = {"subgroup", {{"WG", 8}, {"SGS", probe.caps().min_subgroup_size}}};
    t.best["layernorm"]["m=16,n=64,dtype=f32"] = {"subgroup", {{"WG", 16}}};
    store_tuning(path, probe.caps(), t);
  }
  Context ctx(app.handles(), o);
  const TuningTable& t = tuning_table(ctx);
  EXPECT_EQ(t.skipped_sgs, 1u);
  EXPECT_EQ(t.find("layernorm", "m=8,n=64,dtype=f32"), nullptr);
  ASSERT_NE(t.find("layernorm", "m=16,n=64,dtype=f32"), nullptr);
  std::remove(path.c_str());
  EXPECT_EQ(app.log.count.load(), 0u) << app.log.last;
}

// Two threads, two sessions of two models, one context: each thread's results
// equal what it gets alone.
TEST_F(DeviceTest, TwoThreadsRunTwoSessionsAtOnce) {
  const std::string names[2] = {"encdec_postln_relu", "decoder_only"};
  std::vector<float> alone[2];
  std::shared_ptr<Model> models[2];
  for (int i = 0; i < 2; ++i) {
    models[i] = Model::load(ctx(), model_dir(names[i]));
    const auto g = golden(names[i]);
    Session s(models[i]);
    alone[i] = s.forward(ids_of(g["src"]), g.contains("tgt") ? ids_of(g["tgt"]) : std::vector<Ids>{}).data;
  }
  int mismatches[2] = {0, 0};
  auto work = [&](int i) {
    const auto g = golden(names[i]);
    Session s(models[i]);
    for (int r = 0; r < 15; ++r) {
      auto out = s.forward(ids_of(g["src"]), g.contains("tgt") ? ids_of(g["tgt"]) : std::vector<Ids>{});
      mismatches[i] += out.data != alone[i];
      GenerateOptions o;
      o.max_new_tokens = 4;
      s.generate(ids_of(g["src"]), o);
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  EXPECT_EQ(mismatches[0], 0);
  EXPECT_EQ(mismatches[1], 0);
}

}  // namespace vkf::test
