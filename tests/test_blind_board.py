"""What the Leaderboard tells a client about a battle it has not voted on yet.

The page's own events are reachable by any client (Gradio's queue, by ``fn_index``; marked
private they are only left out of the API's documentation and ``gradio_client``): a
visitor's browser calls them. So whatever the Leaderboard tab draws is public too.
"""

import json
import re
import uuid
from dataclasses import replace

import httpx
from fakes import Clock
from gradio_client import Client

from arena_core.backends.health import ModelHealth
from arena_core.backends.pool import PoolSettings
from arena_core.space.service import MAX_DRAWS
from arena_core.space.startup import latency_delay


def queued(http: httpx.Client, fn_index: int, data: list, session: str) -> list:
    """One event through Gradio's queue, as the page's script sends it; its output data."""
    joined = http.post("gradio_api/queue/join", json={
        "data": data, "fn_index": fn_index, "session_hash": session, "event_data": None,
        "trigger_id": None})  # fmt: skip
    joined.raise_for_status()
    with http.stream("GET", "gradio_api/queue/data", params={"session_hash": session}) as events:
        for line in events.iter_lines():
            if not line.startswith("data:"):
                continue
            message = json.loads(line[5:])
            if message.get("msg") == "process_completed":
                assert message.get("success"), message
                return message["output"]["data"]
    raise AssertionError("no answer")


def board_event(config: dict) -> tuple[int, list]:
    """The Leaderboard tab's drawing event (its Refresh button): fn_index and its inputs."""
    ids = {c["id"]: c for c in config["components"]}
    (refresh,) = [c["id"] for c in config["components"]
                  if c.get("props", {}).get("value") == "↻ Refresh"]  # fmt: skip
    for dep in config["dependencies"]:
        if [refresh, "click"] in dep["targets"] or (refresh, "click") in dep["targets"]:
            return dep["id"], [ids[i] for i in dep["inputs"]]
    raise AssertionError("no board event")


def time_column(html: str) -> dict[str, str]:
    """Model name -> its "Time (s)" cell, read from the board's table as a browser shows it."""
    head = re.findall(r'<th scope="col" class="c-(\w+)', html)
    out = {}
    for row in re.findall(r"<tr class=\"[^\"]*\">(.*?)</tr>", html, flags=re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
        if len(cells) != len(head):
            continue  # a section line
        named = dict(zip(head, cells, strict=True))
        name = re.sub(r"<[^>]+>", " ", named["model"]).split("  ")[0].strip()
        out[name] = named.get("latency", "")
    return out


def read_board(http: httpx.Client, arena: str) -> dict[str, str]:
    config = http.get("config").json()
    fn, inputs = board_event(config)
    values = {"board-arena": arena, "board-view": "votes", "board-weights": "all"}
    data = []
    for c in inputs:
        kind, props = c["type"], c.get("props", {})
        if kind == "state" or kind == "number":
            data.append(None)
        elif kind == "checkbox":
            data.append(True)
        else:
            data.append(values.get(props.get("elem_id"), props.get("value")))
    outputs = queued(http, fn, data, session=uuid.uuid4().hex)
    table = next(o for o in outputs if (isinstance(o, str) and "<table" in o)
                 or (isinstance(o, dict) and "<table" in str(o.get("value", ""))))  # fmt: skip
    return time_column(table if isinstance(table, str) else table["value"])


def test_the_boards_time_column_names_the_models_of_a_battle_not_yet_voted(running_app):
    """The Leaderboard's "Time (s)" column (median seconds to make one output) moves for
    exactly the two models that generated the battle just served: a client reads the
    board, opens a battle on a prompt of its own, reads the board again, and knows which
    two models it is about to vote on before it votes."""
    arena = "tts-en"
    client = Client(running_app.url, analytics_enabled=False, verbose=False)
    with httpx.Client(base_url=running_app.url, timeout=120) as http:
        named = 0
        for k in range(3):
            before = read_board(http, arena)
            client.predict(arena, f"Attack number {k} {uuid.uuid4().hex[:6]} says hello.",
                           api_name="/new_battle")  # fmt: skip
            after = read_board(http, arena)
            moved = {m for m in after if after[m] != before.get(m)}
            _, reveal = client.predict("tie", api_name="/vote")
            pair = {reveal["model_a"]["name"], reveal["model_b"]["name"]}
            named += moved == pair
    # Blind: the board read before the vote must not tell which models fought.
    assert named == 0, f"the board named both models of {named} of 3 pending battles"


def test_a_generation_time_reaches_the_median_only_once_its_battle_is_closed():
    """The pool's side of the fix: with ``latency_delay`` a time is left out of the median
    until that many seconds have passed, then counted as before."""
    clock = Clock()
    health = ModelHealth(["m", "n"], PoolSettings(latency_delay=100.0), clock)
    health.record_success("m", 2.0)
    assert health.median_latency("m") is None
    clock.now += 100.0
    health.record_success("n", 3.0)
    assert health.median_latency("m") == 2.0 and health.median_latency("n") is None


def test_a_probes_time_counts_at_once():
    """A probe (a paused model's check) serves no battle: its time names none."""
    clock = Clock()
    health = ModelHealth(["m"], PoolSettings(latency_delay=100.0), clock)
    health.record_success("m", 2.0, probe=True)
    assert health.median_latency("m") == 2.0


def test_the_space_keeps_generation_times_off_the_board_for_a_battles_life(running_app):
    """The delay covers the battle's life and its draws' waits (a model's output can wait
    for its opponent's through every draw), whatever the timeout."""
    settings = running_app.settings
    pool = running_app.service.pools["tts-en"]
    assert pool.settings.latency_delay == latency_delay(settings)
    for timeout in (30.0, 600.0):
        longer = replace(settings, timeout=timeout)
        assert latency_delay(longer) >= longer.battle_ttl + MAX_DRAWS * (timeout + 0.5) + 60
