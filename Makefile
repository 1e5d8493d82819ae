# The two commands of the README's quick start:  `make run`  and  `make test`.
# Both create .venv/ (Python 3.11) with the pinned versions of constraints.txt on first use: the
# package, the workflow engine (extra `workflow`: Snakemake) and the test tools (extra `dev`).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
ARGS   ?=

.PHONY: run test lint smoke report bench slurm clean

# uv (pinned in constraints.txt) installs the same pins in ~20 s where pip takes ~2 min; pip is
# the fallback where uv cannot be installed or cannot reach the index.  Both leave compiled
# bytecode (.pyc) beside every installed module: without it, every Python start compiles the
# sources of what it imports again wherever PYTHONDONTWRITEBYTECODE is set (as on this project's
# machines), which is two thirds of a `snakemake -n` (bench/bench_speed.py).
DEV := ".[workflow,dev]"
INSTALL = $(BIN)/pip install --quiet -c constraints.txt uv && \
          $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -c constraints.txt $(1) || \
          $(BIN)/pip install --quiet -c constraints.txt $(1)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(call INSTALL,-e $(DEV))
	$(BIN)/python -m softlin.kernels.build
	touch $(STAMP)

run: $(STAMP)                ## the whole workflow (every claim), locally on all cores
	$(BIN)/snakemake --workflow-profile workflow/profiles/default $(ARGS)

test: $(STAMP)               ## the test suite
	$(BIN)/python -m pytest $(ARGS)

lint: $(STAMP)               ## ruff (config in pyproject.toml) and snakemake --lint
	$(BIN)/ruff check .
	$(BIN)/snakemake --lint

smoke: $(STAMP)              ## the whole workflow at the smoke preset (minutes)
	$(BIN)/snakemake --workflow-profile workflow/profiles/default --config preset=smoke $(ARGS)

report: $(STAMP)             ## browsable HTML report of the last run
	$(BIN)/snakemake --workflow-profile workflow/profiles/default --report report.html $(ARGS)

slurm: $(STAMP)              ## add the SLURM executor plugin (the `slurm` extra) for workflow/profiles/slurm
	$(call INSTALL,-e ".[slurm]")

clean:                       ## remove computed results (keeps the environment)
	rm -rf results figures report.html .snakemake
