"""The size bound on Gradio's folder of served files."""

import os
from pathlib import Path

import pytest

from arena_core.space.tempfiles import LOW_WATER, FolderBudget


def make(folder, name, size, mtime):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.utime(path, (mtime, mtime))
    return path


def test_oldest_files_go_first_down_to_the_low_water_mark(tmp_path):
    now = 10_000.0
    files = [make(tmp_path, f"h{k}/audio.wav", 100, now - 1000 + k) for k in range(10)]
    budget = FolderBudget(tmp_path, 500, clock=lambda: now)
    assert budget.sweep() == 600  # 1000 bytes down to 400 (LOW_WATER of 500)
    assert [p.exists() for p in files] == [False] * 6 + [True] * 4
    assert not (tmp_path / "h0").exists()  # emptied folders are removed
    assert sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file()) <= 500 * LOW_WATER


def test_nothing_is_deleted_within_budget(tmp_path):
    files = [make(tmp_path, f"f{k}", 100, 0.0) for k in range(5)]
    assert FolderBudget(tmp_path, 500, clock=lambda: 1e9).sweep() == 0
    assert all(p.exists() for p in files)


def test_files_a_browser_may_still_fetch_are_spared(tmp_path):
    now = 10_000.0
    old = make(tmp_path, "old", 300, now - 3600)
    fresh = [make(tmp_path, f"new{k}", 300, now - 5) for k in range(3)]
    FolderBudget(tmp_path, 500, min_age=60, clock=lambda: now).sweep()
    assert not old.exists() and all(p.exists() for p in fresh)


def test_the_budget_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="positive"):
        FolderBudget(tmp_path, 0)


def test_a_started_budget_sweeps_at_once_not_only_after_its_interval(tmp_path):
    """A process that lives less than the interval (a restart loop, a benchmark) still sweeps."""
    import time

    now = 10_000.0
    files = [make(tmp_path, f"h{k}/audio.wav", 100, now - 1000 + k) for k in range(10)]
    budget = FolderBudget(tmp_path, 500, clock=lambda: now)
    budget.start(every=3600)
    try:
        deadline = time.monotonic() + 60  # generous: a busy machine stalls threads
        while files[5].exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [p.exists() for p in files] == [False] * 6 + [True] * 4
    finally:
        budget.stop()


def test_a_looping_link_or_an_undeletable_file_does_not_stop_the_bound(tmp_path, monkeypatch):
    """stat() on a link to itself raised ELOOP out of every sweep, so nothing was ever deleted;
    one file that cannot be deleted must not keep the others either."""
    now = 10_000.0
    files = [make(tmp_path, f"h{k}/audio.wav", 100, now - 1000 + k) for k in range(10)]
    for link in (tmp_path / "loop", tmp_path / "h9" / "loop"):
        os.symlink(link.name, link)  # counted and deleted as links, never followed
        os.utime(link, (now - 2000, now - 2000), follow_symlinks=False)
    assert FolderBudget(tmp_path, 500, clock=lambda: now).sweep() > 0
    assert not (tmp_path / "loop").is_symlink() and [p.exists() for p in files[:6]] == [False] * 6
    refused, real_unlink = files[7], Path.unlink

    def unlink(path, missing_ok=False):
        if path == refused:
            raise PermissionError(13, "Permission denied", str(path))
        real_unlink(path, missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink)
    FolderBudget(tmp_path, 150, clock=lambda: now).sweep()
    assert refused.exists() and not files[8].exists()  # the next oldest went instead


def test_gradio_forgets_the_files_the_budget_deleted(tmp_path):
    """Gradio records every file it sent and forgets one only when its own clean-up deletes
    it: each image this bound deleted stayed recorded for good (two a battle of an image
    arena, and every Gradio clean-up looked each up on disk)."""
    now = 10_000.0
    files = [make(tmp_path, f"h{k}/image.png", 100, now - 1000 + k) for k in range(10)]
    sent = {str(p) for p in files} | {"/elsewhere/kept.png"}
    other = {str(files[-1])}
    budget = FolderBudget(tmp_path, 500, clock=lambda: now, records=lambda: [sent, other])
    budget.sweep()
    assert sent == {str(p) for p in files if p.exists()} | {"/elsewhere/kept.png"}
    assert len(sent) == 5 and other == {str(files[-1])}  # what is still served stays recorded
