"""Corpus census (issue 16): the Heads page's per-head statistics over a whole dataset, batched, resumable, on
this machine or on a Ray cluster — with the same numbers either way.

:func:`~inspector.analyses.census.run.census` runs every text through the one attention function
(:func:`inspector.core.forward.forward`, statistics only: no ``weights_layers``), in **padded batches bucketed by
length** — texts tokenised in one tokenizer call per shard, sorted by token count and packed while ``batch size ×
longest text ≤ batch_tokens`` and the padding stays under :data:`CPU_MAX_PADDING` (on a GPU :data:`GPU_MAX_PADDING`)
of the real tokens — and records per text and per head (:data:`STATISTICS`): entropy in nats and normalised entropy
(Clark et al. 2019; means over the text's real queries), the first-token and the largest sink score (Xiao et al.
2023; Gu et al. 2024), the Heads page's token-category masses ([CLS]/BOS, [SEP]/EOS, punctuation, self, previous,
next — Clark et al. 2019), the mean attention distance, and the token count.

**How the per-key sums are taken without n × n per layer kept.** Entropy comes fused out of the attention
function; the category masses, sink scores and distances need the rows themselves. Asking the request for every
layer's weights would keep all L layers' ``(batch, heads, n, n)`` weights until the forward ends. Instead the
request keeps each layer's queries and keys (``keep=("query", "key")``, O(batch · heads · n · d) per layer, the
size of the hidden states the forward keeps anyway) and its log-sum-exp; after the forward the census
materialises **one layer at a time** with the same exact formula the attention function uses (P = exp(S − LSE),
:func:`kernels.reference.materialize_weights`, or the Triton materialise kernel on a GPU), reduces it at once to
``(batch, heads)`` numbers and drops it. Peak attention memory is one layer's ``batch · heads · n²``, bounded by
the token budget. The reduction sweeps the n × n weights twice: one matrix product (the real queries' indicator
row times P) gives what each key receives, from which the [CLS]/[SEP]/punctuation masses and the sink scores
follow on ``(batch, heads, n)``; self, previous and next are three diagonals (views); the distance-weighted row
sums are the second pass. Row sums (at most n terms) run in float32, everything after them in float64.
:func:`inspector.analyses.batching.batch_statistics` is that reduction; the Heads report
(:mod:`inspector.analyses.heads`) takes its statistics part through it too, from the weights its own forward keeps. The
forward stops once the last layer's attention is recorded (``stop_after``): the last layer's output projection and MLP
and the model's head compute nothing the census reads.

**Batching changes no number.** Batches are right-padded (positions 0…T−1 for every text, so absolute and rotary
positions are the single-text ones; under a causal mask a real query never sees a padded key), padded keys get
exactly zero weight, and every reduction runs over the text's own T real queries and keys only. Each text's
statistics equal those of a single-text run (:func:`inspector.analyses.heads.head_report`'s ``per_text``) within 1e-5;
tests/test_census.py checks it on BERT, GPT-2 and Llama-style models with ragged lengths.

**Output folder** (:func:`read_census` reads it back): ``shards/part-NNNNN.parquet`` — one row per text (``index``
in the input, ``text``, ``tokens``, and one fixed-size list column of layers × heads float32 per statistic,
layer-major; the shape is in the manifest), ``manifest.json`` (model, code version, statistics, input fingerprint,
engine, times), ``errors.jsonl`` (rows that could not be measured, with the reason) and ``summary.json`` (per head
and statistic: the mean over texts with a 95 % Student-t interval, the health flags of
:func:`inspector.analyses.metrics.health_flags`, and the report lines when the command line writes it). Shard k
holds input rows [k·S, (k+1)·S); a shard is written to a temporary name and renamed, so it is either complete or
absent. Re-running into the same folder **resumes**: finished shards are kept and never written twice; a different
model or input is refused, naming the difference.

**Exemplars** (``--exemplars K``, issue 41; :mod:`~inspector.analyses.census.exemplars` gives the exact rules):
per head and statistic (lowest row entropy, sink mass, previous-token weight, induction-like mass, mean attention
distance), the top K query rows over the corpus and one sampled text per decile, with each row's heaviest keys.
The per-row values come out of the same one-layer-at-a-time materialisation (``batch_statistics``'s row sink).
Each shard row then also holds the text's token strings and its best row per statistic and head, and
``shards/exemplars-NNNNN.parquet`` (written before the shard) its shard's top K; at the end ``exemplars.parquet``
and ``exemplar_texts.parquet`` are rebuilt from the shards (after summary.json), so both engines and a resumed run
give the same files. K is part of what a resumed folder must match.

**Engines**: ``local`` runs in this process; ``ray`` runs the same measuring function in Ray Data actors
(``map_batches`` with a stateful class that loads the model once per actor, one whole shard a call; ``concurrency``
= actors, ``num_gpus`` per actor) and the driver writes the same shards. Both cut a shard into the same batches and
measure with numbers no thread count changes (:mod:`~inspector.analyses.census.threads`), so on one machine they
write the same bytes. Ray is imported only there.

**Modules** (import each name from its module; this package face holds none):

- :mod:`~inspector.analyses.census.input` — the rows of the input files (:func:`read_input`, :class:`InputRow`).
- :mod:`~inspector.analyses.census.measure` — the statistics pass (:func:`measure_rows` → :class:`TextCensus`,
  :class:`RowError`); writes nothing.
- :mod:`~inspector.analyses.census.store` — the folder: manifest descriptions, lock, atomic writes, resuming checks,
  the shards written and read back (:class:`CensusFolderError`).
- :mod:`~inspector.analyses.census.summary` — :class:`CensusSummary`: means, intervals, flags; :func:`finish` writes
  summary.json, :func:`read_census` reads a folder back.
- :mod:`~inspector.analyses.census.run` — :func:`census`: plan, lock, engine, shards, summary.
- :mod:`~inspector.analyses.census.ray_engine` — the same measuring on Ray Data actors.
- :mod:`~inspector.analyses.census.threads` — MKL's strict mode, or one torch thread, while a census measures.
- :mod:`~inspector.analyses.census.roles` — head roles by probe kept beside a census (``roles.json``).
- :mod:`~inspector.analyses.census.exemplars` — which rows are a head's exemplars (:class:`RowCandidates`, top K,
  deciles); writes nothing.
- :mod:`~inspector.analyses.census.row_keys` — the row sink's steps on int64 keys (a cell's top rows, the chosen
  rows' heaviest keys), in torch and, on the CPU, NumPy.
- :mod:`~inspector.analyses.census.seeded_draws` — the deciles' seeded draws for every head at once, the numbers
  NumPy's ``default_rng`` gives.
- :mod:`~inspector.analyses.census.exemplar_files` — their Parquet files, and :func:`read_exemplars` reading them
  back checked.

The report's sentences are not here: :mod:`inspector.charts.sentences.census` builds them from a summary.
"""
