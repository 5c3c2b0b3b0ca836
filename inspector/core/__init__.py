"""The core layer: resolve, prepare and load models safely (``loading``), run one forward through the project's
attention backend (``forward``), record a capture (``capture``), read what the model produced (``outputs``) and
plan a request within the memory budget (``budget``). Never mutates the cached model; imports only ``base`` and
``kernels``."""
