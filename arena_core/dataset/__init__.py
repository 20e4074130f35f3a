"""The public vote dataset: Hub sync, dataset card, compaction.

The local JSONL log is the write-ahead form; the Hub dataset repo, in Parquet,
is the durable and public one (see ``hub.HubSync``).
"""
