"""The limits every layer plans against, in one place: how much text a request may carry and how many bytes of
attention weights or activations one request may hold. A page, a command and the hosted policy read the same
numbers from here (the hosted instance halves the weights budget; ``inspector.serving.hosting``)."""

# The app's text limit: tokenising is linear, but a pasted book would stall a session before the length check.
MAX_TEXT_CHARS = 20_000

# A 512-token capture of the bundled 6 × 12 model with every layer's weights is 75 MiB; the UI caches a few
# captures, so 256 MiB per capture keeps a handful of long texts in memory on a small server.
ALL_LAYERS_WEIGHTS_BUDGET_BYTES = 256 * 2**20
# Half the local budget: several visitors' captures share the server's memory and st.cache_data.
HOSTED_WEIGHTS_BUDGET_BYTES = 128 * 2**20
# Activations an attribution run may keep for its backward passes; batches are sized to it
# (inspector.analyses.attribution.targets.batch_size_for).
ATTRIBUTION_MEMORY_BUDGET_BYTES = 512 * 2**20
# Both texts of a comparison keep every layer's n×n weights (the page draws any head side by side):
# 2 × 6 × 12 × 256² float32 is 38 MiB for the bundled model — a sentence pair is a few dozen tokens.
COMPARE_WEIGHTS_BUDGET_BYTES = 512 * 2**20
