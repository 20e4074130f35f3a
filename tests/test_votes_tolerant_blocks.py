"""Damaged JSONL read in blocks on a thread pool: bad lines at the blocks' edges, odd files.

Every case is compared with the line-by-line reference reader, as in test_votes_tolerant.
"""

import json
import subprocess
import sys
import threading
from collections import Counter

import numpy as np
import pytest
from test_votes_tolerant import ALL, ROOT, both, line

from arena_core.votes import prescan, tolerant
from arena_core.votes.lines import read_lines
from arena_core.votes.prescan import line_bounds, lines_apart
from arena_core.votes.tolerant import read_damaged

#: Good lines of one length, so that the blocks below hold whole numbers of lines.
GOOD = [line(k, model_a_duration_s=1.5) for k in range(120)]
WIDTH = len(GOOD[0]) + 1


def padded(raw: bytes) -> bytes:
    """``raw`` made as long as a good line: spaces before an object's last brace (still
    one object to Arrow), after anything else (which is set apart whatever follows it)."""
    room = WIDTH - 1 - len(raw)
    return raw[:-1] + b" " * room + b"}" if raw.endswith(b"}") else raw + b" " * room


#: Bad lines of each kind: set apart by the look at the bytes (cut short, a list, blank, a
#: byte that is not UTF-8, which Arrow would mostly let through), or refused by Arrow
#: naming the row (wrong types).
KINDS = {
    "cut short": padded(line(500)[:100]),
    "a list": padded(b"[" + line(501, model_a_duration_s=1) + b"]"),
    "blank": padded(b""),
    "wrong type": padded(line(502, vote=5, model_a_duration_s=1.5)),
    "wrong type in a field not asked for": padded(line(503, model_a_duration_s="x")),
    "bad byte": padded(line(504, model_a_duration_s=1).replace(b"Hello", b"H\xffello")),
}


def no_fallback(monkeypatch):
    monkeypatch.setattr(tolerant, "_read_in_pieces", lambda *a: pytest.fail("fell back"))


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("place", [0, 1, 3, 4])
def test_a_bad_line_at_any_place_of_a_task_and_of_an_arrow_block(monkeypatch, kind, place):
    # Tasks of 5 lines, Arrow blocks of 2 or so: a bad line every 5 lines, at the place
    # given, is first or last of its task, and in turn first or last of an Arrow block.
    assert len({len(g) for g in [*GOOD, *KINDS.values()]}) == 1
    lines = [KINDS[kind] if k % 5 == place else g for k, g in enumerate(GOOD)]
    no_fallback(monkeypatch)
    monkeypatch.setattr(tolerant, "TASK_BYTES", 5 * WIDTH - 1)
    monkeypatch.setattr(tolerant, "STREAM_BLOCK", 2 * WIDTH + 3)
    data = b"\n".join(lines) + b"\n"
    assert len(tolerant._task_bounds(data)) - 1 == len(lines) // 5
    new, ref = both(data)
    assert new == ref and sum(ref[1].values()) == (0 if kind == "blank" else 24)


@pytest.mark.parametrize("block", [WIDTH + 1, 1 << 16])
def test_bytes_that_are_not_utf8_are_still_caught_in_the_batch_if_not_before(monkeypatch, block):
    # The batch's own check stays behind the look at the bytes: blind it to UTF-8, and the
    # rows of the lines Arrow let through are still set apart, the others kept.
    monkeypatch.setattr(prescan, "never_utf8", lambda *a: np.zeros(0, dtype=np.int64))
    monkeypatch.setattr(tolerant, "STREAM_BLOCK", block)
    no_fallback(monkeypatch)
    bad = [KINDS["bad byte"], line(505, flags=["xQy"]).replace(b"Q", b"\xff"),
           line(506, voter="Q").replace(b"Q", b"\xe9")]  # fmt: skip
    lines = [*GOOD[:10], bad[0], *GOOD[10:20], bad[1], bad[2], *GOOD[20:30]]
    new, ref = both(b"\n".join(lines) + b"\n")
    assert new == ref and ref[1] == {"invalid_json": 3}


@pytest.mark.parametrize("task", [1, 3 * WIDTH, 1 << 20])
def test_a_file_of_bad_lines_only(monkeypatch, task):
    lines = [bad for name, bad in KINDS.items() if name != "blank"] * 10
    monkeypatch.setattr(tolerant, "TASK_BYTES", task)
    skipped = Counter()
    assert read_damaged(b"\n".join(lines) + b"\n", skipped, ALL).num_rows == 0
    assert skipped == {"invalid_json": 20, "not_an_object": 10, "wrong_type": 20}


@pytest.mark.parametrize("last_newline", [True, False])
@pytest.mark.parametrize("last", ["good", "cut short", "wrong type"])
def test_crlf_lines_a_byte_order_mark_and_no_final_newline(monkeypatch, last, last_newline):
    # A file written on Windows (every line ending "\r\n", which Arrow reads, none set
    # apart), starting with a byte-order mark, its last line good or not, with or
    # without a newline after it.
    lines = [b"\xef\xbb\xbf" + GOOD[0], *GOOD[1:40], b'{"vote": 5}', *GOOD[40:60]]
    lines.append(GOOD[60] if last == "good" else KINDS[last])
    data = b"\r\n".join(lines) + (b"\r\n" if last_newline else b"")
    no_fallback(monkeypatch)
    monkeypatch.setattr(tolerant, "TASK_BYTES", 10 * WIDTH)
    monkeypatch.setattr(tolerant, "STREAM_BLOCK", 3 * WIDTH)
    assert lines_apart(data, *line_bounds(data)).sum() == 1 + (last == "cut short")
    new, ref = both(data)
    assert new == ref and read_lines(data, Counter()).num_rows == 60 - (last != "good")


def test_the_blocks_are_read_on_a_thread_pool(monkeypatch):
    # One worker per core Arrow uses (two here, said so): every block read, each once.
    seen = []
    read_task = tolerant._read_task

    def spy(data, lo, hi, wanted):
        seen.append((lo, threading.current_thread().name))
        return read_task(data, lo, hi, wanted)

    monkeypatch.setattr(tolerant, "_read_task", spy)
    monkeypatch.setattr(tolerant.pa, "cpu_count", lambda: 2)
    monkeypatch.setattr(tolerant, "TASK_BYTES", 4 * WIDTH)
    data = b"\n".join([*GOOD[:50], KINDS["wrong type"], *GOOD[50:]]) + b"\n"
    skipped = Counter()
    table = read_damaged(data, skipped, ALL)
    assert sorted(lo for lo, _ in seen) == tolerant._task_bounds(data)[:-1]
    assert all(name.startswith("ThreadPoolExecutor") for _, name in seen)
    assert table.num_rows == len(GOOD) and skipped == {"wrong_type": 1}


HAZARDS = """
import json, sys
from collections import Counter
sys.path.insert(0, {root!r})
from arena_core.votes import prescan, tolerant
from arena_core.votes.lines import read_lines
from arena_core.votes.lines import read_lines
tolerant.TASK_BYTES, tolerant.STREAM_BLOCK = {task}, {block}
data = open({path!r}, "rb").read()
new, ref = Counter(), Counter()
rows = tolerant.read_damaged(data, new, ["vote_id"]).column("vote_id").to_pylist()
expected = read_lines(data, ref).column("vote_id").to_pylist()
print(json.dumps([rows == expected, new == ref, dict(new)]))
"""


@pytest.mark.parametrize(("task", "block"), [(1, 1 << 16), (300, 200), (1 << 20, 300)])
def test_null_and_byte_order_mark_lines_at_block_starts_never_crash(tmp_path, task, block):
    # pyarrow 26.0.1 dies (SIGSEGV) on a block starting "null,", and loses bytes of a
    # byte-order mark there: put such lines first in tasks and in Arrow's blocks. In a
    # child process, so that a regression fails this test instead of the test worker.
    hazards = [b"null,", b"nullx", b" null null", b"\tnull{}", b"null", b"\xbf", b"\xbf{}"]
    lines = []
    for k, hazard in enumerate(hazards * 3):
        lines += [hazard, GOOD[k], b'{"vote": 5}' if k % 2 else GOOD[k + 60]]
    path = tmp_path / "votes-x.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    code = HAZARDS.format(root=str(ROOT), task=task, block=block, path=str(path))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-500:]
    same_rows, same_skips, skipped = json.loads(done.stdout.splitlines()[-1])
    assert same_rows and same_skips and sum(skipped.values()) == 3 * len(hazards) + 10
