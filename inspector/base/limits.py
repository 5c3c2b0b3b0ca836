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

# Long jobs on a hosted instance (issue 33, item 1): every page's job is planned against the deadline and a memory
# budget before it starts (inspector.serving.jobs). The longest text each job reads, for the bundled 6-layer ×
# 12-head MiniLM (23 M parameters) — chosen from single runs on a 2-core server (docs/BENCHMARKS.md "Hosted
# jobs") to end well inside the 60 s deadline — and scaled down for larger models. Attribution runs occlusion,
# value zeroing and ERASER at about one forward per token and per removal, so it gets the fewest tokens.
HOSTED_JOB_TOKENS = {"heads": 256, "attribution": 128, "lessons": 256, "compare": 256, "generate": 256,
                     "mechanism": 64}  # patching runs ~3 × layers × tokens copies of the text
# The reference model's parameters: a model with p parameters gets HOSTED_JOB_TOKENS × sqrt(this / p) tokens.
HOSTED_JOB_REFERENCE_PARAMETERS = 23_000_000
# A Heads corpus run: the tokens of all its texts together (the report's work grows with their sum).
HOSTED_CORPUS_TOKENS = 1_024
# Ground truth's scoreboard: examples scored in one request.
HOSTED_GROUNDTRUTH_EXAMPLES = 32
# Generation: new tokens one request may ask for.
HOSTED_GENERATE_NEW_TOKENS = 64
# Memory one long job may take on a hosted instance, estimated as JOB_MEMORY_COPIES[kind] copies of every layer's
# n×n float32 attention (heads · layers · n² · 4 bytes): the Heads report keeps per-text weights for its divergences
# and ablates every head; attribution batches occlusion rows and gradient activations of the same order.
HOSTED_JOB_MEMORY_BYTES = 1_024 * 2**20
JOB_MEMORY_COPIES = {"heads": 8, "attribution": 64, "lessons": 8, "compare": 4, "generate": 2, "groundtruth": 4,
                     "mechanism": 16}
# Large results cached in one server process (captures with their n×n weights, the charts drawn from them, bertviz's
# HTML), counted in bytes (views/byte_cache.py; issue 33, item 11): a handful of long texts' captures locally, three
# on a hosted instance, where several visitors share the memory — or hundreds of sentences'.
RESULT_CACHE_BYTES = 768 * 2**20
HOSTED_RESULT_CACHE_BYTES = 256 * 2**20
