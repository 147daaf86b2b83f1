# The two commands a newcomer needs on a fresh Debian machine:
#   make demo   build the kvcache command (and its libraries only) and run the
#               main job on built-in defaults
#   make test   build everything and run the whole test suite (unit tests,
#               the same tests under ASan+UBSan, a libFuzzer smoke run, the
#               Python package's tests in a virtualenv under build/)
# Run as root, both install the missing Debian packages first (see README).

DEB_PACKAGES := build-essential cmake pkg-config clang libclang-rt-14-dev libomp-dev \
                libcjson-dev libcmocka-dev libopenblas-dev clang-format libxxhash-dev python3 python3-venv python3-dev \
                libopenmpi-dev openmpi-bin ninja-build lld
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# Seconds per fuzz target: 7 targets x 8 s, JOBS at a time, keep the fuzz step of make test near
# 35 s on two cores, so that the whole stays within twelve minutes as the suite grows (15 s each
# took 66 s; longer runs: FUZZ_SECONDS=600 make fuzz-test).
FUZZ_SECONDS ?= 8
PREFIX ?= /usr/local

# intercept_tls_get_addr=0: LLVM <= 16's __tls_get_addr interceptor can misread
# a dynamic TLS block (libomp's worker threads have them) and make the leak
# checker's tracer crash at exit with "Tracer caught signal 11" although no
# leak exists (google/sanitizers#1267, fixed in later LLVM).
ASAN_OPTIONS_TEST := detect_leaks=1:intercept_tls_get_addr=0

# Every C source and header of the project is kept in the .clang-format style
# (checked by make format-check, part of make test), except the AVX2 and
# AVX-512 kernel tables: their switch-of-macro layouts are not a fixed point of
# clang-format 14 (each pass rewraps them), so they keep their hand layout.
UNFORMATTED_FILES := src/ops/cpu/simd_avx2.c src/ops/cpu/simd_avx512.c
FORMAT_FILES := $(filter-out $(UNFORMATTED_FILES),$(sort $(wildcard include/kvcache/*.h src/*/*.[ch] src/*/*/*.[ch] \
                tests/*/*.[ch] tools/*.[ch] bench/*.[ch] cli/*.[ch] examples/*.c fuzz/*.c python/tests/*.c)))

# Ninja, not make, drives the CMake builds: it compiles a test's objects while the libraries it links are
# still compiling (make's generator waits for each library first), and the attention kernel tables
# (src/ops/cpu/simd_avx512.c: 143 s of gcc's CPU at -O3, 222 s of clang's with ASan + UBSan; 44-58 % of each
# build) would otherwise hold one of two cores alone while the other waits. A build folder configured earlier
# keeps its own generator.
export CMAKE_GENERATOR ?= Ninja
BUILD := build
# One clang build for the sanitizer tests and the fuzz targets: ASan + UBSan, with the coverage
# instrumentation libFuzzer needs. The library is compiled once for both, but the instrumentation
# slows that compile and the tests (ASan ctest 136 -> 210 s on 2 cores): about even with two builds
# in time (fresh clone: 400 s against 406 s), one build directory less.
BUILD_ASAN := build-asan
# LLVM's linker (lld) links its ~120 programs: their instrumented objects made GNU ld take about 1 s of CPU
# per program (test_plan: 1.0 s, lld 0.25 s).
SAN_CONFIGURE := CC=clang cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DKVC_SANITIZE=ON -DKVC_FUZZ=ON -DKVC_WERROR=ON \
  -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld
FUZZ_TARGETS := $(basename $(notdir $(wildcard fuzz/fuzz_*.c)))
# The Python package (python/) is tested in a virtualenv of Debian's python3;
# its PyPI dependencies come from its own metadata (the "test" extra).
PYTHON ?= /usr/bin/python3
PY_VENV := $(BUILD)/python-venv
PY_STAMP := $(PY_VENV)/.kvcache-deps
# The extension builds in build/python-cmake and links the Release build's libkvcache.a (the
# library is compiled once for `make test`; `pip install ./python` alone compiles its own).
PY_BUILD_ENV := SKBUILD_BUILD_DIR=$(CURDIR)/$(BUILD)/python-cmake \
  SKBUILD_CMAKE_DEFINE=KVC_PREBUILT_LIBRARY=$(CURDIR)/$(BUILD)/libkvcache.a
PIP := $(PY_VENV)/bin/pip --disable-pip-version-check

.PHONY: all deps configure build command demo install format format-check test unit-test python-deps python-test asan-build asan-test \
        fuzz-test bench clean

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

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DKVC_WERROR=ON

# Everything: libraries, the command, the examples and the ~60 test programs.
build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Only the kvcache command and the libraries it links (no tests, no examples).
command: configure
	cmake --build $(BUILD) -j $(JOBS) --target kvcache_cmd

demo: command
	./$(BUILD)/kvcache demo

# Headers, libkvcache + libkvcache_core (shared and static), the kvcache
# command, pkg-config files and the CMake package under $(PREFIX) (DESTDIR
# is honoured for staged installs); see docs/install.md.
install: build
	DESTDIR=$(DESTDIR) cmake --install $(BUILD) --prefix $(PREFIX)

# The suites run several programs at once on few cores, where OpenMP threads that spin after each parallel
# region (libgomp's and libomp's default) hold a core that another test's thread needs: the tests wait
# passively unless the caller chose a policy (CPU seconds on a loaded 2-vCPU VM, default -> passive:
# test_model_oracle 15.5 -> 4.9, test_ops_attention_cpu 13.3 -> 7.7, test_model_bench 11.2 -> 1.6,
# test_model_batch_invariance 10.4 -> 5.4; the sanitizer build's test_model_oracle 48.2 -> 41.5).
TEST_ENV := OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-passive}

unit-test: build
	$(TEST_ENV) ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

asan-build: deps
	$(SAN_CONFIGURE)
	cmake --build $(BUILD_ASAN) -j $(JOBS)

asan-test: asan-build
	$(TEST_ENV) ASAN_OPTIONS=$(ASAN_OPTIONS_TEST) UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(BUILD_ASAN) --output-on-failure -j $(JOBS)

fuzz-test: deps
	$(SAN_CONFIGURE)
	cmake --build $(BUILD_ASAN) -j $(JOBS) --target $(FUZZ_TARGETS)
	@for f in $(FUZZ_TARGETS); do echo $(BUILD_ASAN)/$$f; done | \
	  ASAN_OPTIONS=$(ASAN_OPTIONS_TEST) UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  xargs -P $(JOBS) -I FUZZER tools/fuzz_one.sh FUZZER $(FUZZ_SECONDS) $(BUILD_ASAN)

# The virtualenv and the package's PyPI dependencies (its build backend, its dependencies and the "test"
# extra, read from python/pyproject.toml; before Python 3.11, without tomllib, `./python[test]` itself),
# installed on the first run with bounded retries (a clear failure offline). They need no build, so
# `make test` installs them while the libraries compile.
PY_REQUIRES := import sys; \
  p = __import__("tomllib").load(open("python/pyproject.toml", "rb")) if sys.version_info >= (3, 11) else None; \
  print(*p["build-system"]["requires"], *p["project"]["dependencies"], *p["project"]["optional-dependencies"]["test"]) \
  if p else print("./python[test]")
python-deps: deps
	@[ -x $(PY_VENV)/bin/python ] || $(PYTHON) -m venv $(PY_VENV)
	@if [ ! -f $(PY_STAMP) ] || [ python/pyproject.toml -nt $(PY_STAMP) ]; then \
	  echo "installing the PyPI dependencies of ./python[test] into $(PY_VENV)"; \
	  $(PY_BUILD_ENV) $(PIP) install --timeout 30 --retries 2 --quiet $$($(PY_VENV)/bin/python -c '$(PY_REQUIRES)') \
	    && touch $(PY_STAMP) \
	    || { echo "FAIL: pip could not install the dependencies of ./python[test] (PyPI unreachable? see the output above)"; exit 1; }; \
	fi

# Every run builds the extension once, in place (build/python-cmake, no build isolation, no network), and
# runs pytest (exit 5, no test collected, fails like any other non-zero exit).
python-test: build python-deps
	$(PY_BUILD_ENV) $(PIP) install --no-build-isolation --no-index --no-deps --quiet ./python
	cd $(BUILD) && $(TEST_ENV) KVC_REQUIRE_BUILD=1 KVC_BUILD_DIR=$(CURDIR)/$(BUILD) KVC_SOURCE_DIR=$(CURDIR) MPLBACKEND=Agg \
	  $(CURDIR)/$(PY_VENV)/bin/python -m pytest -q -p no:cacheprovider $(CURDIR)/python/tests

format-check: deps
	clang-format --dry-run --Werror $(FORMAT_FILES)

format:
	clang-format -i $(FORMAT_FILES)

# The phases of make test: the two builds, the Python package's dependencies, then the Release suite, the
# Python tests and the sanitizer suite, each as soon as its own build is done (three recipes at a time,
# -O prints each one's output whole when it ends): the sanitizer suite starts when its build ends instead of
# after the Release suite and pytest, so neither build's last file nor pytest's last minute holds one core
# alone while the other idles. The fuzz run (whose time per target is wall time) then runs alone.
test: format-check
	@$(MAKE) --no-print-directory -j 3 -O unit-test python-test asan-test
	@$(MAKE) --no-print-directory fuzz-test

bench: command
	./$(BUILD)/kvcache bench manager
	./$(BUILD)/kvcache bench prefix
	./$(BUILD)/kvcache bench engine
	./$(BUILD)/kvcache bench gemm
	./$(BUILD)/kvcache bench attention

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)
