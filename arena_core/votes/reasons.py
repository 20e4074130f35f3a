"""Why a vote row was skipped: the keys of every ``skipped`` count we report."""

TRUNCATED = "truncated_line"  #: last line of a file cut short (a crash mid-write)
INVALID_JSON = "invalid_json"  #: not parseable JSON (or a key given twice)
NOT_OBJECT = "not_an_object"  #: JSON, but not an object
WRONG_TYPE = "wrong_type"  #: a known field with a value of the wrong type
MISSING = "missing_field"  #: a required field absent, null or empty
VERSION = "unsupported_schema_version"  #: written by a schema this reader does not know
BAD_TS = "bad_ts"  #: timestamp not ISO-8601 with a zone
FUTURE_TS = "future_ts"  #: timestamp later than the reader's clock allows (a forged or broken row)
BAD_VOTE = "bad_vote"  #: vote not one of a, b, tie, both_bad
BAD_VOTER_KIND = "bad_voter_kind"  #: voter_kind not human or judge
SAME_MODEL = "same_model"  #: model_a equals model_b
DUPLICATE = "duplicate_vote_id"  #: a vote_id seen before (the first is kept)
UNREADABLE = "unreadable_file"  #: a whole file could not be read (counted once per file)
NOT_ANONY = "not_anony"  #: FastChat battle where the voter saw the model names
FLAGGED = "flagged"  #: kept in the log but left out of ratings (e.g. rate limited)
UNKNOWN_MODEL = "unknown_model"  #: a model not in the registry's arena
ANOMALOUS_VOTER = "anomalous_voter"  #: a vote of a voter the anomalous-voter test flagged
