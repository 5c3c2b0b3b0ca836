"""Train the induction language model (issue #8): a 2-layer Llama-style model (rotary positions) that reads
distinct words … A B … and then A again, and predicts B — the copy an induction head makes (Olsson et al. 2022),
so the causal token of every example (the earlier B) is known, and the Heads page can find the head that does it.

    python -m training.induction          # writes assets/models/induction
    python -m training.induction --smoke  # 5 steps into a temporary folder: the script runs end to end
"""

from __future__ import annotations

import sys

from inspector.analyses.tasks import TASKS
from training import common

RECIPE = common.Recipe(name="induction", task=TASKS["induction"], variant="honest",
                       label="Ground truth: induction language model (shipped)", module="training.induction",
                       steps=1500)

if __name__ == "__main__":
    sys.exit(common.main(RECIPE, __doc__))
