# One entry point for people and CI. `make demo` and `make test` set everything up first.
VENV := .venv/bin
.PHONY: setup demo test lint fmt schemas test-rust test-python test-unit fake-reports bench fuzz wheel

setup:
	@scripts/setup

demo: setup
	@$(VENV)/python scripts/demo.py

test: setup lint test-rust test-python

# One wheel holding `fslab` and `fslab-engine` (maturin, pyproject.toml) in dist/:
# `pipx install dist/fslab-*.whl` or `uv tool install dist/fslab-*.whl` installs both.
wheel: setup
	$(VENV)/maturin build --release --locked --out dist

lint:
	cargo fmt --check
	cargo clippy --release --all-targets --locked -- -D warnings
	$(VENV)/ruff check python tests bench scripts
	$(VENV)/ruff format --check python tests bench scripts
	$(VENV)/mypy python/fslab
	# One at a time: mypy takes each extensionless script for a module named __main__.
	for f in scripts/demo.py bench/vs-fio bench/vs-tools bench/results-scale bench/time-to-answer bench/neighbour bench/stopping-rule bench/paired-design bench/busy-demo bench/fio-examples bench/fio-accepts bench/history tests/fakes/fslab-engine tests/fakes/make-reports; do $(VENV)/mypy --strict $$f || exit 1; done

test-rust:
	cargo test --release --locked

# Structured fuzzing (the tests run a few cases of each): the engine's parsers
# (engine/tests/fuzz.rs, proptest) and the lab's study reader and `fslab plan`
# (tests/test_fuzz_study.py, hypothesis). About 15 minutes on 2 cores; more with
# `make fuzz PROPTEST_CASES=200000 FSLAB_FUZZ_EXAMPLES=5000`.
PROPTEST_CASES ?= 20000
FSLAB_FUZZ_EXAMPLES ?= 300
fuzz: setup
	PROPTEST_CASES=$(PROPTEST_CASES) cargo test --release --locked -p fslab-engine --test fuzz
	FSLAB_FUZZ_EXAMPLES=$(FSLAB_FUZZ_EXAMPLES) $(VENV)/pytest -p no:cacheprovider tests/test_fuzz_study.py

test-python:
	FSLAB_TEST_OUTPUT=$(CURDIR)/test-output $(VENV)/pytest

# The lab's tests that need neither the built engine nor root, against a fake engine
# answering canned reports (tests/fakes/): a few minutes. It needs .venv (`make setup`),
# not a working engine.
test-unit:
	FSLAB_ENGINE=$(CURDIR)/tests/fakes/fslab-engine $(VENV)/pytest -m "not engine and not root"

# Regenerates the fake engine's canned reports with the real engine (after its report
# changes; tests/test_contract.py says when).
fake-reports:
	$(VENV)/python tests/fakes/make-reports

fmt:
	cargo fmt
	$(VENV)/ruff format python tests bench scripts

# Regenerates the committed JSON Schemas from the engine's types.
schemas:
	FSLAB_UPDATE_SCHEMAS=1 cargo test --release --locked --test schemas

bench: setup
	$(VENV)/python bench/vs-fio
