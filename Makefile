# argus developer entry points: a thin layer over CMakePresets.json (see `make help`).
#
#   make demo        install missing Debian packages, build and run examples/00_demo.cpp
#   make test        GCC: everything; Clang: compile-time checks; ASan+UBSan (Clang): the tests
#                    labelled memory, the libFuzzer targets 30 s each; TSan: those labelled threads
#   make test-gcc | test-clang | test-asan | test-tsan    one configuration
#   make test-fuzz   only the libFuzzer targets' 30 s runs (the asan preset's build)
#   make test-asan-all   every unit and golden test under ASan+UBSan (long)
#   make fuzz        a libFuzzer target for FUZZ_SECONDS (default 3600), sanitizers on
#   make bench       Release build of bench/ with the oneDNN and libtorch peers, then bench/run.py
#                    (make bench-quick: the short run; BENCH_PEERS=0: without the peers)
#   make deps        install the missing Debian packages (apt-get; sudo when not root)
#   make clean       remove build/
#
# Each configuration lives in build/<preset>; re-running a target only rebuilds what changed.
# JOBS caps parallel compiles (default 2, the size of the CI machine).

SHELL := /bin/bash
JOBS ?= 2
# Debian 12 packages the build, the tests (clang-format, clang-tidy: labels format, tidy;
# libFuzzer: label fuzz) and bench/ (compare.py needs numpy and scipy) use; nlohmann-json3-dev
# (safetensors headers) and libstb-dev (PNG) serve argus/io and argus/viz. llvm-14 brings
# llvm-symbolizer-14, which Clang's sanitizer runtime (the asan preset) looks for to print
# function names and lines in a report; GCC's has a symbolizer built in, Clang's has not.
DEPS := g++-12 clang-14 clang-format-14 clang-tidy-14 libfuzzer-14-dev llvm-14 cmake ninja-build \
        libboost-dev libboost-test-dev libbenchmark-dev libbenchmark-tools libeigen3-dev \
        python3-matplotlib python3-numpy python3-scipy nlohmann-json3-dev libstb-dev
# The peers bench/ compares with (issue 10), installed by `make bench` only, never by `make deps`
# or `make test`: oneDNN, libtorch (about 1.5 GB with its dependencies), and OpenBLAS built for
# OpenMP, so that libtorch's matrix products do not run on the reference BLAS (libblas3, which
# libtorch's packages accept and which is some ten times slower). Where they cannot be
# installed, `make bench` says so and runs without their rows.
BENCH_PEER_DEPS := libdnnl-dev libtorch-dev libopenblas0-openmp
BENCH_PEERS ?= 1

# One configuration at a time: never let `make -j` run two presets at once.
.NOTPARALLEL:
.PHONY: help deps bench-deps demo test test-gcc test-clang test-asan test-asan-all test-tsan test-fuzz fuzz bench \
        bench-quick clean
.DEFAULT_GOAL := help

help:
	@sed -n '1,16p' Makefile | sed 's/^# \{0,1\}//'

deps:
	@if ! command -v dpkg-query >/dev/null; then \
	  echo "deps: not a Debian system; install by hand: $(DEPS)"; exit 0; fi; \
	missing=""; \
	for p in $(DEPS); do \
	  dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then echo "deps: all packages present"; exit 0; fi; \
	echo "deps: installing$$missing"; \
	sudo=""; [ "$$(id -u)" -eq 0 ] || sudo="sudo"; \
	$$sudo apt-get update && \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing

# The same for BENCH_PEER_DEPS; a failure is a message, not an error (bench/ builds without them).
bench-deps:
	@if [ "$(BENCH_PEERS)" != 1 ]; then echo "bench-deps: BENCH_PEERS=$(BENCH_PEERS): peers not installed"; exit 0; fi; \
	if ! command -v dpkg-query >/dev/null; then \
	  echo "bench-deps: not a Debian system; the peer rows need: $(BENCH_PEER_DEPS)"; exit 0; fi; \
	missing=""; \
	for p in $(BENCH_PEER_DEPS); do \
	  dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then echo "bench-deps: all peer packages present"; exit 0; fi; \
	echo "bench-deps: installing$$missing"; \
	sudo=""; [ "$$(id -u)" -eq 0 ] || sudo="sudo"; \
	{ $$sudo apt-get update && \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; } || \
	echo "bench-deps: could not install$$missing; bench/ is built without the rows that need them"

demo: deps
	@test -f examples/00_demo.cpp || { echo "demo: examples/00_demo.cpp does not exist yet"; exit 1; }
	cmake --preset gcc
	cmake --build --preset gcc -j $(JOBS) --target 00_demo
	./build/gcc/examples/00_demo

# configure, build, ctest for preset $(1)
define run_preset
	cmake --preset $(1)
	cmake --build --preset $(1) -j $(JOBS)
	ctest --preset $(1) -j $(JOBS)
endef

# The CI suite, under 20 minutes from cold on 2 cores (docs/contributing/testing.md has the
# figures): everything with GCC but the headers alone; with Clang the compile-time checks
# (compile-fail tests, static tests, every header alone), which are what differs between
# compilers; under ASan+UBSan
# (Clang) the tests labelled memory (the kernels, file parsing, run-time checks, bad values,
# golden forward and gradients) and the libFuzzer targets for 30 s each (random shapes, masks
# and values), which link the same kernels; under TSan the tests labelled threads. Every
# configuration compiles the kernels once (ARGUS_COMPILED_KERNELS) and the tests at -Og
# (ASan+UBSan and the fuzzers: -O0), with precompiled headers. `make test-clang` runs the
# whole suite with Clang, `make test-asan-all` every unit and golden test under ASan+UBSan.
# Each compile-fail test is a pair: the misuse must fail with its rule (both compilers) and its
# twin, the file without the misuse, must compile; a twin shows the file valid apart from the
# misuse, which one compiler suffices for, so here only GCC compiles the twins, up to 64 in one
# TU (`make test-clang` compiles them with Clang too).
# Likewise every header alone (the test "headers") only with Clang: a missing #include shows
# with either compiler, both reading the same libstdc++ (`make test-gcc` runs it with GCC).
test: deps
	cmake --preset gcc
	cmake --build --preset gcc -j $(JOBS)
	ctest --preset gcc -j $(JOBS) -E '^headers$$'
	cmake --preset clang
	cmake --build --preset clang -j $(JOBS) --target argus_static_tests argus_header_tests argus_compile_fail_pch
	ctest --preset clang -j $(JOBS) -L compile_fail -E '\.twin$$'
	ctest --preset clang -j $(JOBS) -R '^(static|headers)$$'
	$(call run_preset,asan)
	$(call run_preset,tsan)

test-gcc: deps
	$(call run_preset,gcc)

test-clang: deps
	$(call run_preset,clang)

test-asan: deps
	$(call run_preset,asan)

test-asan-all: deps
	cmake --preset asan -DARGUS_TEST_ONLY_LABEL= -B build/asan-all
	cmake --build build/asan-all -j $(JOBS)
	ctest --test-dir build/asan-all -j $(JOBS) --output-on-failure

test-tsan: deps
	$(call run_preset,tsan)

# The fuzzers (fuzz.<stem> for each tests/fuzz/<stem>.cpp) are built by the asan preset,
# beside the tests labelled memory, and link the same instrumented kernels.
FUZZ_TARGETS := $(addprefix fuzz.,$(basename $(notdir $(wildcard tests/fuzz/*.cpp))))
test-fuzz: deps
	cmake --preset asan
	cmake --build --preset asan -j $(JOBS) --target $(FUZZ_TARGETS)
	ctest --preset asan -j $(JOBS) -L fuzz

# The long fuzzing run: FUZZ_SECONDS of tests/fuzz/$(FUZZER).cpp (attention_fuzzer, the
# forward, or gradient_fuzzer, training), one job, in build/fuzz: the asan preset's
# configuration with the fuzzer's own TU at -O1 and with libFuzzer's comparison tracing (the
# asan preset compiles it at -O0 without, for `make test`: a third of the time to compile,
# about half the inputs a second). The corpus it grows stays in build/fuzz/tests/fuzz/corpus/
# for the next run.
FUZZ_SECONDS ?= 3600
FUZZER ?= attention_fuzzer
fuzz: deps
	cmake --preset asan -B build/fuzz -DARGUS_FUZZ_OPTIMIZATION=-O1
	cmake --build build/fuzz -j $(JOBS) --target fuzz.$(FUZZER)
	ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ./build/fuzz/tests/fuzz/fuzz.$(FUZZER) -max_total_time=$(FUZZ_SECONDS) -timeout=20 \
	  -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=build/fuzz/tests/fuzz/ \
	  build/fuzz/tests/fuzz/corpus/$(FUZZER) tests/fuzz/corpus/$(FUZZER)

# BENCH_ARGS goes to bench/run.py (e.g. BENCH_ARGS=--no-compile); bench-quick is the short run.
# BENCH_PEERS=0 leaves the oneDNN and libtorch peers out (not installed, not built).
bench: deps bench-deps
	cmake --preset release -DARGUS_BENCH_PEERS=$(if $(filter 1,$(BENCH_PEERS)),ON,OFF)
	cmake --build --preset release -j $(JOBS)
	ARGUS_BUILD_DIR=build/release python3 bench/run.py $(BENCH_ARGS)

bench-quick:
	$(MAKE) bench BENCH_ARGS="--quick $(BENCH_ARGS)"

clean:
	rm -rf build
