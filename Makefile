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

.PHONY: portability book test lint unit nbval book-strict execute benchmarks reproduce browser-check student pdf clean venv

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
	$(BIN)/ruff check gpc_ref tests benchmarks reproduce tools
	$(BIN)/ruff format --check gpc_ref tests benchmarks reproduce tools

## make test: lint, unit tests, every chapter executed with its stored outputs compared, then a warning-free
## book build, inspected. The chapters run under tests/nbtolerance.py: nbval's kernel and cell options, with
## printed numbers compared at the precision they are printed to and glued values compared in every cell
## (docs/DESIGN.md, "Tests"). The tests and chapters run on TEST_WORKERS processes (pytest-xdist); a
## chapter's cells stay together (--dist loadfile), each process with one BLAS thread.
## TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 2
CHECKS = PYTHONPATH=$(CURDIR)/tests$${PYTHONPATH:+:$$PYTHONPATH} $(BIN)/python -m pytest tests $(NOTEBOOKS) -p nbtolerance --nbtolerance --nbval-current-env \
	--nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=600 --nbval-kernel-startup-timeout=300 -p no:cacheprovider \
	-n $(TEST_WORKERS) --dist loadfile
test: lint $(MATHJAX)
	$(CHECKS)
	rm -rf _build/test-build
	$(BIN)/jupyter-book build . --warningiserror --keep-going --path-output _build/test-build
	GPC_BOOK_HTML=_build/test-build/_build/html $(BIN)/python -m pytest tests/book/test_book_html.py -p no:cacheprovider
	@echo "make test: lint, unit tests, notebooks, the book build and its HTML checks all passed"

## make portability [PORTABILITY_ENVS="..."]: the unit tests and every chapter (the checks of make test, against
## the stored outputs) under floating-point environments other than this machine's own:
##   perturb-1, perturb-2  every kernel matrix multiplied entry by entry by 1 + 1e-15 s_ij (two sign
##                         patterns), injected by tests/portability/sitecustomize.py, never by gpc_ref;
##   numpy-avx2            numpy's AVX-512 loops switched off (NPY_DISABLE_CPU_FEATURES), which changes the
##                         last bit of exp, log, log1p and expm1; only on a CPU that has them (on an AVX2
##                         CPU numpy's baseline loops round as its AVX2 ones do, so no switch imitates
##                         another CPU there, and this environment is skipped with a message).
## Run it before committing stored outputs (CONTRIBUTING.md); .ci/run runs perturb-1 after make test.
PORTABILITY_ENVS ?= perturb-1 perturb-2 numpy-avx2
portability: $(STAMP)
	@for env in $(PORTABILITY_ENVS); do \
		case $$env in \
			perturb-*) settings="GPC_FP_PERTURB=$${env#perturb-} PYTHONPATH=$(CURDIR)/tests/portability";; \
			numpy-avx2) if $(BIN)/python -c "from numpy._core._multiarray_umath import __cpu_features__ as f; raise SystemExit(not f['AVX512F'])"; \
				then settings="NPY_DISABLE_CPU_FEATURES='X86_V4 AVX512_ICL'"; \
				else echo "make portability: numpy-avx2 skipped: this CPU has no AVX-512 loops to switch off"; continue; fi;; \
			*) echo "make portability: unknown environment $$env"; exit 2;; \
		esac; \
		echo "make portability: $$env ($$settings)"; \
		eval "env $$settings $(CHECKS)" || { echo "make portability: the checks failed under $$env"; exit 1; }; \
	done
	@echo "make portability: the checks passed under $(PORTABILITY_ENVS)"

unit: $(STAMP)
	$(BIN)/python -m pytest tests -p no:cacheprovider

nbval: $(STAMP)
	PYTHONPATH=$(CURDIR)/tests $(BIN)/python -m pytest $(NOTEBOOKS) -p nbtolerance --nbtolerance --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=600 --nbval-kernel-startup-timeout=300 -p no:cacheprovider

## make execute: re-run every chapter in place so the stored outputs are what the current code prints.
## Run it (or `make execute NOTEBOOKS=book/x.ipynb`) after changing gpc_ref, then commit the notebooks.
# the scoreboard page renders book/reproductions.csv, which the other chapters write: it runs last
execute: $(STAMP)
	for nb in $(filter-out book/reproductions.ipynb,$(NOTEBOOKS)) $(filter book/reproductions.ipynb,$(NOTEBOOKS)); do \
		GPC_SCOREBOARD=write $(BIN)/jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.record_timing=False \
			--ExecutePreprocessor.timeout=600 --ExecutePreprocessor.kernel_name=python3 $$nb || exit 1; \
	done
	$(BIN)/python tests/strip_notebook_metadata.py $(NOTEBOOKS)

# playwright-core drives Debian's chromium (it never downloads a browser of its own)
PLAYWRIGHT := _build/node/node_modules/playwright-core
$(PLAYWRIGHT):
	@command -v npm >/dev/null || { echo "npm is needed for playwright-core (apt-get install npm)"; exit 1; }
	npm install --silent --prefix _build/node playwright-core@1

## make browser-check: every page of the built book in headless chromium (Debian's package) at
## phone (390 px), desktop (1280 px) and wide (1920 px) width: console errors, overflow past the column,
## inline formulas or tables that scroll, scrolling without an edge cue, a figure that scrolls sideways
## at 1280 px or wider (it must fit the column), figure text under 8 px, figures
## without a full-size link or with a path for alt text, the contents toggle, TeX errors; exits
## non-zero on any. Whole-page screenshots of BROWSER_PAGES in _build/browser-check/.
## Needs chromium (apt-get install chromium) and npm; builds the book into _build/test-build if absent.
BROWSER_PAGES ?= laplace_binary notation reproductions which_method
browser-check: $(STAMP) $(MATHJAX) $(PLAYWRIGHT)
	@command -v chromium >/dev/null || { echo "browser-check needs Debian's chromium: apt-get install chromium"; exit 1; }
	test -d _build/test-build/_build/html || $(BIN)/jupyter-book build . --warningiserror --keep-going --path-output _build/test-build
	PLAYWRIGHT_CORE=$(CURDIR)/$(PLAYWRIGHT) node tests/browser_check.mjs _build/test-build/_build/html $(BROWSER_PAGES)

## make student: the student edition of the notebooks (solutions and their code removed, an empty
## code cell after each exercise, glue values, figures and cross-references written out for
## JupyterLab) in _build/student/, zipped as _build/student/gpc-book-student.zip.
student: $(STAMP)
	$(BIN)/python tools/student_edition.py --out _build/student

## make pdf: the whole book as one PDF, _build/pdf/gpc-book.pdf: a single-page HTML build printed by
## headless chromium once MathJax has typeset it, with a table of contents (page numbers read back
## with pdftotext), code that wraps, and the solutions in an appendix.
## Needs chromium, npm and poppler-utils (apt-get install chromium npm poppler-utils).
pdf: $(STAMP) $(MATHJAX) $(PLAYWRIGHT)
	@command -v chromium >/dev/null || { echo "make pdf needs Debian's chromium: apt-get install chromium"; exit 1; }
	@command -v pdftotext >/dev/null || { echo "make pdf needs pdftotext: apt-get install poppler-utils"; exit 1; }
	rm -rf _build/pdf-build
	$(BIN)/jupyter-book build . --builder singlehtml --warningiserror --keep-going --path-output _build/pdf-build
	mkdir -p _build/pdf
	PLAYWRIGHT_CORE=$(CURDIR)/$(PLAYWRIGHT) node tools/print_pdf.mjs _build/pdf-build/_build/singlehtml _build/pdf/gpc-book.pdf

## make reproduce [ONLY="name ..."]: the paper-scale experiments (reproduce/*.py), each stored as
## book/results/<name>.json with its provenance; results already stored from this commit are kept.
reproduce: $(STAMP)
	GPC_SCOREBOARD=write $(BIN)/python reproduce/run.py $(ONLY)

benchmarks: $(STAMP)
	for script in benchmarks/*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf _build
