"""The analyses: pure computations over captures and models — metrics, redundancy, batched statistics, head
reports, the census, attribution, lessons, tasks, ground truth, comparisons. They never render (no Altair, no
vl-convert) and import only ``core`` and ``base``."""
