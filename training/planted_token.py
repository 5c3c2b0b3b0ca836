"""Train the planted-token classifier (issue #8): a 2-layer BERT whose label is the sentiment of the one
sentiment word planted among neutral words — so the causal token of every example is known.

    python -m training.planted_token            # writes assets/models/planted-token
    python -m training.planted_token --smoke    # 5 steps into a temporary folder: the script runs end to end
"""

from __future__ import annotations

import sys

from inspector.analyses.tasks import TASKS
from training import common

RECIPE = common.Recipe(name="planted-token", task=TASKS["planted-token"], variant="honest",
                       label="Ground truth: planted-token classifier (shipped)", module="training.planted_token",
                       steps=800)

if __name__ == "__main__":
    sys.exit(common.main(RECIPE, __doc__))
