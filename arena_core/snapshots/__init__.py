"""Reproducible boards: which votes and which code computed a board, and daily snapshots.

:mod:`~arena_core.snapshots.version` names the code, :mod:`~arena_core.snapshots.revision`
the votes (a Hub commit of the vote dataset, or a local log's last vote and count) and the
settings; :mod:`~arena_core.snapshots.source` lets ``leaderboard --repo ID --revision SHA``
replay a revision; :mod:`~arena_core.snapshots.daily` writes one snapshot of every board a day.
"""
