"""Progress of long jobs in a notebook (issue 42), through the one progress contract (:mod:`inspector.base.progress`).

Every long job (the Heads report, the census, generation, the attribution report, …) takes ``progress(done, total,
note)``. :func:`progress_bar` returns one for wherever the code runs: in a Jupyter kernel, tqdm's notebook bar (an
ipywidgets progress bar with the job's note beside it); anywhere else, :func:`inspector.base.progress.print_progress`'s
plain line on stderr, as the command line shows it. ::

    report = head_report(model, texts, progress=inspector.progress_bar("Heads"))
"""

from __future__ import annotations

import sys

from inspector.base.progress import Progress, print_progress


def in_notebook() -> bool:
    """Whether this code runs in a Jupyter kernel (whose frontend draws widgets), not a terminal IPython."""
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def progress_bar(label: str = "") -> Progress:
    """A :data:`~inspector.base.progress.Progress` for one job: a notebook bar labelled ``label`` in Jupyter
    (tqdm.notebook; its total set from the job's first call, closed when done == total), else a plain line."""
    if not in_notebook():
        return print_progress
    try:
        import ipywidgets  # noqa: F401 — tqdm.notebook draws with it; without it the plain line is the honest bar
        from tqdm.notebook import tqdm
    except ImportError:
        return print_progress
    bars: list = []

    def update(done: int, total: int, note: str) -> None:
        if not bars:
            bars.append(tqdm(total=total, desc=label or None, leave=True))
        bar = bars[0]
        bar.total = total
        bar.n = done
        bar.set_postfix_str(note, refresh=False)
        bar.refresh()
        if done >= total:
            bar.close()

    return update
