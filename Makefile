# The two commands of the project: `make book` and `make test`.
# Each creates .venv and installs requirements.txt and gpc_ref (editable) on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# Quiet, deterministic execution for notebooks and tests: no progress bars on
# stderr and one BLAS thread per process (figures use the inline backend).
export TQDM_DISABLE := 1
export OMP_NUM_THREADS := 1
export OPENBLAS_NUM_THREADS := 1
export MKL_NUM_THREADS := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1

NOTEBOOKS := $(sort $(wildcard book/*.ipynb))

.PHONY: book test unit nbval book-strict execute benchmarks clean venv

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

## make book: build the HTML book from the outputs stored in the notebooks.
book: $(STAMP)
	$(BIN)/jupyter-book build . --warningiserror --keep-going
	@echo "The book is at $(CURDIR)/_build/html/index.html"

## make test: unit tests, nbval over every chapter, then a warning-free book build.
test: $(STAMP)
	$(BIN)/python -m pytest tests $(NOTEBOOKS) --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=600 -p no:cacheprovider
	rm -rf _build/test-build
	$(BIN)/jupyter-book build . --warningiserror --keep-going --path-output _build/test-build
	@echo "make test: unit tests, notebooks and the book build all passed"

unit: $(STAMP)
	$(BIN)/python -m pytest tests -p no:cacheprovider

nbval: $(STAMP)
	$(BIN)/python -m pytest $(NOTEBOOKS) --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=600 -p no:cacheprovider

## make execute: re-run every chapter in place so the stored outputs are what the current code prints.
## Run it (or `make execute NOTEBOOKS=book/x.ipynb`) after changing gpc_ref, then commit the notebooks.
execute: $(STAMP)
	for nb in $(NOTEBOOKS); do \
		$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
			--ExecutePreprocessor.timeout=600 --ExecutePreprocessor.kernel_name=python3 $$nb || exit 1; \
	done

benchmarks: $(STAMP)
	for script in benchmarks/*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf _build
