"""Altair (Vega-Lite) charts and the offline bertviz views, over results the library has already computed.

One module per page (``inspect``, ``heads``, ``attribution``, ``groundtruth``, ``lessons``) plus ``base`` (the
shared palettes, slide mode, token labels and titles) and ``bertviz``. Nothing here computes an analysis or
imports Streamlit; chart modules import no torch (``bertviz`` aside, which hands bertviz its tensors).
"""
