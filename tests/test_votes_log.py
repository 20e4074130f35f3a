"""The vote log writer: whole lines, every key, fsynced before returning, nothing on bad input."""

import json
import os
import stat
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from arena_core.votes import log as vote_log
from arena_core.votes.hold import shard_in_use
from arena_core.votes.log import VoteLog, VoteWriteError
from arena_core.votes.read import read_votes
from arena_core.votes.schema import FIELDS, VoteError, format_ts, parse_ts


def fixed_clock(*moments):
    it = iter(moments)
    return lambda: next(it)


def lines(store):
    return store.path.read_text(encoding="utf-8").splitlines()


def test_writes_every_contract_key_in_order(tmp_path):
    store = VoteLog(tmp_path)
    vote = store.append(arena="tts-en", model_a="a/1", model_b="b/2", vote="tie", prompt="Hé ✓")
    (line,) = lines(store)
    data = json.loads(line)
    assert list(data) == [f.name for f in FIELDS]
    assert data["prompt"] == "Hé ✓" and data["schema_version"] == 4
    assert data["model_a_version"] is None and data["model_b_version"] is None
    assert data["flags"] == [] and data["judge"] is None and data["voter_kind"] == "human"
    assert data["vote_id"] == vote.vote_id and data["ts"] == vote.ts
    assert store.path.name.startswith("votes-") and store.path.suffix == ".jsonl"


def test_each_process_log_gets_its_own_shard(tmp_path):
    assert VoteLog(tmp_path).path != VoteLog(tmp_path).path


def test_fsync_happens_before_append_returns(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(vote_log.os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    store = VoteLog(tmp_path)
    store.append(arena="x", model_a="a", model_b="b", vote="a")
    assert len(synced) >= 1  # the file (and, on creation, the folder)
    assert len(lines(store)) == 1


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"vote": "A"}, "vote must be one of"),
        ({"model_b": "a"}, "must differ"),
        ({"arena": ""}, "arena must be"),
        ({"voter_kind": "bot"}, "voter_kind"),
        ({"flags": [""]}, "flags"),
        ({"model_a_version": ""}, "model_a_version"),
        ({"model_b_version": 3}, "model_b_version"),
    ],
)
def test_bad_votes_write_nothing(tmp_path, fields, message):
    store = VoteLog(tmp_path)
    base = {"arena": "x", "model_a": "a", "model_b": "b", "vote": "a"}
    with pytest.raises(VoteError, match=message):
        store.append(**{**base, **fields})
    assert not store.path.exists() and store.written == 0


def test_assigned_fields_cannot_be_forced(tmp_path):
    with pytest.raises(TypeError, match="assigned by the log"):
        VoteLog(tmp_path).append(arena="x", model_a="a", model_b="b", vote="a", vote_id="mine")


def test_timestamps_strictly_increase_even_when_the_clock_does_not(tmp_path):
    t = datetime(2026, 11, 29, 17, 34, 36, 123456, tzinfo=UTC)
    store = VoteLog(tmp_path, clock=fixed_clock(t, t, t.replace(second=35)))
    stamps = [store.append(arena="x", model_a="a", model_b="b", vote="a").ts for _ in range(3)]
    assert stamps == [
        "2026-11-29T17:34:36.123Z",
        "2026-11-29T17:34:36.124Z",
        "2026-11-29T17:34:36.125Z",
    ]


def test_then_runs_under_the_lock_after_the_write(tmp_path):
    store = VoteLog(tmp_path)
    seen = []

    def held() -> bool:  # by someone: another thread cannot take it (RLock has no locked())
        free = []

        def probe():
            free.append(store.lock.acquire(blocking=False))
            if free[0]:
                store.lock.release()

        prober = threading.Thread(target=probe)
        prober.start()
        prober.join()
        return not free[0]

    def then(vote):
        seen.append((vote.vote_id, held(), len(lines(store))))
        return "applied"

    assert store.append(arena="x", model_a="a", model_b="b", vote="a", then=then) == "applied"
    assert seen[0][1:] == (True, 1) and not held()


def test_a_batch_names_its_votes_written_but_not_yet_applied(tmp_path):
    """Group commit: while ``then`` runs for one vote of a batch, ``unapplied`` holds exactly
    the batch's later votes, which are on disk already; a rebuild from the files there must
    leave them out (VoteReplay._rebuild). Outside a batch it is empty."""
    store = VoteLog(tmp_path)
    seen = []

    def then(vote):
        on_disk = {json.loads(line)["vote_id"] for line in lines(store)}
        seen.append((vote.vote_id, set(store.unapplied), on_disk))

    with store.lock:  # three appends queue up behind the held lock: one batch
        threads = []
        for k in range(3):
            queued = len(store._queue)
            threads.append(threading.Thread(target=store.append, kwargs=dict(
                arena="x", model_a=f"m{k}", model_b="z", vote="a", then=then)))  # fmt: skip
            threads[-1].start()
            while len(store._queue) == queued:
                time.sleep(0.0005)
    for t in threads:
        t.join()
    ids = [vote_id for vote_id, _, _ in seen]
    assert len(set(ids)) == 3 and all(len(disk) == 3 for _, _, disk in seen)  # one write
    assert [unapplied for _, unapplied, _ in seen] == [set(ids[1:]), set(ids[2:]), set()]
    assert store.unapplied == frozenset()
    assert read_votes(tmp_path).without(ids[1:]).column("vote_id").to_pylist() == ids[:1]


def test_concurrent_appends_never_interleave_or_lose_lines(tmp_path):
    store = VoteLog(tmp_path)

    def worker(k):
        for i in range(50):
            store.append(arena="x", model_a=f"m{k}", model_b="z", vote="b", prompt="p" * (i * 37))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    votes = read_votes(tmp_path)
    assert len(votes) == 400 and not votes.skipped
    assert all(json.loads(line) for line in lines(store))
    ts = votes.column("ts").to_pylist()
    assert len(set(ts)) == 400  # strictly increasing per shard


def test_written_votes_read_back_identically(tmp_path):
    store = VoteLog(tmp_path)
    written = [
        store.append(
            arena="x", model_a="a", model_b="b", vote=v, category="de", flags=["rate_limited"]
        )
        for v in ("a", "b", "tie", "both_bad")
    ]
    votes = read_votes(tmp_path)
    assert votes.table.to_pylist() == [w.to_dict() for w in written]


def test_timestamp_format_round_trips():
    moment = datetime(2026, 11, 29, 17, 34, 36, 123999, tzinfo=UTC)
    text = format_ts(moment)
    assert text == "2026-11-29T17:34:36.123Z"
    assert parse_ts(text) == int(moment.replace(microsecond=123000).timestamp() * 1_000_000)
    assert parse_ts("2026-11-29T17:34:36") is None


def test_a_failed_write_leaves_no_half_line_behind(tmp_path, monkeypatch):
    store = VoteLog(tmp_path)
    store.append(arena="x", model_a="a", model_b="b", vote="a")
    real_write = os.write

    def half_then_full_disk(fd, data):
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(vote_log.os, "write", half_then_full_disk)
    with pytest.raises(VoteWriteError) as err:
        store.append(arena="x", model_a="a", model_b="b", vote="b")
    assert err.value.rolled_back
    monkeypatch.setattr(vote_log.os, "write", real_write)
    store.append(arena="x", model_a="a", model_b="b", vote="tie")
    votes = read_votes(tmp_path)
    assert votes.column("vote").to_pylist() == ["a", "tie"] and not votes.skipped


def test_a_live_log_holds_its_shard(tmp_path):
    store = VoteLog(tmp_path)
    store.append(arena="x", model_a="a", model_b="b", vote="a")
    assert shard_in_use(store.path)
    store.close()
    assert not shard_in_use(store.path)


def test_timestamps_never_go_below_the_replayed_log(tmp_path):
    t = datetime(2026, 1, 1, tzinfo=UTC)
    store = VoteLog(tmp_path, clock=lambda: t)
    store.advance_to(parse_ts("2026-01-01T00:05:00.000Z"))  # the previous run's clock was ahead
    assert (
        store.append(arena="x", model_a="a", model_b="b", vote="a").ts == "2026-01-01T00:05:00.001Z"
    )


@pytest.mark.parametrize("future", ["9999-12-31T23:59:59.999Z", "3000-01-01T00:00:00.000Z",
                                    "2026-01-01T00:10:00.001Z"])  # fmt: skip
def test_a_row_from_the_future_never_moves_the_clock(tmp_path, future):
    # A forged row dated year 9999 made every later vote fail with OverflowError, and one
    # dated year 3000 stamped every new vote after it. Readers skip such rows; the log
    # also refuses to follow a floor past its clock's slack of ten minutes.
    t = datetime(2026, 1, 1, tzinfo=UTC)
    store = VoteLog(tmp_path, clock=lambda: t)
    store.advance_to(parse_ts(future))
    assert (
        store.append(arena="x", model_a="a", model_b="b", vote="a").ts == "2026-01-01T00:00:00.000Z"
    )


def test_each_vote_is_fsynced_in_its_shard_after_it_is_written(tmp_path, monkeypatch):
    # Removing the shard's own fsync was caught only by a service test that counted the
    # folder's fsync: here the file descriptor synced must be the shard's, after the write.
    events = []
    real_write, real_fsync = os.write, os.fsync

    def write(fd, data):
        events.append(("write", os.fstat(fd).st_ino))
        return real_write(fd, data)

    def fsync(fd):
        events.append(("fsync", os.fstat(fd).st_ino))
        return real_fsync(fd)

    monkeypatch.setattr(vote_log.os, "write", write)
    monkeypatch.setattr(vote_log.os, "fsync", fsync)
    store = VoteLog(tmp_path)
    for vote in ("a", "b"):
        events.clear()
        store.append(arena="x", model_a="a", model_b="b", vote=vote)
        shard = store.path.stat().st_ino
        last_write = max(k for k, e in enumerate(events) if e == ("write", shard))
        assert ("fsync", shard) in events[last_write + 1 :]


def _fail_on(name, errno, *, when=lambda args: True, times=1):
    """os.<name> that raises ``errno`` on the first ``times`` calls matching ``when``."""
    real, left = getattr(os, name), [times]

    def fake(*args, **kwargs):
        if left[0] and when(args):
            left[0] -= 1
            raise OSError(errno, os.strerror(errno))
        return real(*args, **kwargs)

    return fake


def _is_shard(args):
    return str(args[0]).endswith(".jsonl")


def _is_folder(args):
    return os.path.isdir(f"/proc/self/fd/{args[0]}")


FAULTS = {
    # A folder made read-only, or a full disk when the shard is created.
    "open-eacces": ("open", 13, _is_shard),
    "open-enospc": ("open", 28, _is_shard),
    "write-enospc": ("write", 28, lambda args: True),
    "fsync-eio": ("fsync", 5, lambda args: not _is_folder(args)),
    # The new shard's directory entry cannot be made durable.
    "folder-fsync-eio": ("fsync", 5, _is_folder),
}


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("existing", [False, True], ids=["new-shard", "existing-shard"])
def test_a_vote_that_cannot_be_made_durable_is_refused_and_leaves_nothing(tmp_path, monkeypatch,
                                                                          fault, existing):  # fmt: skip
    name, errno, when = FAULTS[fault]
    store = VoteLog(tmp_path)
    if existing:
        store.append(arena="x", model_a="a", model_b="b", vote="a")
    monkeypatch.setattr(vote_log.os, name, _fail_on(name, errno, when=when))
    if existing and fault == "folder-fsync-eio":  # an existing shard needs no folder fsync
        store.append(arena="x", model_a="a", model_b="b", vote="b")
    else:
        with pytest.raises(VoteWriteError) as err:
            store.append(arena="x", model_a="a", model_b="b", vote="b")
        assert err.value.rolled_back
    monkeypatch.undo()
    store.append(arena="x", model_a="a", model_b="b", vote="tie")
    votes = read_votes(tmp_path)
    expected = ["a", "b"] if existing and fault == "folder-fsync-eio" else ["a"] * existing
    assert votes.column("vote").to_pylist() == [*expected, "tie"] and not votes.skipped


def test_a_vote_whose_rollback_also_fails_is_not_called_rolled_back(tmp_path, monkeypatch):
    store = VoteLog(tmp_path)
    monkeypatch.setattr(vote_log.os, "fsync", _fail_on("fsync", 5, times=99))
    with pytest.raises(VoteWriteError) as err:
        store.append(arena="x", model_a="a", model_b="b", vote="b")
    assert not err.value.rolled_back  # the service then closes the battle: no second vote


def test_concurrent_votes_share_fsyncs_and_keep_their_order(tmp_path, monkeypatch):
    # Group commit: fifty voters at once must not wait for fifty fsyncs in turn. Every
    # caller still gets its own vote back, durable, and `then` runs in log order.
    syncs = []
    real_fsync = os.fsync

    def slow_fsync(fd):
        syncs.append(fd)
        threading.Event().wait(0.005)  # a disk's few milliseconds, so votes pile up
        return real_fsync(fd)

    monkeypatch.setattr(vote_log.os, "fsync", slow_fsync)
    store = VoteLog(tmp_path)
    applied, results = [], {}
    barrier = threading.Barrier(50)

    def voter(k):
        barrier.wait()
        results[k] = store.append(arena="x", model_a="a", model_b="b", vote="a", voter=f"v{k}",
                                  then=lambda v: applied.append(v.vote_id) or v)  # fmt: skip

    threads = [threading.Thread(target=voter, args=(k,)) for k in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    votes = read_votes(tmp_path)
    assert sorted(votes.column("voter").to_pylist()) == sorted(f"v{k}" for k in range(50))
    assert {r.voter for r in results.values()} == {f"v{k}" for k in range(50)}
    assert applied == votes.column("vote_id").to_pylist()  # applied in the log's order
    assert len(syncs) < 25  # batched (one per vote would be 50, plus the folder's)
    assert store.written == 50


def test_a_bad_record_in_a_batch_fails_only_its_caller(tmp_path):
    store = VoteLog(tmp_path)
    store._queue.append(vote_log._Request({"arena": "x", "model_a": "a", "model_b": "a",
                                           "vote": "a"}, None))  # fmt: skip
    good = store.append(arena="x", model_a="a", model_b="b", vote="b")
    assert good.vote == "b"
    assert read_votes(tmp_path).column("vote").to_pylist() == ["b"]

    with pytest.raises(VoteError, match="differ"):
        store.append(arena="x", model_a="a", model_b="a", vote="a")
    # A record that validates but cannot be encoded (a lone surrogate) fails only its caller
    # too: it once failed every vote of its batch, the others with a TypeError.
    bad = vote_log._Request([{"arena": "x", "model_a": "a", "model_b": "b", "vote": "a",
                              "prompt": "Hello \ud800"}], None)  # fmt: skip
    store._queue.append(bad)
    assert store.append(arena="x", model_a="a", model_b="b", vote="tie").vote == "tie"
    assert isinstance(bad.error, UnicodeEncodeError) and bad.done
    assert read_votes(tmp_path).column("vote").to_pylist() == ["b", "tie"]


def test_model_versions_are_written_when_the_backend_reports_them(tmp_path):
    store = VoteLog(tmp_path)
    store.append(arena="x", model_a="a", model_b="b", vote="a", model_a_version="piper 1.8.0",
                 model_b_version="espeak-ng 1.52")  # fmt: skip
    (line,) = lines(store)
    data = json.loads(line)
    assert (data["model_a_version"], data["model_b_version"]) == ("piper 1.8.0", "espeak-ng 1.52")
    votes = read_votes(tmp_path)
    assert votes.column("model_a_version").to_pylist() == ["piper 1.8.0"]


def test_a_shard_that_does_not_exist_is_not_in_use(tmp_path):
    assert not shard_in_use(tmp_path / "votes-gone.jsonl")


def test_a_failed_write_says_what_failed(tmp_path, monkeypatch):
    store = VoteLog(tmp_path)
    monkeypatch.setattr(vote_log.os, "fsync", _fail_on("fsync", 5, times=99))
    with pytest.raises(VoteWriteError, match=r"^could not write the vote: \[Errno 5\] "):
        store.append(arena="x", model_a="a", model_b="b", vote="b")


def test_a_floor_exactly_at_the_clocks_slack_is_followed(tmp_path):
    # Ten minutes ahead is within what readers accept: the next vote is stamped after it.
    t = datetime(2026, 1, 1, tzinfo=UTC)
    store = VoteLog(tmp_path, clock=lambda: t)
    store.advance_to(parse_ts("2026-01-01T00:10:00.000Z"))
    vote = store.append(arena="x", model_a="a", model_b="b", vote="a")
    assert vote.ts == "2026-01-01T00:10:00.001Z"


def test_a_failing_then_reaches_its_caller_and_the_vote_stays_saved(tmp_path):
    store = VoteLog(tmp_path)

    def apply(vote):
        raise RuntimeError("the board could not take it")

    with pytest.raises(RuntimeError, match="the board could not take it"):
        store.append(arena="x", model_a="a", model_b="b", vote="a", then=apply)
    assert read_votes(tmp_path).column("vote").to_pylist() == ["a"] and store.written == 1


def test_a_second_writer_on_a_held_shard_is_refused_and_writes_nothing(tmp_path):
    first = VoteLog(tmp_path, shard_name="votes-one.jsonl")
    first.append(arena="x", model_a="a", model_b="b", vote="a")
    second = VoteLog(tmp_path, shard_name="votes-one.jsonl")
    with pytest.raises(VoteWriteError) as err:
        second.append(arena="x", model_a="a", model_b="b", vote="b")
    assert err.value.rolled_back
    assert read_votes(tmp_path).column("vote").to_pylist() == ["a"]


def test_a_shard_that_cannot_be_opened_says_so(tmp_path, monkeypatch):
    store = VoteLog(tmp_path)
    monkeypatch.setattr(vote_log.os, "open", _fail_on("open", 13, when=_is_shard))
    with pytest.raises(VoteWriteError, match=r"^could not open the vote shard: \[Errno 13\] "):
        store.append(arena="x", model_a="a", model_b="b", vote="a")


def test_a_new_shard_is_readable_by_all_and_writable_by_its_owner(tmp_path):
    old = os.umask(0o022)
    try:
        store = VoteLog(tmp_path)
        store.append(arena="x", model_a="a", model_b="b", vote="a")
    finally:
        os.umask(old)
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o644


@pytest.mark.parametrize(("field", "value"), [("ts", "2026-01-01T00:00:00.000Z"),
                                               ("schema_version", 1), ("vote_id", "mine")])  # fmt: skip
def test_no_field_the_log_assigns_can_be_forced(tmp_path, field, value):
    with pytest.raises(TypeError, match=rf"^{field} is assigned by the log$"):
        VoteLog(tmp_path).append(arena="x", model_a="a", model_b="b", vote="a", **{field: value})
    assert not list(tmp_path.glob("*.jsonl"))


def test_flags_may_be_any_iterable_and_are_kept_as_given(tmp_path):
    vote = VoteLog(tmp_path).append(arena="x", model_a="a", model_b="b", vote="a",
                                    flags=(f for f in ["rate_limited"]))  # fmt: skip
    assert vote.flags == ("rate_limited",)
    assert read_votes(tmp_path).column("flags").to_pylist() == [["rate_limited"]]


def test_the_lock_given_is_the_one_writes_hold(tmp_path):
    lock = threading.RLock()
    assert VoteLog(tmp_path, lock=lock).lock is lock


def test_timestamps_are_cut_to_the_millisecond_not_rounded(tmp_path):
    t = datetime(2026, 11, 29, 17, 34, 36, 987654, tzinfo=UTC)
    vote = VoteLog(tmp_path, clock=lambda: t).append(arena="x", model_a="a", model_b="b", vote="a")
    assert vote.ts == "2026-11-29T17:34:36.987Z"


def test_a_fresh_log_has_nothing_unapplied(tmp_path):
    # A rebuild may run before the first vote of this process (at start-up): the votes
    # already in the files are all applied, so none may be left out.
    (tmp_path / "old.jsonl").write_bytes(
        VoteLog(tmp_path / "x").append(arena="x", model_a="a", model_b="b", vote="a").to_json_line()
    )
    store = VoteLog(tmp_path)
    assert store.unapplied == frozenset()
    assert len(read_votes(tmp_path / "old.jsonl").without(store.unapplied)) == 1


def test_a_half_line_that_could_not_be_cut_back_costs_no_later_vote(tmp_path, monkeypatch):
    """A write that fails half way (a full disk) and whose cut-back fails too (an I/O error)
    leaves half a line without its newline: the next acknowledged vote was glued onto it
    and unreadable in every replay. Now it starts on a line of its own."""
    import arena_core.votes.log as log_module

    log = VoteLog(tmp_path)
    first = log.append(arena="x", model_a="a", model_b="b", vote="a").vote_id
    real_write = os.write

    def half(fd, data):
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(28, "No space left on device")

    def broken_truncate(fd, size):
        raise OSError(5, "Input/output error")

    with monkeypatch.context() as patch:
        patch.setattr(log_module.os, "write", half)
        patch.setattr(log_module.os, "ftruncate", broken_truncate)
        with pytest.raises(VoteWriteError) as failed:
            log.append(arena="x", model_a="a", model_b="b", vote="b")
    assert failed.value.rolled_back is False
    later = [log.append(arena="x", model_a="a", model_b="b", vote=v).vote_id for v in ("tie", "a")]
    votes = read_votes([tmp_path])
    assert votes.column("vote_id").to_pylist() == [first, *later]
    assert dict(votes.skipped) == {"invalid_json": 1}  # the half line, skipped and counted


def test_votes_are_refused_while_the_clock_is_far_behind_the_last_one(tmp_path):
    """The log's clock never runs backwards: after the server's clock stepped back by an
    hour, every later vote was stamped an hour ahead, acknowledged, and skipped by every
    replay as future_ts until real time caught up (the live board said 8, the replay 2).
    Now such votes are refused, not acknowledged, until the clock is within the readers'
    allowance again."""
    start = datetime(2026, 12, 1, 12, tzinfo=UTC)
    now = [start + timedelta(hours=1)]  # ahead for one vote
    store = VoteLog(tmp_path, clock=lambda: now[0])
    acked = [store.append(arena="x", model_a="a", model_b="b", vote="a").vote_id]
    now[0] = start  # the clock is set right: an hour back
    with pytest.raises(VoteWriteError, match="clock went back 3600 s") as refused:
        store.append(arena="x", model_a="a", model_b="b", vote="b")
    assert refused.value.rolled_back and len(lines(store)) == 1  # nothing written
    now[0] = start + timedelta(minutes=51)  # within the readers' ten minutes again
    acked.append(store.append(arena="x", model_a="a", model_b="b", vote="tie").vote_id)
    reader_now = int(now[0].timestamp() * 1_000_000)
    assert read_votes([tmp_path], now_us=reader_now).column("vote_id").to_pylist() == acked


def test_a_vote_folder_made_again_is_durable_before_the_vote_is_acknowledged(tmp_path,
                                                                               monkeypatch):  # fmt: skip
    """The vote folder (here with its parent, a clean-up of the data folder) deleted under
    the live log is made again by the next vote: every folder made is in its parent only
    once that parent is synced, and the vote is acknowledged only then. Before, only the
    vote folder's parent was synced (the data folder's own entry never was), and when that
    sync failed the vote was refused but the next one, finding the folder, was acknowledged
    without it: a power cut could take the folder and the acknowledged votes with it."""
    import shutil

    store = VoteLog(tmp_path / "data" / "votes")
    store.append(arena="tts-en", model_a="a", model_b="b", vote="a")
    shutil.rmtree(tmp_path / "data")
    synced, failing = [], [tmp_path / "data"]

    def sync(folder):
        if Path(folder) in failing:
            failing.remove(Path(folder))
            raise OSError("an I/O error at fsync")
        synced.append(Path(folder))

    monkeypatch.setattr(vote_log, "sync_folder", sync)
    with pytest.raises(VoteWriteError) as refused:
        store.append(arena="tts-en", model_a="a", model_b="b", vote="b")
    assert refused.value.rolled_back and read_votes(store.folder).table.num_rows == 0
    store.append(arena="tts-en", model_a="a", model_b="b", vote="tie")
    assert {tmp_path, tmp_path / "data", store.folder} <= set(synced)
    store.close()
