"""The clip store and its route (arena_core/space/clips.py): bounded memory, byte ranges as
players ask for them, and nothing in a response that tells one model's clip from another's."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.testclient import TestClient

from arena_core.space.clips import API_PREFIX, ClipStore, byte_range


def served(store: ClipStore) -> TestClient:
    return TestClient(Starlette(routes=[store.route()]))


def url(store: ClipStore, path: str) -> str:
    # The URL Gradio gives a file path: /gradio_api/file=<path>, percent-encoded but for "/".
    from gradio_client.utils import encode_file_path

    return f"{API_PREFIX}/file={encode_file_path(path)}"


def test_a_clip_is_served_whole_under_the_url_gradio_gives_its_path(tmp_path):
    store = ClipStore(tmp_path / "a folder with spaces", 2**20)
    path = store.put(b"RIFF" + bytes(range(200)))
    assert not (tmp_path / "a folder with spaces").exists()  # nothing written
    response = served(store).get(url(store, path))
    assert response.status_code == 200
    assert response.content == b"RIFF" + bytes(range(200))
    assert response.headers["content-type"] == "audio/wav"
    assert response.headers["accept-ranges"] == "bytes"
    assert response.headers["content-length"] == "204"
    # Nothing that could differ between two models' clips but their length.
    assert not {"etag", "last-modified", "content-disposition"} & set(response.headers)


def test_names_are_random_and_unguessable(tmp_path):
    store = ClipStore(tmp_path, 2**20)
    names = {store.put(b"x").rsplit("/", 1)[1] for _ in range(200)}
    assert len(names) == 200
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{22}\.wav", n) for n in names)


def test_unknown_malformed_and_other_folders_are_not_served(tmp_path):
    store = ClipStore(tmp_path / "clips", 2**20)
    path = store.put(b"clip")
    client = served(store)
    assert client.get(url(store, path.replace(".wav", "x.wav"))).status_code == 404
    assert client.get(url(store, str(tmp_path / "clips" / "..%2F.secret"))).status_code == 404
    assert (
        client.get(url(store, str(tmp_path / "other" / path.rsplit("/", 1)[1]))).status_code == 404
    )


def test_the_oldest_clips_leave_first_once_the_store_is_full(tmp_path):
    store = ClipStore(tmp_path, 1000)
    paths = [store.put(bytes(300)) for _ in range(5)]
    names = [p.rsplit("/", 1)[1] for p in paths]
    assert [store.get(n) is not None for n in names] == [False, False, True, True, True]
    assert store.size == 900 and len(store) == 3 and store.evicted == 2
    assert served(store).get(url(store, paths[0])).status_code == 404  # as an expired file
    big = store.put(bytes(5000))  # larger than the bound: kept alone, the others leave
    assert store.get(big.rsplit("/", 1)[1]) is not None and len(store) == 1


def test_a_non_positive_bound_is_refused(tmp_path):
    with pytest.raises(ValueError, match="positive"):
        ClipStore(tmp_path, 0)


def test_players_get_the_byte_ranges_they_ask_for(tmp_path):
    store = ClipStore(tmp_path, 2**20)
    data = bytes(range(256)) * 4
    path = store.put(data)
    client = served(store)
    part = client.get(url(store, path), headers={"Range": "bytes=0-1"})  # Safari's first ask
    assert part.status_code == 206 and part.content == data[:2]
    assert part.headers["content-range"] == "bytes 0-1/1024"
    assert part.headers["content-length"] == "2"
    tail = client.get(url(store, path), headers={"Range": "bytes=1000-"})
    assert tail.status_code == 206 and tail.content == data[1000:]
    last = client.get(url(store, path), headers={"Range": "bytes=-24"})
    assert last.status_code == 206 and last.content == data[-24:]
    past = client.get(url(store, path), headers={"Range": "bytes=5000-"})
    assert past.status_code == 416 and past.headers["content-range"] == "bytes */1024"
    several = client.get(url(store, path), headers={"Range": "bytes=0-1,5-6"})
    assert several.status_code == 200 and several.content == data
    head = client.head(url(store, path))
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == "1024"


def reference_range(header: str, size: int):
    """RFC 9110's single byte range, written out case by case."""
    unit, _, spec = header.strip().partition("=")
    if unit != "bytes" or "," in spec or spec.count("-") != 1:
        return None
    first, last = spec.split("-")
    if not set(first + last) <= set("0123456789"):
        return None
    if first == "" and last == "":
        return None
    if first == "":
        n = int(last)
        if n == 0 or size == 0:
            return "unsatisfiable"
        return (max(0, size - n), size)
    if int(first) >= size:
        return "unsatisfiable"
    if last != "" and int(last) < int(first):
        return None
    return (int(first), size if last == "" else min(size, int(last) + 1))


@given(
    st.one_of(
        st.tuples(st.integers(0, 3000) | st.none(), st.integers(0, 3000) | st.none()).map(
            lambda t: (
                "bytes="
                + ("" if t[0] is None else str(t[0]))
                + "-"
                + ("" if t[1] is None else str(t[1]))
            )
        ),
        st.text(max_size=20),
        st.text("bytes=-0123456789,٣ ", max_size=14),
    ),
    st.integers(0, 2000),
)
def test_byte_ranges_match_the_rfc_written_out(header, size):
    assert byte_range(header, size) == reference_range(header, size)
