# argus developer entry points: a thin layer over CMakePresets.json (see `make help`).
#
#   make demo        install missing Debian packages, build and run examples/00_demo.cpp
#   make test        the whole suite: GCC, then Clang, then ASan+UBSan; stops at the first failure
#   make test-gcc | test-clang | test-asan    one configuration (configure, build -j2, ctest)
#   make bench       Release build of bench/, then bench/run.py
#   make deps        install the missing Debian packages (apt-get; sudo when not root)
#   make clean       remove build/
#
# Each configuration lives in build/<preset>; re-running a target only rebuilds what changed.
# JOBS caps parallel compiles (default 2, the size of the CI machine).

SHELL := /bin/bash
JOBS ?= 2
# Debian 12 packages the build, the tests and bench/ (compare.py needs numpy and scipy) use.
DEPS := g++-12 clang-14 cmake ninja-build libboost-dev libboost-test-dev libbenchmark-dev \
        libbenchmark-tools libeigen3-dev python3-matplotlib python3-numpy python3-scipy

# One configuration at a time: never let `make -j` run two presets at once.
.NOTPARALLEL:
.PHONY: help deps demo test test-gcc test-clang test-asan bench clean
.DEFAULT_GOAL := help

help:
	@sed -n '1,11p' Makefile | sed 's/^# \{0,1\}//'

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

test: deps
	$(call run_preset,gcc)
	$(call run_preset,clang)
	$(call run_preset,asan)

test-gcc: deps
	$(call run_preset,gcc)

test-clang: deps
	$(call run_preset,clang)

test-asan: deps
	$(call run_preset,asan)

bench: deps
	cmake --preset release
	cmake --build --preset release -j $(JOBS)
	@if [ -f bench/run.py ]; then \
	  ARGUS_BUILD_DIR=build/release python3 bench/run.py; \
	else \
	  echo "bench: bench/run.py does not exist yet; the programs are in build/release/bench/"; \
	fi

clean:
	rm -rf build
