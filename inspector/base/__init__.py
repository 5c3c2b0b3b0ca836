"""The base layer: what every other layer may use — typed errors, the catalogue of sentences in both languages,
the one JSON conversion, the example texts, the limits and budgets, where the assets are. It imports nothing
above it (tests/test_layout.py holds the ranks)."""
