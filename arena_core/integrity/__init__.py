"""Integrity of the ranking: who a voter is, how often they may vote, and whose votes to distrust.

* :mod:`~arena_core.integrity.identity`: the voter identity (signed-in user, else the
  address the trusted proxy saw), stored only as a salted hash;
* :mod:`~arena_core.integrity.limiter`: the sliding-window rate limit, restored from
  the log at start-up;
* :mod:`~arena_core.integrity.anomaly` and :mod:`~arena_core.integrity.detector`:
  Chatbot Arena's anomalous-voter test, over the whole log and vote by vote (its
  p-values in :mod:`~arena_core.integrity.pvalue`, its array work in
  :mod:`~arena_core.integrity.counting`).
"""

from arena_core.integrity.anomaly import (
    ANOMALOUS_FLAG,
    AnomalyParams,
    Detection,
    anomalous_votes,
    detect,
    detection_of,
)
from arena_core.integrity.detector import AnomalyDetector
from arena_core.integrity.identity import (
    IdentityError,
    IdentityRule,
    client_address,
    voter_hash,
    voter_identity,
)
from arena_core.integrity.limiter import RateLimiter

__all__ = [
    "ANOMALOUS_FLAG",
    "AnomalyDetector",
    "AnomalyParams",
    "Detection",
    "IdentityError",
    "IdentityRule",
    "RateLimiter",
    "anomalous_votes",
    "client_address",
    "detect",
    "detection_of",
    "voter_hash",
    "voter_identity",
]
