# xcbench — the two commands a user needs are `make demo` and `make test` (both run setup).
SHELL := /bin/bash
PY := /usr/bin/python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.xcbench-installed
# Debian packages: Ceph daemons + bindings, XRootD + XrdCeph, fio, gfal2, tools.
DEB_PACKAGES := ceph-mon ceph-osd ceph-mds ceph-mgr ceph-common ceph-fuse python3-rados \
	python3-cephfs fio xrootd-server xrootd-client xrootd-server-plugins xrootd-ceph-plugins \
	python3-xrootd python3-gfal2 gfal2-plugin-xrootd gfal2-plugin-http gfal2-plugin-file gfal2-util-scripts attr iperf3 python3-venv \
	uuid-runtime procps curl chromium python3-m2crypto fuse openssl iproute2 openssh-server \
	prometheus prometheus-node-exporter ceph-mgr-modules-core \
	xrootd-scitokens-plugins python-is-python3 \
	slurm-wlm munge

.PHONY: setup deb venv test slow unit integration lint typecheck mypy-run demo selftest bench clean

setup: deb venv

# apt-get update once, then install only what is missing: a second run does nothing. No daemon
# may start at install (openssh-server's sshd on :22): policy-rc.d says no while apt runs.
# Quiet: apt's and pip's output go to $(SETUP_LOG), one line per step here, the log's path
# (and its last lines) on failure.
SETUP_LOG := $(CURDIR)/.xcbench-setup.log
deb:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "setup: installing $$(echo $$missing | wc -w) Debian packages (apt-get; log: $(SETUP_LOG))"; \
	  guard=; [ -e /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; guard=1; }; \
	  echo "=== apt-get $$(date -u +%FT%TZ)" >>$(SETUP_LOG); \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; } >$(SETUP_LOG).step 2>&1; rc=$$?; \
	  cat $(SETUP_LOG).step >>$(SETUP_LOG); \
	  [ -z "$$guard" ] || rm -f /usr/sbin/policy-rc.d; \
	  if [ $$rc -ne 0 ]; then tail -n 5 $(SETUP_LOG).step | sed 's/^/  | /'; rm -f $(SETUP_LOG).step; \
	    echo "setup: apt-get failed (exit $$rc); the whole output is in $(SETUP_LOG)"; exit $$rc; fi; \
	  rm -f $(SETUP_LOG).step; \
	else echo "setup: Debian packages all present"; fi

# The venv comes from the system python so the Debian bindings (rados, cephfs, XRootD, gfal2)
# are visible; reinstalled only when pyproject.toml changes.
venv: $(STAMP)
$(STAMP): pyproject.toml
	@echo "setup: Python venv $(VENV) with xcbench and its PyPI packages (pip; log: $(SETUP_LOG))"
	@echo "=== pip $$(date -u +%FT%TZ)" >>$(SETUP_LOG); \
	{ { test -x $(BIN)/python || $(PY) -m venv --system-site-packages $(VENV); } && \
	  $(BIN)/python -m pip install -q --upgrade pip && \
	  $(BIN)/python -m pip install -q -e '.[test]'; } >$(SETUP_LOG).step 2>&1; rc=$$?; \
	cat $(SETUP_LOG).step >>$(SETUP_LOG); \
	if [ $$rc -ne 0 ]; then tail -n 5 $(SETUP_LOG).step | sed 's/^/  | /'; rm -f $(SETUP_LOG).step; \
	  echo "setup: pip failed (exit $$rc); the whole output is in $(SETUP_LOG)"; exit $$rc; fi; \
	rm -f $(SETUP_LOG).step
	@touch $(STAMP)

# pytest exit 5 = no tests collected: not a failure of the suite.
# the default suite: long scenarios (marker `slow`) have a short variant in it; they and the tests
# marked known_flaky (each with its reason and open issue) run with `make slow`.
# The unit tests (no cluster, no measurement) run on two workers (pytest-xdist), one per core of
# the 2-core reference box; the integration tests measure, so they run alone, one at a time.
DEFAULT := not slow and not known_flaky
test: setup
	@rc=0; \
	$(BIN)/python -m pytest -ra --durations=10 -n 2 -m "$(DEFAULT)" tests/unit; r=$$?; [ $$r -eq 5 ] || [ $$r -eq 0 ] || rc=$$r; \
	$(BIN)/python -m pytest -ra --durations=25 -m "$(DEFAULT)" tests/integration; r=$$?; [ $$r -eq 5 ] || [ $$r -eq 0 ] || rc=$$r; \
	exit $$rc

slow: setup
	$(BIN)/python -m pytest -ra -m "slow or known_flaky" tests; rc=$$?; [ $$rc -eq 5 ] && rc=0; exit $$rc

unit: setup
	$(BIN)/python -m pytest -ra tests/unit

integration: setup
	$(BIN)/python -m pytest -ra tests/integration

lint: setup
	$(BIN)/ruff check xcbench backends analysis tests benchmarks
	@$(MAKE) --no-print-directory mypy-run

# mypy on the package as installed: backends/ and analysis/ are xcbench.backends and
# xcbench.analysis, so a tree of symlinks gives mypy that layout (settings: mypy.ini).
typecheck: venv
	@$(MAKE) --no-print-directory mypy-run

mypy-run:
	@rm -rf .typecheck && mkdir -p .typecheck/xcbench && \
	for f in xcbench/*; do case $$f in */__pycache__) ;; *) ln -s ../../$$f .typecheck/xcbench/ ;; esac; done && \
	ln -s ../../backends .typecheck/xcbench/backends && ln -s ../../analysis .typecheck/xcbench/analysis
	MYPYPATH=.typecheck $(BIN)/mypy --cache-dir .typecheck/.cache -p xcbench

demo: setup
	@$(BIN)/xcbench demo

# known-answer scenarios on the embedded cluster (~10 min on 2 cores; the quick variant is in
# the integration suite): exit 1 if any verdict differs from its known answer
selftest: setup
	$(BIN)/xcbench selftest

bench: setup
	@for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	-$(BIN)/xcbench cluster down 2>/dev/null
	rm -rf $(VENV) .tox .xcbench .typecheck build *.egg-info
