# The two commands: `make demo` (the main job on embedded defaults) and `make test`.
# Each creates .venv if missing, installs torch==2.13.0 first (the CPU build), then .[all,dev].
# Both are idempotent: a second run reinstalls nothing unless pyproject.toml changed.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.rlsuite-installed

.PHONY: demo test test-slow test-all lint bench bench-smoke results install system-deps sumo-1.9.2 clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[all,dev]"
	@touch $(STAMP)

install: $(STAMP)

system-deps:
	@bash scripts/system-deps.sh

# RESCO's SUMO release, beside the project's own (libsumo 1.28), in its own directory: the
# RESCO comparison and the tests that drive it over TraCI use it. Skipped when present; a
# failed download only warns (those tests then say how to install it).
SUMO_OLD := $(PY) -c "from rlsuite.apps.traffic import sumo_versions as s; s.sumo_home_for('1.9.2')"
sumo-1.9.2: install
	@$(SUMO_OLD) 2>/dev/null || $(PY) -m $$($(PY) -c "from rlsuite.apps.traffic import sumo_versions as s; print(s.install_command('1.9.2'))") -q \
	  || echo "warning: could not install SUMO 1.9.2; its tests will say how"

demo: system-deps install
	$(PY) -m rlsuite.demo

# The default tier (every test not marked slow; ~10 min on 2 cores). `make test-slow` runs
# the tests marked slow (learning to a threshold, kills and resumes, Tune, clusters, online
# retrains; ~15 min); CI (.ci/run) runs both; `make test-all` too.
test: system-deps install sumo-1.9.2
	PY=$(PY) TIER=default bash scripts/test.sh

test-slow: system-deps install sumo-1.9.2
	PY=$(PY) TIER=slow bash scripts/test.sh

test-all: test test-slow

lint: install
	$(PY) -m ruff check rlsuite tests benchmarks
	$(PY) -m ruff format --check rlsuite tests benchmarks

bench: install
	$(VENV)/bin/rlsuite bench run platform_sampling

# Every RESULTS command in its --quick form, and every benchmark without a row in its own
# (tiny budgets, files under runs/bench-quick/; see rlsuite/bench/smoke.py), one at a time
# under the heavy-job lock: about an hour on 2 cores, so not part of `make test`.
# BENCH_SMOKE_ARGS="--rows --hold-lock" keeps the lock for the whole run on a shared machine.
BENCH_SMOKE_ARGS ?= --rows
bench-smoke: system-deps install sumo-1.9.2
	$(VENV)/bin/rlsuite bench smoke $(BENCH_SMOKE_ARGS)

# The table at the top of benchmarks/RESULTS.md, from benchmarks/results/<app>/*.json.
results: install
	$(VENV)/bin/rlsuite bench report

clean:
	rm -rf $(VENV) build *.egg-info
