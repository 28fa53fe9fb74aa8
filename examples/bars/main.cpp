// bars: a headless graphics program that runs a vkformer model inside its own
// frame and draws the result. One bar per vocabulary entry of the last target
// position's logits, read by the vertex shader straight from a buffer the
// program owns and vkformer writes. No window: the frame is copied to a
// host-visible buffer and written as a PNG.
//
// The program owns every Vulkan object (instance, device, queue, image, render
// pass, pipeline, command buffer); vkformer runs on them through vkf::HostVulkan.
// Two ways of putting vkformer's work into the frame:
//   --way b (default): vkformer records into the frame's command buffer, before
//            the render pass; one command buffer, one submission.
//   --way a: vkformer records into its own command buffer and submits it
//            first, signalling a semaphore that the frame's submission waits on
//            at the vertex shader stage.
//
//   bars [MODEL_DIR] [--way a|b] [--src-ids 3,9,26] [--tgt-ids 1,6,5] [--out bars.png] [--validation]
//
// --skip-end (tests only) leaves out rec.end() in way (b): validation must object.
// Prints the argmax of the drawn row, the PNG's path and the number of
// validation messages; exits 0 only when there were none.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <vulkan/vulkan.h>

#include "vkformer/context.hpp"
#include "vkformer/model.hpp"
#include "vkformer/recorder.hpp"
#include "vkformer/session.hpp"

#include "bars_frag.h"  // const uint32_t bars_frag[]: SPIR-V made at build time
#include "bars_vert.h"
#include "png.hpp"

namespace {

constexpr uint32_t kWidth = 256, kHeight = 128;
constexpr VkFormat kColorFormat = VK_FORMAT_R8G8B8A8_UNORM;

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) throw std::runtime_error(std::string(what) + " failed: VkResult " + std::to_string(r));
}
#define VK_CHECK(call) check((call), #call)

// ---- validation: counts warnings and errors ---------------------------------
uint64_t g_validation_messages = 0;

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  ++g_validation_messages;
  std::fprintf(stderr, "validation %s: %s\n",
               severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning",
               data->pMessage);
  return VK_FALSE;
}

// ---- command line -------------------------------------------------------------
struct Options {
  std::string model = VKF_DEFAULT_MODEL;
  char way = 'b';
  std::vector<int32_t> src = {3, 9, 26, 27, 10};  // sample 1 of the model's golden.json
  std::vector<int32_t> tgt = {1, 6, 5, 23};
  bool tgt_given = false;
  std::string out = "bars.png";
  bool validation = false;
  bool skip_end = false;  // test only: leaves out rec.end(), a hazard validation must report
};

std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    ids.push_back(std::stoi(s.substr(pos, comma - pos)));
    pos = comma + 1;
  }
  return ids;
}

Options parse(int argc, char** argv) {
  Options o;
  const char* env = std::getenv("VKFORMER_VALIDATION");
  o.validation = env && std::string(env) == "1";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--way") {
      const std::string w = value();
      if (w != "a" && w != "b") throw std::runtime_error("--way is a or b, got " + w);
      o.way = w[0];
    } else if (a == "--src-ids") {
      o.src = parse_ids(value());
    } else if (a == "--tgt-ids") {
      o.tgt = parse_ids(value());
      o.tgt_given = true;
    } else if (a == "--out") {
      o.out = value();
    } else if (a == "--validation") {
      o.validation = true;
    } else if (a == "--skip-end") {
      o.skip_end = true;
    } else if (!a.empty() && a[0] != '-') {
      o.model = a;
    } else {
      throw std::runtime_error("unknown option " + a);
    }
  }
  return o;
}

// ---- the host application's Vulkan objects ------------------------------------
struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  VkBufferUsageFlags usage = 0;
};

struct App {
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_properties{};
  uint32_t queue_family = 0;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  bool storage_16bit = false;

  VkImage image = VK_NULL_HANDLE;
  VkDeviceMemory image_memory = VK_NULL_HANDLE;
  VkImageView image_view = VK_NULL_HANDLE;
  VkRenderPass render_pass = VK_NULL_HANDLE;
  VkFramebuffer framebuffer = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool = VK_NULL_HANDLE;
  VkDescriptorSet descriptor_set = VK_NULL_HANDLE;
  VkCommandPool command_pool = VK_NULL_HANDLE;
  VkFence frame_done = VK_NULL_HANDLE;
  VkSemaphore logits_ready = VK_NULL_HANDLE;  // way (a) only
  Buffer logits;    // vkformer writes it, the vertex shader reads it
  Buffer readback;  // the rendered image, for the PNG
};

void create_instance(App& app, bool validation) {
  VkApplicationInfo ai{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  ai.pApplicationName = "vkformer bars example";
  ai.apiVersion = VK_API_VERSION_1_2;  // vkformer needs a Vulkan 1.2 device

  std::vector<const char*> layers, extensions;
  VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;
  VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  mci.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  mci.pfnUserCallback = on_message;
  features.pNext = &mci;  // messages from vkCreateInstance itself count too

  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &ai;
  if (validation) {
    layers.push_back("VK_LAYER_KHRONOS_validation");
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    ci.pNext = &features;
  }
  ci.enabledLayerCount = uint32_t(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = uint32_t(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  VK_CHECK(vkCreateInstance(&ci, nullptr, &app.instance));

  if (validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(app.instance, "vkCreateDebugUtilsMessengerEXT"));
    if (!create) throw std::runtime_error("vkCreateDebugUtilsMessengerEXT is missing");
    mci.pNext = nullptr;
    VK_CHECK(create(app.instance, &mci, nullptr, &app.messenger));
  }
}

// The first Vulkan 1.2 device with a queue family that does graphics and compute.
void pick_device(App& app) {
  uint32_t n = 0;
  VK_CHECK(vkEnumeratePhysicalDevices(app.instance, &n, nullptr));
  std::vector<VkPhysicalDevice> devices(n);
  VK_CHECK(vkEnumeratePhysicalDevices(app.instance, &n, devices.data()));
  for (VkPhysicalDevice d : devices) {
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(d, &props);
    if (props.apiVersion < VK_API_VERSION_1_2) continue;
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(d, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> families(nq);
    vkGetPhysicalDeviceQueueFamilyProperties(d, &nq, families.data());
    for (uint32_t f = 0; f < nq; ++f) {
      const VkQueueFlags need = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT;
      if ((families[f].queueFlags & need) == need) {
        app.physical_device = d;
        app.queue_family = f;
        vkGetPhysicalDeviceMemoryProperties(d, &app.memory_properties);
        std::printf("device: %s\n", props.deviceName);
        return;
      }
    }
  }
  throw std::runtime_error("no Vulkan 1.2 device with a graphics+compute queue");
}

void create_device(App& app) {
  // fp16 weights need 16-bit storage: enable it when the device has it, and
  // tell vkformer (HostVulkan::storage_buffer_16bit_access).
  VkPhysicalDeviceVulkan11Features have11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceFeatures2 have{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  have.pNext = &have11;
  vkGetPhysicalDeviceFeatures2(app.physical_device, &have);
  app.storage_16bit = have11.storageBuffer16BitAccess == VK_TRUE;

  VkPhysicalDeviceVulkan11Features enable11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  enable11.storageBuffer16BitAccess = app.storage_16bit ? VK_TRUE : VK_FALSE;
  VkPhysicalDeviceFeatures2 enable{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  enable.pNext = &enable11;

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = app.queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  ci.pNext = &enable;
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &qci;
  VK_CHECK(vkCreateDevice(app.physical_device, &ci, nullptr, &app.device));
  vkGetDeviceQueue(app.device, app.queue_family, 0, &app.queue);

  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.queueFamilyIndex = app.queue_family;
  VK_CHECK(vkCreateCommandPool(app.device, &pci, nullptr, &app.command_pool));
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VK_CHECK(vkCreateFence(app.device, &fci, nullptr, &app.frame_done));
}

uint32_t memory_type(const App& app, uint32_t allowed, VkMemoryPropertyFlags want, VkMemoryPropertyFlags need) {
  const auto& mp = app.memory_properties;
  for (VkMemoryPropertyFlags flags : {want | need, need})
    for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
      if ((allowed & (1u << i)) && (mp.memoryTypes[i].propertyFlags & flags) == flags) return i;
  throw std::runtime_error("no suitable memory type");
}

Buffer create_buffer(const App& app, VkDeviceSize size, VkBufferUsageFlags usage,
                     VkMemoryPropertyFlags want, VkMemoryPropertyFlags need) {
  Buffer b;
  b.size = size;
  b.usage = usage;
  VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  ci.size = size;
  ci.usage = usage;
  ci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VK_CHECK(vkCreateBuffer(app.device, &ci, nullptr, &b.buffer));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(app.device, b.buffer, &req);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = memory_type(app, req.memoryTypeBits, want, need);
  VK_CHECK(vkAllocateMemory(app.device, &ai, nullptr, &b.memory));
  VK_CHECK(vkBindBufferMemory(app.device, b.buffer, b.memory, 0));
  return b;
}

void destroy_buffer(const App& app, Buffer& b) {
  vkDestroyBuffer(app.device, b.buffer, nullptr);
  vkFreeMemory(app.device, b.memory, nullptr);
  b = {};
}

// The color attachment, and a render pass that leaves it ready to be copied.
void create_target(App& app) {
  VkImageCreateInfo ici{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
  ici.imageType = VK_IMAGE_TYPE_2D;
  ici.format = kColorFormat;
  ici.extent = {kWidth, kHeight, 1};
  ici.mipLevels = 1;
  ici.arrayLayers = 1;
  ici.samples = VK_SAMPLE_COUNT_1_BIT;
  ici.tiling = VK_IMAGE_TILING_OPTIMAL;
  ici.usage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
  ici.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  VK_CHECK(vkCreateImage(app.device, &ici, nullptr, &app.image));
  VkMemoryRequirements req;
  vkGetImageMemoryRequirements(app.device, app.image, &req);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = memory_type(app, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  VK_CHECK(vkAllocateMemory(app.device, &ai, nullptr, &app.image_memory));
  VK_CHECK(vkBindImageMemory(app.device, app.image, app.image_memory, 0));

  VkImageViewCreateInfo vci{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
  vci.image = app.image;
  vci.viewType = VK_IMAGE_VIEW_TYPE_2D;
  vci.format = kColorFormat;
  vci.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  VK_CHECK(vkCreateImageView(app.device, &vci, nullptr, &app.image_view));

  VkAttachmentDescription color{};
  color.format = kColorFormat;
  color.samples = VK_SAMPLE_COUNT_1_BIT;
  color.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
  color.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
  color.stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
  color.stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
  color.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  color.finalLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
  VkAttachmentReference ref{0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
  VkSubpassDescription subpass{};
  subpass.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
  subpass.colorAttachmentCount = 1;
  subpass.pColorAttachments = &ref;
  // In: the clear waits for nothing but the layout transition. Out: the
  // attachment writes (and the final layout transition) happen before the copy.
  VkSubpassDependency deps[2] = {};
  deps[0].srcSubpass = VK_SUBPASS_EXTERNAL;
  deps[0].dstSubpass = 0;
  deps[0].srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
  deps[0].dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
  deps[0].srcAccessMask = 0;
  deps[0].dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
  deps[1].srcSubpass = 0;
  deps[1].dstSubpass = VK_SUBPASS_EXTERNAL;
  deps[1].srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
  deps[1].dstStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT;
  deps[1].srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
  deps[1].dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
  VkRenderPassCreateInfo rci{VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO};
  rci.attachmentCount = 1;
  rci.pAttachments = &color;
  rci.subpassCount = 1;
  rci.pSubpasses = &subpass;
  rci.dependencyCount = 2;
  rci.pDependencies = deps;
  VK_CHECK(vkCreateRenderPass(app.device, &rci, nullptr, &app.render_pass));

  VkFramebufferCreateInfo fci{VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
  fci.renderPass = app.render_pass;
  fci.attachmentCount = 1;
  fci.pAttachments = &app.image_view;
  fci.width = kWidth;
  fci.height = kHeight;
  fci.layers = 1;
  VK_CHECK(vkCreateFramebuffer(app.device, &fci, nullptr, &app.framebuffer));
}

VkShaderModule shader_module(VkDevice device, const uint32_t* code, size_t bytes) {
  VkShaderModuleCreateInfo ci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  ci.codeSize = bytes;
  ci.pCode = code;
  VkShaderModule m;
  VK_CHECK(vkCreateShaderModule(device, &ci, nullptr, &m));
  return m;
}

struct Push {
  uint32_t first;  // index of the drawn row's first logit
  uint32_t count;  // bars
};

// The bars: no vertex buffers; the vertex shader reads the logits as a storage buffer.
void create_pipeline(App& app) {
  VkDescriptorSetLayoutBinding b{0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_VERTEX_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo sci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  sci.bindingCount = 1;
  sci.pBindings = &b;
  VK_CHECK(vkCreateDescriptorSetLayout(app.device, &sci, nullptr, &app.set_layout));
  VkPushConstantRange push{VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof(Push)};
  VkPipelineLayoutCreateInfo lci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  lci.setLayoutCount = 1;
  lci.pSetLayouts = &app.set_layout;
  lci.pushConstantRangeCount = 1;
  lci.pPushConstantRanges = &push;
  VK_CHECK(vkCreatePipelineLayout(app.device, &lci, nullptr, &app.pipeline_layout));

  VkShaderModule vert = shader_module(app.device, bars_vert, sizeof(bars_vert));
  VkShaderModule frag = shader_module(app.device, bars_frag, sizeof(bars_frag));
  VkPipelineShaderStageCreateInfo stages[2] = {};
  stages[0].sType = stages[1].sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  stages[0].stage = VK_SHADER_STAGE_VERTEX_BIT;
  stages[0].module = vert;
  stages[0].pName = "main";
  stages[1].stage = VK_SHADER_STAGE_FRAGMENT_BIT;
  stages[1].module = frag;
  stages[1].pName = "main";

  VkPipelineVertexInputStateCreateInfo vertex_input{VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO};
  VkPipelineInputAssemblyStateCreateInfo assembly{VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO};
  assembly.topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST;
  VkViewport viewport{0, 0, float(kWidth), float(kHeight), 0, 1};
  VkRect2D scissor{{0, 0}, {kWidth, kHeight}};
  VkPipelineViewportStateCreateInfo vp{VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO};
  vp.viewportCount = 1;
  vp.pViewports = &viewport;
  vp.scissorCount = 1;
  vp.pScissors = &scissor;
  VkPipelineRasterizationStateCreateInfo raster{VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO};
  raster.polygonMode = VK_POLYGON_MODE_FILL;
  raster.cullMode = VK_CULL_MODE_NONE;
  raster.frontFace = VK_FRONT_FACE_COUNTER_CLOCKWISE;
  raster.lineWidth = 1.0f;
  VkPipelineMultisampleStateCreateInfo ms{VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO};
  ms.rasterizationSamples = VK_SAMPLE_COUNT_1_BIT;
  VkPipelineColorBlendAttachmentState blend_attachment{};
  blend_attachment.colorWriteMask = VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT |
                                    VK_COLOR_COMPONENT_B_BIT | VK_COLOR_COMPONENT_A_BIT;
  VkPipelineColorBlendStateCreateInfo blend{VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO};
  blend.attachmentCount = 1;
  blend.pAttachments = &blend_attachment;

  VkGraphicsPipelineCreateInfo ci{VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO};
  ci.stageCount = 2;
  ci.pStages = stages;
  ci.pVertexInputState = &vertex_input;
  ci.pInputAssemblyState = &assembly;
  ci.pViewportState = &vp;
  ci.pRasterizationState = &raster;
  ci.pMultisampleState = &ms;
  ci.pColorBlendState = &blend;
  ci.layout = app.pipeline_layout;
  ci.renderPass = app.render_pass;
  ci.subpass = 0;
  VK_CHECK(vkCreateGraphicsPipelines(app.device, VK_NULL_HANDLE, 1, &ci, nullptr, &app.pipeline));
  vkDestroyShaderModule(app.device, vert, nullptr);
  vkDestroyShaderModule(app.device, frag, nullptr);

  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1};
  VkDescriptorPoolCreateInfo pci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pci.maxSets = 1;
  pci.poolSizeCount = 1;
  pci.pPoolSizes = &size;
  VK_CHECK(vkCreateDescriptorPool(app.device, &pci, nullptr, &app.descriptor_pool));
  VkDescriptorSetAllocateInfo dai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  dai.descriptorPool = app.descriptor_pool;
  dai.descriptorSetCount = 1;
  dai.pSetLayouts = &app.set_layout;
  VK_CHECK(vkAllocateDescriptorSets(app.device, &dai, &app.descriptor_set));
}

void bind_logits(App& app) {
  VkDescriptorBufferInfo info{app.logits.buffer, 0, app.logits.size};
  VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
  w.dstSet = app.descriptor_set;
  w.dstBinding = 0;
  w.descriptorCount = 1;
  w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  w.pBufferInfo = &info;
  vkUpdateDescriptorSets(app.device, 1, &w, 0, nullptr);
}

// The render pass drawing the bars, then the copy of the image for the host.
void record_draw_and_copy(App& app, VkCommandBuffer cb, const Push& push) {
  VkClearValue clear{};
  clear.color = {{0.06f, 0.06f, 0.08f, 1.0f}};
  VkRenderPassBeginInfo rbi{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
  rbi.renderPass = app.render_pass;
  rbi.framebuffer = app.framebuffer;
  rbi.renderArea = {{0, 0}, {kWidth, kHeight}};
  rbi.clearValueCount = 1;
  rbi.pClearValues = &clear;
  vkCmdBeginRenderPass(cb, &rbi, VK_SUBPASS_CONTENTS_INLINE);
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_GRAPHICS, app.pipeline);
  vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_GRAPHICS, app.pipeline_layout, 0, 1,
                          &app.descriptor_set, 0, nullptr);
  vkCmdPushConstants(cb, app.pipeline_layout, VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof push, &push);
  vkCmdDraw(cb, 6, push.count, 0, 0);  // a quad per instance, an instance per bar
  vkCmdEndRenderPass(cb);

  // The render pass's final layout is TRANSFER_SRC_OPTIMAL and its outgoing
  // dependency orders the attachment writes before this copy.
  VkBufferImageCopy region{};
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageExtent = {kWidth, kHeight, 1};
  vkCmdCopyImageToBuffer(cb, app.image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, app.readback.buffer, 1, &region);
  VkBufferMemoryBarrier to_host{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
  to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  to_host.srcQueueFamilyIndex = to_host.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  to_host.buffer = app.readback.buffer;
  to_host.size = VK_WHOLE_SIZE;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 0, nullptr, 1,
                       &to_host, 0, nullptr);
}

void destroy(App& app) {
  if (app.device) {
    vkDeviceWaitIdle(app.device);
    vkDestroyCommandPool(app.device, app.command_pool, nullptr);  // frees the frame's command buffer
    vkDestroyFence(app.device, app.frame_done, nullptr);
    vkDestroySemaphore(app.device, app.logits_ready, nullptr);
    vkDestroyDescriptorPool(app.device, app.descriptor_pool, nullptr);
    vkDestroyPipeline(app.device, app.pipeline, nullptr);
    vkDestroyPipelineLayout(app.device, app.pipeline_layout, nullptr);
    vkDestroyDescriptorSetLayout(app.device, app.set_layout, nullptr);
    vkDestroyFramebuffer(app.device, app.framebuffer, nullptr);
    vkDestroyRenderPass(app.device, app.render_pass, nullptr);
    vkDestroyImageView(app.device, app.image_view, nullptr);
    vkDestroyImage(app.device, app.image, nullptr);
    vkFreeMemory(app.device, app.image_memory, nullptr);
    destroy_buffer(app, app.logits);
    destroy_buffer(app, app.readback);
    vkDestroyDevice(app.device, nullptr);
  }
  if (app.messenger) {
    auto destroy_messenger = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(app.instance, "vkDestroyDebugUtilsMessengerEXT"));
    destroy_messenger(app.instance, app.messenger, nullptr);
  }
  if (app.instance) vkDestroyInstance(app.instance, nullptr);
}

// Everything vkformer-related lives here, so that it is gone before the host
// destroys its device: Context, Model, Session, Recorders, wrapped tensors.
uint32_t run_frame(App& app, const Options& o, std::vector<uint8_t>& pixels) {
  vkf::HostVulkan host;
  host.instance = app.instance;
  host.physical_device = app.physical_device;
  host.device = app.device;
  host.queue_family_index = app.queue_family;
  host.queue = app.queue;
  host.get_instance_proc_addr = vkGetInstanceProcAddr;
  host.storage_buffer_16bit_access = app.storage_16bit;
  vkf::Context ctx(host);
  auto model = vkf::Model::load(ctx, o.model);  // uploads the weights (vkformer's own submissions)
  vkf::Session session(model);

  const vkf::ModelConfig& cfg = model->config();
  const std::vector<vkf::Ids> src = {o.src};
  std::vector<vkf::Ids> tgt;
  if (cfg.encoder_decoder()) tgt = {o.tgt};
  else if (o.tgt_given) throw std::runtime_error("--tgt-ids: the model has no decoder");
  const uint32_t len = uint32_t(cfg.encoder_decoder() ? o.tgt.size() : o.src.size());
  const uint32_t dim = model->output_dim();

  // The host's buffer vkformer writes into: a storage buffer for vkformer's
  // compute shaders and for our vertex shader; TRANSFER_SRC lets ctx.read()
  // fetch it (vkformer never maps a host buffer: it copies via staging).
  app.logits = create_buffer(app, VkDeviceSize(len) * dim * sizeof(float),
                             VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                             VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  vkf::Tensor logits = ctx.wrap_buffer(app.logits.buffer, 0, app.logits.size, app.logits.usage,
                                       {1, int64_t(len), int64_t(dim)});
  bind_logits(app);
  const Push push{(len - 1) * dim, dim};  // the last position's row

  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = app.command_pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb;
  VK_CHECK(vkAllocateCommandBuffers(app.device, &ai, &cb));

  // A recorder must outlive the execution of what it recorded (it owns the
  // descriptor sets): both are kept until the frame's fence has signalled.
  std::unique_ptr<vkf::Recorder> rec;
  VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_VERTEX_SHADER_BIT;
  if (o.way == 'a') {
    // Way (a): vkformer's own command buffer, submitted first; it signals a
    // binary semaphore the frame waits on before its vertex shaders run.
    VkSemaphoreCreateInfo sci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    VK_CHECK(vkCreateSemaphore(app.device, &sci, nullptr, &app.logits_ready));
    rec = std::make_unique<vkf::Recorder>(ctx);
    session.record_forward(*rec, src, tgt, &logits);
    vkf::SubmitSync sync;
    sync.signal = {app.logits_ready};
    ctx.submit_async(*rec, sync);
  }

  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VK_CHECK(vkBeginCommandBuffer(cb, &bi));
  if (o.way == 'b') {
    // Way (b): vkformer records into the frame's command buffer, outside the
    // render pass. It opens with a barrier from our earlier writes and end()
    // closes with one that makes its writes visible to the vertex shader.
    rec = std::make_unique<vkf::Recorder>(ctx, cb);
    session.record_forward(*rec, src, tgt, &logits);
    if (!o.skip_end) rec->end();
  }
  record_draw_and_copy(app, cb, push);
  VK_CHECK(vkEndCommandBuffer(cb));

  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  if (app.logits_ready) {
    si.waitSemaphoreCount = 1;
    si.pWaitSemaphores = &app.logits_ready;
    si.pWaitDstStageMask = &wait_stage;
  }
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  VK_CHECK(vkQueueSubmit(app.queue, 1, &si, app.frame_done));  // the only submission of the frame (b)
  VK_CHECK(vkWaitForFences(app.device, 1, &app.frame_done, VK_TRUE, UINT64_MAX));

  void* mapped;
  VK_CHECK(vkMapMemory(app.device, app.readback.memory, 0, VK_WHOLE_SIZE, 0, &mapped));
  std::memcpy(pixels.data(), mapped, pixels.size());
  vkUnmapMemory(app.device, app.readback.memory);

  // The model's answer, read back through vkformer (a staging copy, after the fence).
  std::vector<float> out = ctx.read(logits);
  uint32_t best = 0;
  for (uint32_t i = 1; i < dim; ++i)
    if (out[push.first + i] > out[push.first + best]) best = i;

  return best;
}

}  // namespace

int main(int argc, char** argv) {
  App app;
  try {
    const Options o = parse(argc, argv);
    create_instance(app, o.validation);
    pick_device(app);
    create_device(app);
    create_target(app);
    create_pipeline(app);
    app.readback = create_buffer(app, VkDeviceSize(kWidth) * kHeight * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                 VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
                                 VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);

    std::vector<uint8_t> pixels(size_t(kWidth) * kHeight * 4);
    const uint32_t argmax = run_frame(app, o, pixels);
    if (!bars::write_png(o.out, pixels.data(), kWidth, kHeight))
      throw std::runtime_error("cannot write " + o.out + ": " + std::strerror(errno));
    destroy(app);  // validation messages at teardown count too
    std::printf("way: %c\nargmax: %u\npng: %s\nvalidation: %s, %llu messages\n", o.way, argmax,
                o.out.c_str(), o.validation ? "on" : "off", (unsigned long long)g_validation_messages);
    return g_validation_messages == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bars: %s\n", e.what());
    destroy(app);
    return 1;
  }
}
