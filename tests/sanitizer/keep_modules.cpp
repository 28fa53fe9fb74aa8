// LD_PRELOADed by `make test-asan`: dlclose() does nothing, so the Vulkan ICD
// (lavapipe) and the validation layer, which the loader unloads at
// vkDestroyInstance, stay mapped until exit. LeakSanitizer runs at exit; with
// the modules gone it could only print "<unknown module>" for their frames, and
// the suppressions in lsan.supp could not name them. Built without sanitizers,
// so it can be preloaded into uninstrumented processes (the Python test drivers).
extern "C" int dlclose(void*) { return 0; }
