# The two commands a newcomer needs on a fresh Debian machine:
#   make demo   build everything and run the main job on built-in defaults
#   make test   build everything and run the whole test suite (unit tests,
#               the same tests under ASan+UBSan, a libFuzzer smoke run)
# Run as root, both install the missing Debian packages first (see README).

DEB_PACKAGES := build-essential cmake pkg-config clang libclang-rt-14-dev libomp-dev \
                libcjson-dev libcmocka-dev libopenblas-dev
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 30

# intercept_tls_get_addr=0: LLVM <= 16's __tls_get_addr interceptor can misread
# a dynamic TLS block (libomp's worker threads have them) and make the leak
# checker's tracer crash at exit with "Tracer caught signal 11" although no
# leak exists (google/sanitizers#1267, fixed in later LLVM).
ASAN_OPTIONS_TEST := detect_leaks=1:intercept_tls_get_addr=0

BUILD := build
BUILD_ASAN := build-asan
BUILD_FUZZ := build-fuzz

.PHONY: all deps build demo test unit-test asan-test fuzz-test bench clean

all: build

deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    (apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else \
	    echo "missing Debian packages:$$missing -- run 'sudo apt-get install$$missing' (or make as root)"; exit 1; \
	  fi; \
	fi

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DKVC_WERROR=ON
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	./$(BUILD)/kvcache demo

unit-test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

asan-test: deps
	CC=clang cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DKVC_SANITIZE=ON -DKVC_WERROR=ON
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	ASAN_OPTIONS=$(ASAN_OPTIONS_TEST) UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir $(BUILD_ASAN) --output-on-failure -j $(JOBS)

fuzz-test: deps
	CC=clang cmake -S . -B $(BUILD_FUZZ) -DCMAKE_BUILD_TYPE=Debug -DKVC_FUZZ=ON -DKVC_TESTS=OFF -DKVC_WERROR=ON
	cmake --build $(BUILD_FUZZ) -j $(JOBS)
	@for f in $(BUILD_FUZZ)/fuzz_*; do \
	  [ -x "$$f" ] || continue; name=$$(basename $$f); \
	  mkdir -p $(BUILD_FUZZ)/corpus/$$name; \
	  seeds=fuzz/corpus/$$name; [ -d $$seeds ] || seeds=""; \
	  echo "fuzzing $$name for $(FUZZ_SECONDS) s"; \
	  if ! ASAN_OPTIONS=$(ASAN_OPTIONS_TEST) $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
	      $(BUILD_FUZZ)/corpus/$$name $$seeds > $(BUILD_FUZZ)/$$name.log 2>&1; then \
	    tail -n 60 $(BUILD_FUZZ)/$$name.log; echo "FAIL: $$name"; exit 1; fi; \
	  tail -n 6 $(BUILD_FUZZ)/$$name.log; \
	done

test: unit-test asan-test fuzz-test

bench: build
	./$(BUILD)/kvcache bench manager
	./$(BUILD)/kvcache bench engine
	./$(BUILD)/kvcache bench attention

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)
