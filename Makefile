# The two commands a newcomer needs on a fresh Debian machine:
#   make demo   build the kvcache command (and its libraries only) and run the
#               main job on built-in defaults
#   make test   build everything and run the whole test suite (unit tests,
#               the same tests under ASan+UBSan, a libFuzzer smoke run, the
#               Python package's tests in a virtualenv under build/)
# Run as root, both install the missing Debian packages first (see README).

DEB_PACKAGES := build-essential cmake pkg-config clang libclang-rt-14-dev libomp-dev \
                libcjson-dev libcmocka-dev libopenblas-dev clang-format libxxhash-dev python3 python3-venv python3-dev
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# Seconds per fuzz target: 6 targets x 25 s keeps the fuzz step of make test
# near 150 s on two cores.
FUZZ_SECONDS ?= 25
PREFIX ?= /usr/local

# intercept_tls_get_addr=0: LLVM <= 16's __tls_get_addr interceptor can misread
# a dynamic TLS block (libomp's worker threads have them) and make the leak
# checker's tracer crash at exit with "Tracer caught signal 11" although no
# leak exists (google/sanitizers#1267, fixed in later LLVM).
ASAN_OPTIONS_TEST := detect_leaks=1:intercept_tls_get_addr=0

# Files kept in the .clang-format style (checked by make format-check, part of
# make test). The tree is formatted file by file: add a file when you format it.
# the config reader, the planner and their tests
CONFIG_FORMAT_FILES := src/model/json_read.[ch] src/model/hparams.[ch] src/model/config.c src/plan/*.[ch] \
                       tests/model/test_config_reader.c tests/model/config_fixture.h tests/plan/test_plan.c fuzz/fuzz_config.c \
                       tests/batch/test_step_state_width.c
# the engine's scheduler files
ENGINE_FORMAT_FILES := src/engine/names.c src/engine/queue.c src/engine/latency.c src/engine/step.c \
                       src/engine/step_rows.c src/engine/schedule.c src/engine/engine_internal.h \
                       src/engine/step_cost.c src/engine/sampler.c tests/engine/test_engine_budget.c \
                       tests/engine/test_engine_sampler.c
# the runtime's GEMM, calibration, dtype comparison and their tests
RUNTIME_FORMAT_FILES := src/model/gemm.h src/model/gemm.c src/model/gemm_avx2.c src/model/gemm_avx512.c \
                        src/model/prepare.c src/model/calibrate.c src/runner/compare.c tools/run_compare.h \
                        tools/run_compare.c bench/bench_gemm.c tests/model/test_model_gemm.c \
                        tests/model/test_model_batch_invariance.c tests/runner/test_runner_limits.c \
                        bench/shared_lib_check.h bench/shared_lib_check.c tests/tools/test_shared_lib_check.c \
                        src/model/gemm_bf16.h src/model/gemm_bf16.c \
                        src/model/gemm_bf16_x86.h src/model/gemm_bf16_fma.c src/model/gemm_bf16_dot512.c \
                        src/model/gemm_bf16_amx.c tests/model/test_model_gemm_bf16.c src/model/wmat.c \
                        tests/model/test_model_bf16_weights.c bench/bench_model.c src/model/cost.c \
                        tests/model/test_model_bench.c
# cache storage pages, their allocation and tests
PAGING_FORMAT_FILES := src/base/alloc.c src/base/pages_resident.c src/cache/storage.c tests/base/test_pages.c \
                       tests/cache/test_storage_pages.c tests/tools/test_bench_pages_arg.c
# prefix caching: tenant isolation and the trace's NUL-aware strings
PREFIX_FORMAT_FILES := tools/json_nul.[ch] tests/cache/test_prefix_tenants.c tests/cache/test_prefix_sliding.c \
                       tests/cache/test_prefix_handles.c src/cache/prefix_hits.c src/cache/kv_events.c \
                       tests/cache/test_kv_events.c tests/cache/test_prefix_external.c
# NaN and Inf: the attention kernel's table, the runs that refuse non-finite logits
NONFINITE_FORMAT_FILES := tests/ops/test_ops_attention_nonfinite.c tests/model/test_model_nonfinite_logits.c
SERVE_FORMAT_FILES := tools/cmd_serve.[ch]
# memory that follows use: the manager's growing room and its tests
GROWTH_FORMAT_FILES := src/cache/manager_room.c tests/cache/test_manager_growth.c tests/cache/test_shared_pool.c
FORMAT_FILES := $(wildcard include/kvcache/base.h include/kvcache/export.h include/kvcache/half.h include/kvcache/layout.h \
                include/kvcache/kvcache.h include/kvcache/version.h src/base/status.c src/base/threads.h \
                src/base/version.c examples/*.c tests/base/test_status.c tests/base/test_version.c \
                tests/install/consumer.c tests/tools/test_cli_agrees.c tests/support/kvc_test_command.c tools/run_engine.[ch] \
                $(CONFIG_FORMAT_FILES) $(ENGINE_FORMAT_FILES) $(RUNTIME_FORMAT_FILES) \
                $(PAGING_FORMAT_FILES) $(PREFIX_FORMAT_FILES) $(GROWTH_FORMAT_FILES) \
                $(NONFINITE_FORMAT_FILES) $(SERVE_FORMAT_FILES))

BUILD := build
BUILD_ASAN := build-asan
BUILD_FUZZ := build-fuzz
# The Python package (python/) is tested in a virtualenv of Debian's python3;
# its PyPI dependencies come from its own metadata (the "test" extra).
PYTHON ?= /usr/bin/python3
PY_VENV := $(BUILD)/python-venv
PY_STAMP := $(PY_VENV)/.kvcache-deps
PIP := $(PY_VENV)/bin/pip --disable-pip-version-check

.PHONY: all deps configure build command demo install format format-check test unit-test python-test asan-test fuzz-test bench clean

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
	  if ! ASAN_OPTIONS=$(ASAN_OPTIONS_TEST) UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
	      $(BUILD_FUZZ)/corpus/$$name $$seeds > $(BUILD_FUZZ)/$$name.log 2>&1; then \
	    tail -n 60 $(BUILD_FUZZ)/$$name.log; echo "FAIL: $$name"; exit 1; fi; \
	  tail -n 6 $(BUILD_FUZZ)/$$name.log; \
	done

# First run: a virtualenv and `pip install ./python[test]` from PyPI (bounded
# retries; a clear failure offline). Later runs rebuild the extension in place
# (build/python-cmake) without the network, then run pytest (exit 5, no test
# collected, fails like any other non-zero exit).
python-test: build
	@[ -x $(PY_VENV)/bin/python ] || $(PYTHON) -m venv $(PY_VENV)
	@if [ ! -f $(PY_STAMP) ] || [ python/pyproject.toml -nt $(PY_STAMP) ]; then \
	  echo "installing ./python[test] and its PyPI dependencies into $(PY_VENV)"; \
	  SKBUILD_BUILD_DIR=$(CURDIR)/$(BUILD)/python-cmake $(PIP) install --timeout 30 --retries 2 --quiet "./python[test]" \
	    && touch $(PY_STAMP) \
	    || { echo "FAIL: pip could not install ./python[test] (PyPI unreachable? see the output above)"; exit 1; }; \
	fi
	SKBUILD_BUILD_DIR=$(CURDIR)/$(BUILD)/python-cmake $(PIP) install --no-build-isolation --no-index --no-deps --quiet ./python
	cd $(BUILD) && KVC_REQUIRE_BUILD=1 KVC_BUILD_DIR=$(CURDIR)/$(BUILD) KVC_SOURCE_DIR=$(CURDIR) MPLBACKEND=Agg \
	  $(CURDIR)/$(PY_VENV)/bin/python -m pytest -q -p no:cacheprovider $(CURDIR)/python/tests

format-check: deps
	clang-format --dry-run --Werror $(FORMAT_FILES)

format:
	clang-format -i $(FORMAT_FILES)

test: format-check unit-test python-test asan-test fuzz-test

bench: command
	./$(BUILD)/kvcache bench manager
	./$(BUILD)/kvcache bench prefix
	./$(BUILD)/kvcache bench engine
	./$(BUILD)/kvcache bench gemm
	./$(BUILD)/kvcache bench attention

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)
