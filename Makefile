# Entry points: `make demo` (install, build, compile and run the default model) and `make test`.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
PYTHON ?= python3
PREFIX ?= /usr/local
TENSORC := $(BUILD_DIR)/tools/tensorc/tensorc
DEMO_MODEL := models/mlp.fx

.PHONY: all deps configure build models demo test test-asan install fuzz test-fuzz clean

all: build

deps:
	@scripts/install-deps.sh

configure:
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) > /dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# Model weights are generated from fixed seeds (the MLP's are 96 MB, too large to commit).
models:
	@$(PYTHON) models/make_models.py
	@$(PYTHON) models/make_onnx_models.py --out models

demo: deps build models
	$(TENSORC) inspect $(DEMO_MODEL) --stage fuse
	$(TENSORC) compile $(DEMO_MODEL) -o $(BUILD_DIR)/demo-bundle
	$(TENSORC) run $(BUILD_DIR)/demo-bundle --random-inputs 0 --dim s0=64
	$(PYTHON) test/e2e/check_models.py --tensorc $(TENSORC) --model mlp --compiled

test: deps build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# The driver, tensorc-run, the runtime library (shared and static) with its headers, CMake package
# and pkg-config file, and the Python package (README: "Install").
install: build
	@cmake --install $(BUILD_DIR) --prefix $(PREFIX)

# The whole test suite again on an AddressSanitizer + UndefinedBehaviorSanitizer build: hostile
# inputs (malformed models, bad external data) must be rejected without memory errors.
ASAN_BUILD_DIR ?= build-asan
# Not repeated under the sanitizers: compiled-model conformance and the aarch64 cross build are
# long and exercise generated code (uninstrumented) rather than our C++; the CUDA tests spend
# their time in NVRTC (not ours, and not instrumented), the emulated CUDA kernels in the host
# compiler and the emulation. lit.cuda keeps the CUDA renderer covered; e2e.training (seed-003)
# covers the training path that e2e.training_mlp repeats at scale. install.package checks
# packaging (consumers of an instrumented library would need the sanitizer flags too); the Python
# package is not built there (an instrumented extension loads only with the sanitizer runtime
# preloaded into python).
ASAN_EXCLUDE ?= debian_cpu|aarch64|debian_cuda|cuda_model_kit|cuda_capi|cuda_emulated|training_mlp|install
test-asan: deps
	@cmake -S . -B $(ASAN_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DTENSORC_SANITIZE=address,undefined > /dev/null
	@cmake --build $(ASAN_BUILD_DIR) -j $(JOBS)
	@cd $(ASAN_BUILD_DIR) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) \
	  -E '$(ASAN_EXCLUDE)'

# libFuzzer harnesses (test/fuzz): clang with ASan + UBSan and coverage in every library.
# `make test-fuzz` replays each harness's regression inputs and fuzzes each for FUZZ_SECONDS, all
# at once (one core each is plenty; they share the machine with nothing else in CI).
FUZZ_BUILD_DIR ?= build-fuzz
FUZZ_SECONDS ?= 60
fuzz: deps
	@cmake -S . -B $(FUZZ_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DTENSORC_FUZZ=ON \
	  -DTENSORC_BUILD_TESTS=OFF -DTENSORC_FUZZ_SECONDS=$(FUZZ_SECONDS) > /dev/null
	@cmake --build $(FUZZ_BUILD_DIR) --target tensorc-fuzzers -j $(JOBS)

test-fuzz: fuzz
	@cd $(FUZZ_BUILD_DIR) && ctest --output-on-failure -L fuzz -j 8

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR) $(FUZZ_BUILD_DIR) models/*.safetensors
