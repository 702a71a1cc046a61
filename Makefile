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
# MathJax is served with the book (not from a CDN), so that equations render offline too;
# npm fetches it once into _build/ (it is not committed).
MATHJAX_VERSION := 3.2.2
MATHJAX := _build/mathjax/mathjax/tex-chtml.js

.PHONY: book test lint unit nbval book-strict execute benchmarks reproduce browser-check clean venv

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

$(MATHJAX):
	@command -v npm >/dev/null || { echo "npm is needed to fetch MathJax for the book (apt-get install npm)"; exit 1; }
	rm -rf _build/mathjax && mkdir -p _build/mathjax/download _build/mathjax/mathjax
	cd _build/mathjax/download && npm pack --silent mathjax@$(MATHJAX_VERSION) >/dev/null && tar xzf mathjax-$(MATHJAX_VERSION).tgz
	cd _build/mathjax/download/package/es5 && cp -r tex-chtml.js output input ui a11y adaptors ../../../mathjax/
	rm -rf _build/mathjax/download

## make book: build the HTML book from the outputs stored in the notebooks.
book: $(STAMP) $(MATHJAX)
	$(BIN)/jupyter-book build . --warningiserror --keep-going
	@echo "The book is at $(CURDIR)/_build/html/index.html"

## make lint: ruff's lint and format checks over the package, the tests and the benchmarks.
lint: $(STAMP)
	$(BIN)/ruff check gpc_ref tests benchmarks reproduce
	$(BIN)/ruff format --check gpc_ref tests benchmarks reproduce

## make test: lint, unit tests, nbval over every chapter, then a warning-free book build, inspected.
test: lint $(MATHJAX)
	$(BIN)/python -m pytest tests $(NOTEBOOKS) --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=600 -p no:cacheprovider
	rm -rf _build/test-build
	$(BIN)/jupyter-book build . --warningiserror --keep-going --path-output _build/test-build
	GPC_BOOK_HTML=_build/test-build/_build/html $(BIN)/python -m pytest tests/test_book_html.py -p no:cacheprovider
	@echo "make test: lint, unit tests, notebooks, the book build and its HTML checks all passed"

unit: $(STAMP)
	$(BIN)/python -m pytest tests -p no:cacheprovider

nbval: $(STAMP)
	$(BIN)/python -m pytest $(NOTEBOOKS) --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=600 -p no:cacheprovider

## make execute: re-run every chapter in place so the stored outputs are what the current code prints.
## Run it (or `make execute NOTEBOOKS=book/x.ipynb`) after changing gpc_ref, then commit the notebooks.
execute: $(STAMP)
	for nb in $(NOTEBOOKS); do \
		$(BIN)/jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.record_timing=False \
			--ExecutePreprocessor.timeout=600 --ExecutePreprocessor.kernel_name=python3 $$nb || exit 1; \
	done
	$(BIN)/python tests/strip_notebook_metadata.py $(NOTEBOOKS)

## make browser-check: the built book in headless chromium (Debian's package) at desktop and phone
## width: console errors, equations and inline formulas that run past the column; screenshots of one
## chapter in _build/browser-check/. Needs chromium (apt-get install chromium) and npm.
BROWSER_PAGE ?= laplace_binary
browser-check: $(MATHJAX)
	@command -v chromium >/dev/null || { echo "browser-check needs Debian's chromium: apt-get install chromium"; exit 1; }
	test -d _build/node/node_modules/playwright-core || npm install --silent --prefix _build/node playwright-core@1
	test -d _build/test-build/_build/html || $(BIN)/jupyter-book build . --warningiserror --keep-going --path-output _build/test-build
	PLAYWRIGHT_CORE=$(CURDIR)/_build/node/node_modules/playwright-core node tests/browser_check.mjs \
		_build/test-build/_build/html $(BROWSER_PAGE)

## make reproduce [ONLY="name ..."]: the paper-scale experiments (reproduce/*.py), each stored as
## book/results/<name>.json with its provenance; results already stored from this commit are kept.
reproduce: $(STAMP)
	$(BIN)/python reproduce/run.py $(ONLY)

benchmarks: $(STAMP)
	for script in benchmarks/*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf _build
