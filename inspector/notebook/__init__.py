"""Attention Inspector in a notebook (issue 42): results draw themselves, any page's chart on request, bertviz's views
offline, links to and from the app, and progress bars.

- Every result (``Capture``, ``Generation``, ``HeadReport``, ``RolesResult``, ``AttributionReport``, ``Lessons``,
  ``DecoderLessons``, ``CensusSummary``, ``Scoreboard``, ``Comparison``) shows a summary and its main chart when it
  is a cell's value — :mod:`inspector.base.display` (the protocol) and :mod:`inspector.notebook.displays` (the
  renderers).
- :func:`show` returns the Altair chart of a view (``show(capture, "heatmap", layer=2, head=5)``) to compose;
  :func:`set_language` writes charts and summaries in 简体中文 (``"zh"``).
- :func:`head_view` / :func:`model_view`: bertviz offline; :func:`link` / :func:`capture_from_link`: to the app and
  back; :func:`progress_bar`: a notebook bar for any long job.

``import inspector`` is enough: the package face exposes these names and draws results through them.
"""

from inspector.notebook import displays, mechanism  # noqa: F401 — renderers for results and for show()'s charts
from inspector.notebook.bridge import BertvizView, capture_from_link, head_view, link, model_view
from inspector.notebook.progress import in_notebook, progress_bar
from inspector.notebook.views import VIEWS, language, register_views, set_language, show

__all__ = ["VIEWS", "BertvizView", "capture_from_link", "head_view", "in_notebook", "language", "link", "model_view",
           "progress_bar", "register_views", "set_language", "show"]
