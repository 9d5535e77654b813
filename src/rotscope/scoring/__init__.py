"""Scoring replies: deterministic scorers registered by answer kind, and the optional judge."""

from rotscope.scoring import instruction as _instruction  # noqa: F401  (the ``instruction`` scorer)
from rotscope.scoring import reply as _reply  # noqa: F401  (the ``reply`` scorer)
from rotscope.scoring import sets as _sets  # noqa: F401  (registers the ``set`` scorer)
from rotscope.scoring.deterministic import SCORERS, Scorer, register_scorer, score, score_parts

__all__ = ["SCORERS", "Scorer", "register_scorer", "score", "score_parts"]
