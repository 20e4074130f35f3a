"""The vote record, the append-only log that writes it, and the readers that replay it."""

from arena_core.votes.clean import VoteTable
from arena_core.votes.log import VoteLog
from arena_core.votes.read import read_votes, vote_files
from arena_core.votes.schema import FIELDS, SCHEMA_VERSION, Vote, VoteError

__all__ = [
    "FIELDS",
    "SCHEMA_VERSION",
    "Vote",
    "VoteError",
    "VoteLog",
    "VoteTable",
    "read_votes",
    "vote_files",
]
