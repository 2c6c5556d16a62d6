# A thin task runner over CMake and the scripts in scripts/ and e2e/cluster/.
# `make test` is the one command CI runs; `make demo` runs the main job.

BUILD       ?= build
ASAN_BUILD  ?= build-asan
FUZZ_BUILD  ?= build-fuzz
CMAKE_ARGS  ?=
FUZZ_SECONDS ?= 30
# Everything below `unit` needs nothing but this machine; `integration` and
# `e2e` bring up the local test bed through a ctest fixture.
CTEST_ARGS  ?=

.PHONY: all deps build test unit sanitize sanitize-build fuzz demo cluster-up cluster-down image bench clean

all: build

deps:
	@scripts/install-deps

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_ARGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD)

test: build
	scripts/run-tests $(BUILD) $(CTEST_ARGS)

unit: build
	ctest --test-dir $(BUILD) -L unit --output-on-failure $(CTEST_ARGS)

# The sanitizer build alone: .ci/run compiles it while `make test` runs.
sanitize-build: deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug \
		-DTFJOB_SANITIZE=address,undefined -DTFJOB_CUDA=OFF $(CMAKE_ARGS)
	cmake --build $(ASAN_BUILD)

sanitize: sanitize-build
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		ctest --test-dir $(ASAN_BUILD) -L unit -j4 --output-on-failure

fuzz: deps
	CC=clang cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DTFJOB_FUZZ=ON -DTFJOB_SANITIZE=address,undefined -DTFJOB_CUDA=OFF
	cmake --build $(FUZZ_BUILD)
	scripts/fuzz $(FUZZ_BUILD) $(FUZZ_SECONDS)

demo: build
	scripts/demo $(BUILD)

bench: build
	bench/run

cluster-up:
	e2e/cluster/up

cluster-down:
	e2e/cluster/down

image:
	e2e/cluster/image $(NAME) $(DOCKERFILE)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
