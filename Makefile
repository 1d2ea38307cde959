# volfence.csi — the two commands that matter are `make demo` and `make test` (see README.md).
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV := .venv
PY := $(VENV)/bin/python
# The lab (tools/lab) runs from the project virtualenv, where `make setup` installs it and the API emulator.
LAB := $(PY) -m volfence_lab
NODE ?= node-b

.PHONY: help setup setup-test setup-demo demo test check sanity units integration lab-up lab-down lab-status lab-exec lab-hold lab-release \
	lab-kill-node lab-revive-node lab-scenario bench release-check docs clean newcomer

help:
	@echo "make demo        set up this machine, start the lab, run the main job on it, clean up"
	@echo "make test        set up and run every test (sanity, unit, integration on the lab)"
	@echo "make setup-demo | setup-test   set up only what the demo runs | everything the tests need"
	@echo "make check [BASE=HEAD~3]  the fast loop: sanity and the tests of what the change touches"
	@echo "make lab-up | lab-down | lab-status"
	@echo "make lab-exec NODE=node-b CMD='rbd status rbd/img'"
	@echo "make lab-hold NODE=node-b IMAGE=rbd/img [LOCK_ID=kubelet_lock_magic_node-b]"
	@echo "make lab-release [NODE=node-b]"
	@echo "make lab-kill-node NODE=node-b   kubelet dies, Ceph clients stay (stale-rbd-watcher)"
	@echo "make lab-revive-node NODE=node-b back as after a reboot"
	@echo "make lab-scenario NAME=stale-rbd-watcher|stale-volumeattachment|stale-rbd-lock"
	@echo "make bench       every benchmark, then one table: figure, baseline, goal, met (.cache/bench/)"
	@echo "make release-check  changelog, ansible-lint, galaxy build+install, galaxy-importer, ansible-builder"
	@echo "make docs        render module docs into docs/modules"
	@echo "make newcomer    time make demo and make test as a newcomer meets them (fresh clone and HOME)"

# setup: everything make test needs (setup-test is the same); setup-demo: only what make demo runs.
setup setup-test:
	@scripts/setup.sh
	@mkdir -p .cache/collections/ansible_collections/volfence
	@ln -sfn ../../../.. .cache/collections/ansible_collections/volfence/csi

setup-demo:
	@scripts/setup.sh --demo
	@mkdir -p .cache/collections/ansible_collections/volfence
	@ln -sfn ../../../.. .cache/collections/ansible_collections/volfence/csi

demo: setup-demo
	@scripts/demo.sh

test: setup
	@/usr/bin/python3 scripts/run_tests.py

sanity: setup
	@scripts/ansible_test.sh sanity

# The fast loop: sanity, and the unit and integration tests of what the work not yet committed touches
# (BASE=HEAD~3: the last three commits too). make test stays the whole suite.
check: setup
	@$(PY) scripts/quick_check.py $(if $(BASE),--base $(BASE))

units: setup
	@scripts/ansible_test.sh units

integration: setup
	@/usr/bin/python3 scripts/run_tests.py integration

lab-up: setup
	@$(LAB) up

lab-down:
	@if [ -x $(PY) ]; then $(LAB) down; fi

lab-status:
	@$(LAB) status

lab-exec:
	@$(LAB) exec $(NODE) $(CMD)

lab-hold:
	@$(LAB) hold $(NODE) $(IMAGE) $(if $(LOCK_ID),--lock-id $(LOCK_ID))

lab-kill-node:
	@$(LAB) kill-node $(NODE)

lab-revive-node:
	@$(LAB) revive-node $(NODE)

lab-scenario:
	@$(LAB) scenario $(NAME)

# Benchmarks run on a lab of their own (prefix vfbnch, 6 nodes: the rack of bench_failover is 5 of them); results go to .cache/bench/.
# Every scripts/bench_*.py, then scripts/bench_report.py prints them in one table (figure, baseline, goal,
# met) and fails when a goal is missed or a row is missing (a file older than this run counts as missing).
bench: setup
	@mkdir -p .cache/bench
	@export LAB_PREFIX=vfbnch LAB_NODES=6; unset LAB_DIR LAB_SLOT; since=$$(date +%s); $(LAB) up >/dev/null && \
	  (for b in scripts/bench_*.py; do [ "$$b" = scripts/bench_report.py ] || $(PY) $$b; done; \
	   $(LAB) down >/dev/null; echo; $(PY) scripts/bench_report.py --since $$since)

release-check: setup
	@scripts/check_release.sh

docs: setup
	@scripts/build_docs.sh
	@PYTHONPATH=.cache/collections $(PY) scripts/awx_surveys.py

lab-release:
	@$(LAB) release $(if $(filter command line,$(origin NODE)),$(NODE))

clean: lab-down
	rm -rf .cache tests/output

# The README's two commands in a fresh clone with a fresh HOME (caches, pip, ansible-test, Ceph roots),
# timed by phase and lane (scripts/newcomer.sh; DEMO_ONLY=1: make demo only).
newcomer:
	@scripts/newcomer.sh $(if $(DEMO_ONLY),--demo-only)
