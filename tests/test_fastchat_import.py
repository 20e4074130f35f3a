"""FastChat clean_battle exports: the two real MTEB Arena logs in tests/data."""

import csv
import hashlib
import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from arena_core.leaderboard import BoardParams, board_from_votes, select_votes
from arena_core.votes import reasons
from arena_core.votes.fastchat import to_battles
from arena_core.votes.read import read_votes
from arena_core.votes.schema import TS_MAX_US, VOTES

DATA = Path(__file__).resolve().parent / "data"

# Battle and outcome counts as documented in tests/data/README.md. The
# clustering log holds one battle of a model against itself (a tie of
# multilingual-e5-large-instruct), which no rating can use: it is skipped and
# counted, so 123 of its 124 battles are read.
EXPORTS = {
    "fastchat_clean_battle_sts.json": (137, {"a": 43, "b": 41, "tie": 46, "both_bad": 7}, {}),
    "fastchat_clean_battle_clustering.json": (
        124,
        {"a": 41, "b": 39, "tie": 37, "both_bad": 7},
        {reasons.SAME_MODEL: 1},
    ),
}


@pytest.mark.parametrize(("name", "expected"), EXPORTS.items())
def test_real_exports_import_with_the_right_counts(name, expected):
    battles, outcomes, skipped = expected
    votes = read_votes(DATA / name)
    assert len(votes) + sum(votes.skipped.values()) == battles
    assert votes.skipped == skipped
    counted = Counter(votes.column("vote").to_pylist())
    if skipped:
        counted["tie"] += 1  # the self-battle was a tie
    assert counted == outcomes
    assert set(votes.column("arena").to_pylist()) == {"fastchat"}
    first = min(json.loads((DATA / name).read_text()), key=lambda b: b["tstamp"])
    assert votes.column("model_a")[0].as_py() == first["model_a"]


def test_importing_the_same_export_twice_deduplicates():
    path = DATA / "fastchat_clean_battle_sts.json"
    votes = read_votes([path, path])
    assert len(votes) == 137
    assert votes.skipped == {reasons.DUPLICATE: 137}


def test_non_anonymous_battles_are_skipped_unless_asked(tmp_path):
    battles = json.loads((DATA / "fastchat_clean_battle_sts.json").read_text())
    for b in battles[:10]:
        b["anony"] = False
    battles.append(
        {"model_a": "x", "model_b": "y", "winner": "model_c", "tstamp": 1.0, "anony": True}
    )
    battles.append({"model_a": 3, "model_b": "y", "winner": "tie", "tstamp": 1.0, "anony": True})
    path = tmp_path / "export.json"
    path.write_text(json.dumps(battles))
    votes = read_votes(path)
    assert len(votes) == 127
    assert votes.skipped == {reasons.NOT_ANONY: 10, reasons.BAD_VOTE: 1, reasons.WRONG_TYPE: 1}
    assert len(read_votes(path, fastchat_all=True)) == 137


def test_sts_board_matches_the_published_leaderboard_order():
    """The MTEB Arena published this board from the same log with FastChat's scripts.

    FastChat's ``compute_elo_mle_with_tie`` fits scikit-learn's default
    LogisticRegression, which adds an L2 penalty (C=1): on 137 battles that
    pulls extreme ratings a few points towards 1000, so our unpenalised MLE
    (prior_weight 0) agrees in order and to within ~10 points, not exactly.
    """
    with (DATA / "fastchat_sts_leaderboard.csv").open() as f:
        published = {
            row["key"]: float(row["Arena Elo rating (anony)"]) for row in csv.DictReader(f)
        }
    votes = read_votes(DATA / "fastchat_clean_battle_sts.json")
    board = board_from_votes(
        votes, "fastchat", params=BoardParams(prior_weight=0, bootstrap_rounds=0)
    )
    ours = {r.model_id: r.rating for r in board.rows}
    assert set(ours) == set(published)
    names = sorted(published)
    rho = spearmanr([ours[n] for n in names], [published[n] for n in names]).statistic
    assert rho == pytest.approx(1.0)
    gaps = np.array([ours[n] - published[n] for n in names])
    assert np.abs(gaps).max() < 10
    # The penalty shrinks: our spread is wider than the published one.
    assert np.std([ours[n] for n in names]) > np.std([published[n] for n in names])


def test_a_real_export_imports_as_fastchat_reads_it():
    """A FastChat export carries no field of ours: every battle is a human's counted vote,
    its voter the hash of FastChat's ``judge``, its time ``tstamp`` to the microsecond."""
    battles = json.loads((DATA / "fastchat_clean_battle_sts.json").read_text())
    votes = read_votes(DATA / "fastchat_clean_battle_sts.json")
    assert set(votes.column("voter_kind").to_pylist()) == {"human"}
    assert set(votes.column("judge").to_pylist()) == {None}
    assert all(f == [] for f in votes.column("flags").to_pylist())
    first = min(battles, key=lambda b: b["tstamp"])
    moment = datetime.fromtimestamp(first["tstamp"], UTC)
    assert votes.column("ts")[0].as_py() == moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    user = "fastchat:" + hashlib.sha256(first["judge"].encode()).hexdigest()[:16]
    assert votes.column("voter")[0].as_py() == user


def test_a_fastchat_battle_without_a_vote_id_ignores_keys_named_like_ours(tmp_path):
    battle = {"model_a": "x", "model_b": "y", "winner": "model_a", "tstamp": 1.7e9,
              "anony": True, "judge": "u", "prompt": {"turns": 2}, "flags": "odd",
              "voter_kind": "judge"}  # fmt: skip
    path = tmp_path / "export.json"
    path.write_text(json.dumps([battle]))
    votes = read_votes(path)
    assert len(votes) == 1 and not votes.skipped
    assert votes.column("voter_kind")[0].as_py() == "human"
    assert votes.column("prompt")[0].as_py() is None


def test_a_tstamp_before_year_1000_imports_with_a_four_digit_year(tmp_path):
    tstamp = (datetime(999, 6, 1, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds()
    path = tmp_path / "export.json"
    path.write_text(json.dumps([{"model_a": "x", "model_b": "y", "winner": "tie",
                                 "tstamp": tstamp, "anony": True}]))  # fmt: skip
    votes = read_votes(path)
    assert votes.column("ts").to_pylist() == ["0999-06-01T00:00:00.000000Z"]


def _row(k, ts, **over):
    row = {"schema_version": 4, "vote_id": f"00000000-0000-4000-8000-{k:012d}", "ts": ts,
           "arena": "ar", "model_a": "m1", "model_b": "m2", "vote": "a", "voter": f"v{k}",
           "voter_kind": "human", "judge": None, "flags": []}  # fmt: skip
    return row | over


def _round_trip(tmp_path, rows, *, include_flagged=True):
    """The votes of ``rows`` and those of their export read back, both read with a clock
    at the end of year 9999 (so no valid year is in the future)."""
    source = tmp_path / "votes.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    original = read_votes(source, now_us=TS_MAX_US)
    out = tmp_path / "battles.json"
    out.write_text(json.dumps(to_battles(original, include_flagged=include_flagged)))
    return original, read_votes(out, now_us=TS_MAX_US)


def test_a_judges_verdict_comes_back_a_judges_verdict(tmp_path):
    rows = [_row(1, "2026-01-01T00:00:01Z"),
            _row(2, "2026-01-01T00:00:02Z", voter_kind="judge", judge="jdg", voter="judge:jdg")]  # fmt: skip
    original, again = _round_trip(tmp_path, rows)
    for column in ("voter_kind", "judge", "voter"):
        assert again.column(column).to_pylist() == original.column(column).to_pylist(), column
    assert again.column("voter_kind").to_pylist() == ["human", "judge"]
    human = BoardParams(bootstrap_rounds=0)
    assert board_from_votes(again, "ar", params=human).votes_used == 1


def test_a_flagged_vote_comes_back_flagged(tmp_path):
    rows = [
        _row(1, "2026-01-01T00:00:01Z"),
        _row(2, "2026-01-01T00:00:02Z", flags=["rate_limited"], vote="b"),
    ]
    _, again = _round_trip(tmp_path, rows)
    assert again.column("flags").to_pylist() == [[], ["rate_limited"]]
    board = board_from_votes(again, "ar", params=BoardParams(bootstrap_rounds=0))
    assert board.votes_used == 1 and board.skipped == {reasons.FLAGGED: 1}


@pytest.mark.parametrize("ts", ["0999-06-01T00:00:00.000000Z", "1500-06-01T00:00:00.000001Z",
                                "9000-12-31T23:59:59.999999Z", "0001-01-01T00:00:00.000001Z"])  # fmt: skip
def test_a_timestamp_comes_back_to_the_microsecond(tmp_path, ts):
    original, again = _round_trip(tmp_path, [_row(1, ts)])
    assert not again.skipped
    assert again.column("ts").to_pylist() == [ts]
    assert again.ts_us.tolist() == original.ts_us.tolist()


def test_a_mistyped_field_of_ours_skips_its_battle_alone(tmp_path):
    good = to_battles(read_votes(_write(tmp_path, [_row(1, "2026-01-01T00:00:01Z")])))[0]
    path = tmp_path / "export.json"
    path.write_text(json.dumps([good, good | {"vote_id": "x", "flags": "rate_limited"}]))
    votes = read_votes(path)
    assert len(votes) == 1 and votes.skipped == Counter({reasons.WRONG_TYPE: 1})


def _write(tmp_path, rows):
    path = tmp_path / "votes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


_MOMENTS = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59,
                                                                        999999))  # fmt: skip
_VOTE = st.fixed_dictionaries({
    "pair": st.sampled_from([("m1", "m2"), ("m2", "m1"), ("m1", "m3"), ("m3", "m2")]),
    "vote": st.sampled_from(VOTES),
    "kind": st.sampled_from(["human", "judge", None]),
    "who": st.integers(0, 3),
    "flags": st.sampled_from([[], ["rate_limited"], ["rate_limited", "other"]]),
    "category": st.sampled_from([None, "en", "de"]),
    "moment": st.integers(0, 5),
})  # fmt: skip


@settings(max_examples=60)
@given(st.lists(_MOMENTS, min_size=6, max_size=6), st.lists(_VOTE, min_size=1, max_size=25))
def test_any_valid_votes_exported_and_imported_give_the_same_votes_and_boards(tmp_path_factory,
                                                                              moments, draws):  # fmt: skip
    """Human and judge votes, flagged or not, at any valid microsecond of years 1 to 9999
    (several at one instant, ordered by vote_id), with every outcome: the export read
    back is the same table and gives the same board and selection for every voter kind,
    judge and flag setting."""
    rows = []
    for k, d in enumerate(draws):
        judge = d["kind"] == "judge"
        ts = moments[d["moment"]].isoformat(timespec="microseconds") + "Z"
        rows.append(_row(k, ts, model_a=d["pair"][0], model_b=d["pair"][1], vote=d["vote"],
                         voter_kind=d["kind"], judge=f"j{d['who'] % 2}" if judge else None,
                         voter=f"judge:j{d['who'] % 2}" if judge else [None, "h1", "h2", "h3"][d["who"]],
                         flags=d["flags"], category=d["category"]))  # fmt: skip
    original, again = _round_trip(tmp_path_factory.mktemp("rt"), rows)
    assert again.table.to_pylist() == original.table.to_pylist()
    assert again.ts_us.tolist() == original.ts_us.tolist()
    assert again.skipped == original.skipped
    boards = [BoardParams(bootstrap_rounds=0), BoardParams(bootstrap_rounds=0, include_flagged=True),
              BoardParams(bootstrap_rounds=0, voter_kind="judge"),
              BoardParams(bootstrap_rounds=0, voter_kind="judge", judge="j1")]  # fmt: skip
    for params in boards:
        for category in (None, "en"):
            assert board_from_votes(again, "ar", category=category, params=params) == \
                board_from_votes(original, "ar", category=category, params=params)  # fmt: skip
            before = select_votes(original, "ar", category=category, params=params)
            after = select_votes(again, "ar", category=category, params=params)
            for name in ("a", "b", "outcome", "ts_us"):
                assert np.array_equal(getattr(after, name), getattr(before, name)), name
            assert after.entrants == before.entrants and after.skipped == before.skipped


def _encodable(value) -> bool:
    try:
        str(value).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def test_a_lone_surrogate_skips_its_battle_alone(tmp_path):
    """A lone surrogate escape (valid JSON, no UTF-8) in a field a vote is read from skips
    that battle as ``invalid_json``, as in a JSONL line; the real export's 137 battles
    stay. One in a key nobody reads changes nothing."""
    real = json.loads((DATA / "fastchat_clean_battle_sts.json").read_text())
    ours = to_battles(read_votes(_write(tmp_path, [_row(1, "2026-01-01T00:00:01Z")])))[0]
    bad = [real[0] | {key: "x\ud800"} for key in ("model_a", "judge", "language", "question_id")]
    bad += [ours | {"judge_model": "\udfff"}, ours | {"vote_id": "\ud800-1"}]
    unread = real[1] | {"conversation_a": "\ud800", "\udc80": 1}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(real + bad + [unread]))
    votes = read_votes(path)
    assert votes.skipped == {reasons.INVALID_JSON: 6}
    # The real battles keep their votes (and ids); the one with an unread key is one more.
    alone = read_votes(DATA / "fastchat_clean_battle_sts.json").column("vote_id").to_pylist()
    assert len(votes) == 138 and set(alone) < set(votes.column("vote_id").to_pylist())


_TEXT = st.text(st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr)), max_size=3)


@settings(max_examples=150)
@given(st.lists(st.fixed_dictionaries({
    "model_a": st.one_of(_TEXT, st.sampled_from(["m1", "m2"])),
    "model_b": st.one_of(_TEXT, st.sampled_from(["m1", "m2"])),
    "winner": st.one_of(st.sampled_from(["model_a", "model_b", "tie", "tie (bothbad)"]), _TEXT),
    "tstamp": st.floats(1.6e9, 1.7e9),
    "anony": st.just(True),
    "judge": _TEXT,
    "language": st.one_of(st.none(), _TEXT),
    "question_id": st.one_of(st.integers(0, 3), _TEXT),
    "conversation_a": _TEXT,  # read by no one
}), max_size=12))  # fmt: skip
def test_battles_with_text_no_utf8_writer_holds_leave_the_others_as_they_were(tmp_path_factory,
                                                                            battles):  # fmt: skip
    """Any text in a battle's fields: the export never fails whole; the battles whose read
    fields cannot be written as UTF-8 are each skipped as ``invalid_json``, and the others
    give exactly the votes (and skips) of an export without them."""
    folder = tmp_path_factory.mktemp("fc")
    # As the export holds them: a high then a low surrogate escape read back is one character.
    battles = json.loads(json.dumps(battles))
    read = ("model_a", "model_b", "winner", "judge", "language", "question_id")
    good = [b for b in battles if all(_encodable(b[k]) for k in read if b[k] is not None)]
    (folder / "all.json").write_text(json.dumps(battles))
    (folder / "good.json").write_text(json.dumps(good))
    everything, expected = read_votes(folder / "all.json"), read_votes(folder / "good.json")
    assert reasons.UNREADABLE not in everything.skipped
    bad = len(battles) - len(good)
    assert everything.skipped == expected.skipped + Counter({reasons.INVALID_JSON: bad})
    assert everything.table.to_pylist() == expected.table.to_pylist()
