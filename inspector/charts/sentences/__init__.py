"""The sentences the pages and the command line show about a result, in the reader's language (issue 39).

The analyses return numbers; the words built from those numbers live here, one module per analysis, each sentence
through the catalogue (:func:`inspector.base.i18n.t`, English and 简体中文 side by side). Pages and CLI commands call
these builders on the result the analysis returned. Nothing here computes an analysis or draws a chart.
"""
