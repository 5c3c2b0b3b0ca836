"""How a prediction is made (issue 40): direct logit attribution and the logit lens (:mod:`.logits`), activation
patching (:mod:`.patching`) and score attribution (:mod:`.scores`) — exact linear decompositions of a decoder's
residual stream (:mod:`.residual`, with normalisations frozen at their measured scale, :mod:`.parts`), each with the
sum rule it satisfies carried in its result."""

from inspector.analyses.mechanism.logits import DirectLogitAttribution, LogitLens, direct_logit_attribution, token_id
from inspector.analyses.mechanism.parts import DECODER_NAMES
from inspector.analyses.mechanism.patching import (
    LengthMismatchError,
    PatchingResult,
    PatchingRun,
    activation_patching,
    patching_run,
)
from inspector.analyses.mechanism.scores import ScoreAttribution, score_attribution

__all__ = ["DECODER_NAMES", "DirectLogitAttribution", "LengthMismatchError", "LogitLens", "PatchingResult",
           "PatchingRun", "ScoreAttribution", "activation_patching", "direct_logit_attribution", "patching_run",
           "score_attribution", "token_id"]
