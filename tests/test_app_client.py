"""The launched app driven through gradio_client, as an API user would."""

import json
import re
import time
import wave
from collections import Counter

import httpx
import numpy as np
import pytest
from gradio_client import Client

import arena_core.votes.log as vote_log_module
from arena_core.votes.read import read_votes

VOTE_CYCLE = ["a", "b", "tie", "both_bad"]


@pytest.fixture(scope="module")
def client(running_app):
    return Client(running_app.url, analytics_enabled=False, verbose=False)


def new_client(running_app):
    return Client(running_app.url, analytics_enabled=False, verbose=False)


def model_ids(running_app, arena="tts-en"):
    return [m.id for m in running_app.service.registry.arena(arena).models]


def read_wav(path):
    with wave.open(path) as w:
        frames = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
        return w.getframerate(), frames


def test_the_public_api_is_the_four_documented_endpoints(client):
    """No handler of the page leaks into the API (a component's callable value once made a
    public /lambda_2): only what the README documents, each by name."""
    api = client.view_api(print_info=False, return_format="dict")
    assert set(api["named_endpoints"]) == {"/new_battle", "/vote", "/leaderboard", "/status"}
    assert not api["unnamed_endpoints"]


def test_battles_votes_reveals_land_in_the_log_and_the_board(running_app, client):
    ids = model_ids(running_app)
    before = client.predict("tts-en", "", api_name="/leaderboard")["votes_used"]
    reveals = []
    for k in range(6):
        prompt, audio_a, audio_b, *others = client.predict("tts-en", "", api_name="/new_battle")
        assert prompt and all(v is None for v in others)
        for path in (audio_a, audio_b):
            assert not any(i in path for i in ids)  # file names do not reveal the model
            rate, samples = read_wav(path)
            assert rate >= 8000 and np.sqrt(np.mean(samples.astype(float) ** 2)) > 100
        reveal_md, reveal = client.predict(VOTE_CYCLE[k % 4], api_name="/vote")
        assert reveal["vote"] == VOTE_CYCLE[k % 4] and reveal["counted"]
        assert reveal["prompt"] == prompt  # a client sees which of its battles it was
        assert reveal["model_a"]["id"] in reveal_md and reveal["model_b"]["id"] in reveal_md
        assert reveal["model_a"]["id"] != reveal["model_b"]["id"]
        reveals.append(reveal)
    votes = read_votes(running_app.settings.votes_dir)
    logged = Counter(zip(votes.column("model_a").to_pylist(), votes.column("model_b").to_pylist(),
                         votes.column("vote").to_pylist(), strict=True))  # fmt: skip
    for r in reveals:
        assert logged[(r["model_a"]["id"], r["model_b"]["id"], r["vote"])] >= 1
    board = client.predict("tts-en", "", api_name="/leaderboard")
    assert board["votes_used"] == before + 6
    assert sum(row["battles"] for row in board["rows"]) == 2 * board["votes_used"]


def test_a_second_vote_and_a_vote_without_battle_are_refused(running_app):
    fresh = new_client(running_app)
    with pytest.raises(Exception, match="no open battle"):
        fresh.predict("a", api_name="/vote")
    fresh.predict("tts-en", "", api_name="/new_battle")
    fresh.predict("tie", api_name="/vote")
    with pytest.raises(Exception, match="already voted"):
        fresh.predict("b", api_name="/vote")


def test_typed_prompts_are_cleaned_and_bounded(running_app, client):
    prompt, *_ = client.predict("tts-en", "Hello\tthere,\x00 world", api_name="/new_battle")
    assert prompt == "Hello there, world"
    too_long = "x" * (running_app.settings.max_prompt_chars + 1)
    with pytest.raises(Exception, match="limit is"):
        client.predict("tts-en", too_long, api_name="/new_battle")


def test_multilingual_arena_and_category_board(client):
    _, audio_a, audio_b, *_ = client.predict("tts-multilingual", "", api_name="/new_battle")
    assert audio_a and audio_b
    client.predict("a", api_name="/vote")
    total = client.predict("tts-multilingual", "", api_name="/leaderboard")
    per_language = [client.predict("tts-multilingual", c, api_name="/leaderboard")["votes_used"]
                    for c in ("en", "de", "es", "fr", "it")]  # fmt: skip
    assert total["votes_used"] >= 1 and sum(per_language) == total["votes_used"]


def test_a_typed_prompt_with_its_language_and_old_callers_without_one(running_app, client):
    # Issue 11: /new_battle takes the language of a typed prompt; callers that pass two
    # arguments keep working (the language defaults to none).
    params = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    language = params["/new_battle"]["parameters"][2]
    assert language["parameter_has_default"] and language["parameter_default"] == ""
    prompt, *_ = client.predict("tts-multilingual", "Guten Tag, wie geht's?", "de",
                                api_name="/new_battle")  # fmt: skip
    assert prompt == "Guten Tag, wie geht's?"
    client.predict("a", api_name="/vote")
    votes = read_votes(running_app.settings.votes_dir)
    assert votes.column("category").to_pylist()[-1] == "de"
    with pytest.raises(Exception, match="no prompts in language 'xx'"):
        client.predict("tts-multilingual", "Hallo", "xx", api_name="/new_battle")


def test_hosted_arenas_without_a_token_say_so(client):
    # Not "try again in a minute" (session 32): without the token it never comes back.
    with pytest.raises(Exception, match=r"can run on this server .*provider's token"):
        client.predict("chat", "", api_name="/new_battle")
    with pytest.raises(Exception, match="no arena"):
        client.predict("nope", "", api_name="/leaderboard")


def test_the_listening_gate_refuses_a_vote_before_the_clips_could_be_heard(running_app, client):
    # "Played to the end" was enforced only in the browser; /vote took a vote at once.
    running_app.service.listen_share = 0.3
    try:
        client.predict("tts-en", "", api_name="/new_battle")
        with pytest.raises(Exception, match="Listen to both clips before you vote") as refused:
            client.predict("a", api_name="/vote")
    finally:
        running_app.service.listen_share = 0.0
    left = float(re.search(r"\((\d+) s left\)", str(refused.value)).group(1))
    time.sleep(left + 1.0)
    _, reveal = client.predict("a", api_name="/vote")  # the battle stayed open for its vote
    assert reveal["counted"]


def test_routine_refusals_are_one_log_line_without_a_traceback(client, capfd, caplog):
    caplog.set_level("INFO", logger="app")
    client.predict("tts-en", "", api_name="/new_battle")
    client.predict("tie", api_name="/vote")
    with pytest.raises(Exception, match="already voted"):
        client.predict("a", api_name="/vote")
    assert "Traceback" not in capfd.readouterr().err
    assert any("refused: You already voted" in r.getMessage() for r in caplog.records)


def test_monitoring_and_uploads_are_closed(running_app):
    # /monitoring showed function names and success rates to anyone; the app takes no
    # uploads, so Gradio's upload route refuses any file with content.
    for page in ("monitoring", "monitoring/summary"):
        answer = httpx.get(running_app.url + page)
        assert answer.status_code == 403 and "new_battle" not in answer.text
    answer = httpx.post(running_app.url + "gradio_api/upload",
                        files={"files": ("x.wav", b"RIFF" + b"\0" * 4096, "audio/wav")})  # fmt: skip
    assert answer.status_code == 413


def test_a_full_disk_refuses_the_vote_and_the_app_keeps_serving(running_app, client, monkeypatch):
    # The shard cannot take another byte: the visitor is told, nothing is acknowledged or
    # written, and once space is back the same battle takes its vote.
    logged_before = len(read_votes(running_app.settings.votes_dir))
    real_write = vote_log_module.os.write

    def full(fd, data):
        raise OSError(28, "No space left on device")

    client.predict("tts-en", "", api_name="/new_battle")
    monkeypatch.setattr(vote_log_module.os, "write", full)
    with pytest.raises(Exception, match=r"could not be saved\. Please vote again"):
        client.predict("a", api_name="/vote")
    assert len(read_votes(running_app.settings.votes_dir)) == logged_before
    assert client.predict("tts-en", "", api_name="/leaderboard")["rows"]  # still serving
    monkeypatch.setattr(vote_log_module.os, "write", real_write)
    _, reveal = client.predict("a", api_name="/vote")
    assert reveal["counted"]
    assert len(read_votes(running_app.settings.votes_dir)) == logged_before + 1


def raw_battle(http: httpx.Client, arena: str = "tts-en") -> list:
    """/new_battle as the page's script calls it (one POST, outside the queue)."""
    config = http.get("config").json()
    (dep,) = [d for d in config["dependencies"] if d.get("api_name") == "new_battle"]
    states = {c["id"] for c in config["components"] if c.get("type") == "state"}
    values = iter([arena, "", ""])
    data = [None if i in states else next(values) for i in dep["inputs"]]
    answer = http.post("gradio_api/run/new_battle", json={"data": data, "fn_index": dep["id"],
                                                          "session_hash": "raw-battle"})  # fmt: skip
    answer.raise_for_status()
    return answer.json()["data"]


def test_clips_are_served_from_memory_whole_and_in_ranges(running_app, client):
    # The page's players fetch the URL in each clip's file data; Chromium and Safari ask for
    # byte ranges. The store's route answers through all of Gradio's middleware.
    with httpx.Client(base_url=running_app.url, timeout=30) as http:
        files = [v for v in raw_battle(http) if isinstance(v, dict) and "url" in v]
        assert len(files) == 2
        bodies = []
        for f in files:
            assert f["path"].startswith(str(running_app.clips.folder))
            whole = http.get(f["url"])
            assert whole.status_code == 200 and whole.headers["content-type"] == "audio/wav"
            assert not {"etag", "last-modified", "content-disposition"} & set(whole.headers)
            part = http.get(f["url"], headers={"Range": "bytes=0-11"})
            assert part.status_code == 206 and part.content == whole.content[:12]
            assert part.content[:4] == b"RIFF" and part.content[8:12] == b"WAVE"
            bodies.append(whole.content)
        assert len(bodies[0]) == len(bodies[1])  # one length for both sides
        assert not any(running_app.clips.folder.glob("*"))  # nothing on disk
    # gradio_client downloads every file through /file=<path>: the same route serves it.
    _, audio_a, _, *_ = client.predict("tts-en", "", api_name="/new_battle")
    rate, samples = read_wav(audio_a)
    assert rate == running_app.settings.audio_rate and len(samples) > rate // 10


def test_the_api_board_names_its_votes_and_the_cli_prints_it_again(running_app, client, capsys):
    # /leaderboard answers as `leaderboard --format json` prints: the board, then the votes,
    # code and settings it came from. Replaying the Space's folder with those settings gives
    # the same board and the same revision, digit for digit.
    from arena_core import cli
    from arena_core.snapshots.source import board_part

    client.predict("tts-en", "", api_name="/new_battle")
    client.predict("a", api_name="/vote")
    shown = client.predict("tts-en", "", api_name="/leaderboard")
    assert set(shown) >= {"rows", "revision", "code_version", "settings"}
    assert shown["revision"]["votes_read"] >= shown["votes_used"] > 0
    unavailable = shown["settings"]["unavailable"]
    argv = ["leaderboard", "--votes", str(running_app.settings.votes_dir), "--registry",
            str(running_app.settings.registry), "--arena", "tts-en", "--format", "json",
            "--read-at", shown["revision"]["read_at"],  # the reader's clock the board names
            *(["--unavailable", *unavailable] if unavailable else [])]  # fmt: skip
    assert cli.main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    assert board_part(printed) == board_part(shown)
    assert printed["revision"] == shown["revision"]
    assert printed["settings"] == shown["settings"]
    assert printed["code_version"] == shown["code_version"]


def raw_call(
    http: httpx.Client, api_name: str, values: list, session: str = "raw-call"
) -> httpx.Response:
    """One raw POST to an API event, as a hostile client sends it (raw JSON, its own session)."""
    config = http.get("config").json()
    (dep,) = [d for d in config["dependencies"] if d.get("api_name") == api_name]
    states = {c["id"] for c in config["components"] if c.get("type") == "state"}
    given = iter(values)
    data = [None if i in states else next(given) for i in dep["inputs"]]
    payload = {"data": data, "fn_index": dep["id"], "session_hash": session}
    # json.dumps escapes a lone surrogate as \\ud800, as a hostile client may send it.
    return http.post(f"gradio_api/run/{api_name}", content=json.dumps(payload),
                     headers={"content-type": "application/json"})  # fmt: skip


def test_hostile_raw_requests_get_a_clear_answer_never_a_500(running_app):
    """Found by trying the API as an attacker: a typed prompt that is not text (the API
    events take raw JSON), a Range header with 5,000 digits, and a session key with a lone
    surrogate (every vote of that session failed) each gave a bare 500 (Gradio's error
    answer with no message: ``{"error": null}``) and a traceback in the log."""
    with httpx.Client(base_url=running_app.url, timeout=30) as http:
        for prompt in (123, 1.5, True, ["Hello world"], {"Hello": 1}):
            answer = raw_call(http, "new_battle", ["tts-en", prompt, ""])
            assert answer.json()["error"] == "A typed prompt is text.", answer.text
        files = [v for v in raw_battle(http) if isinstance(v, dict) and "url" in v]
        huge = "9" * 5000
        assert http.get(files[0]["url"], headers={"Range": f"bytes={huge}-"}).status_code == 416
        whole = http.get(files[0]["url"], headers={"Range": f"bytes=-{huge}"})
        assert whole.status_code == 206 and whole.content == http.get(files[0]["url"]).content
        battle = raw_call(http, "new_battle", ["tts-en", "", ""], session="\ud800")
        assert battle.status_code == 200
        vote = raw_call(http, "vote", ["a"], session="\ud800")
        assert vote.status_code == 200 or vote.json()["error"], vote.text  # an answer or a reason
