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
# and fails on any message it reports.
test: build
	cd $(BUILD) && VKFORMER_VALIDATION=1 ctest --output-on-failure -j $(JOBS) --timeout 600

demo: build
	@bash tools/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD)
