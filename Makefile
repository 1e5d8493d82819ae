# The two commands of the README's quick start:  `make run`  and  `make test`.
# Both create .venv/ (Python 3.11) with the pinned versions of constraints.txt on first use: the
# package, the workflow engine (extra `workflow`: Snakemake) and the test tools (extra `dev`).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
ARGS   ?=

.PHONY: run test lint smoke report bench slurm clean calibration readme-table

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

# docs/calibration.md: the default run (results/) beside C1-C4 at other seeds (results/other_seeds/,
# config/other_seeds.yaml; C3's Gaussian trajectories are shared with c3_replicates, so linked) and
# C5's first two committed replicates (docs/c5_replicates/)
OTHER := results/other_seeds
CAL_PAIRS = $(foreach c,c1 c2 c3 c4,--pair $(shell echo $(c) | tr a-z A-Z) results/$(c)/verdict.json $(OTHER)/results/$(c)/verdict.json) \
            --pair C5 docs/c5_replicates/s2025_i0_e31337/verdict.md docs/c5_replicates/s2026_i10_e31338/verdict.md
calibration: $(STAMP)        ## docs/calibration.md: two independent replications of every claim side by side
	$(BIN)/snakemake --workflow-profile workflow/profiles/default $(ARGS)
	mkdir -p $(OTHER)/results/c3 && for d in tasks trajectories; do mkdir -p results/c3/$$d; \
	    [ -e $(OTHER)/results/c3/$$d ] || ln -s $(CURDIR)/results/c3/$$d $(OTHER)/results/c3/$$d; done
	$(BIN)/snakemake --workflow-profile workflow/profiles/default -s $(CURDIR)/Snakefile -d $(OTHER) c1 c2 c3 c4 \
	    --configfile $(CURDIR)/config/other_seeds.yaml $(ARGS)
	$(BIN)/python -m softlin.calibration $(CAL_PAIRS) -o docs/calibration.md \
	    --note C1 "task blocks: seed 31001 (default) vs 1000001" --note C2 "task blocks: seed 32001 vs 2000001" \
	    --note C3 "seeds 777 + 13 i: i < 5 (default; Rademacher i < 2) vs 5 <= i < 20 (Rademacher 842, 855, 868)" \
	    --note C4 "C4c reads no random quantity (the alpha sweep is deterministic)" \
	    --note C5 "replicates 1 and 2 of c5_replicates (training stream, initialisation, test set)"

readme-table:                ## README.md's verdict table and docs/default_run/ from the last default run
	$(BIN)/python -m softlin.readme_table results/verdicts.md

slurm: $(STAMP)              ## add the SLURM executor plugin (the `slurm` extra) for workflow/profiles/slurm
	$(call INSTALL,-e ".[slurm]")

clean:                       ## remove computed results (keeps the environment)
	rm -rf results figures report.html .snakemake
