"""The Hub stand-in itself: a commit lands whole for its readers, as on the Hub.

The real Hub cannot be reached from the test machine; the Hub tests read the stand-in's
store while the app's uploader commits to it from another thread. A store whose commit
wrote its files in place let a reader see a new file before its bytes (CI of session 35
failed on "Parquet file size is 0 bytes" in test_hub_outage).
"""

import io
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
from hubfake import REPO, LocalHubApi, raw_vote_ids, row
from huggingface_hub import CommitOperationAdd


def parquet_bytes(rows: int) -> bytes:
    """A Parquet file of ``rows`` votes with incompressible ids, a few MB to write."""
    ids = [f"00000000-0000-4000-8000-{k:012d}" for k in range(rows)]
    table = pa.table({"vote_id": ids, "pad": [str(hash((k, 7))) * 4 for k in range(rows)]})
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="none")
    return sink.getvalue()


def test_a_reader_never_sees_a_commit_half_written(tmp_path):
    store = LocalHubApi(tmp_path / "hub")
    store.create_repo(REPO, repo_type="dataset")
    data, done, seen = parquet_bytes(50_000), threading.Event(), []

    def commit():
        try:
            for k in range(24):
                add = CommitOperationAdd(path_in_repo=f"data/votes-{k % 3}.parquet",
                                         path_or_fileobj=data)  # fmt: skip
                store.create_commit(REPO, [add], commit_message=f"push {k}", repo_type="dataset")
        finally:
            done.set()

    writer = threading.Thread(target=commit)
    writer.start()
    while not done.is_set():
        seen.append(sum(raw_vote_ids(store).values()))  # raises on a half-written file
        time.sleep(0.002)  # the lock is not fair: a reader in a tight loop starved the commits
    writer.join()
    assert set(seen) <= {0, 50_000, 100_000, 150_000}
    assert sum(raw_vote_ids(store).values()) == 150_000
    assert row(0)["vote_id"] in raw_vote_ids(store)
