"""Benchmark: the running app under many concurrent visitors, and a check that no vote is lost.

    python bench/load.py --clients 50 --seconds 30
    python bench/load.py --clients 50 --seconds 30 --replayed 1000000
    python bench/load.py --clients 50 --seconds 30 --typed-share 0.1 --format json
    python bench/load.py --clients 50 --seconds 30 --rate 100

Starts ``app.py`` in its own process on 127.0.0.1 with a fresh data folder (the
listening gate switched off and the rate limit at the largest the app accepts, off
in effect: this measures the server's capacity, not a listener's patience), waits until the start-up replay and the
output warm-up are done, then runs ``--clients`` simulated visitors for
``--seconds``: each loops "new battle (and fetch both clips, as a browser does,
unless ``--no-fetch``), vote". By default each visitor starts its next visit as soon as
the last one ends (a closed loop: the server is always saturated, so latencies grow with
the number of visitors). With ``--rate R`` visits arrive at random (Poisson) times at R a
second and a free visitor takes each (an open loop: latencies at a given load; a visit
that finds every visitor busy waits, and that wait is not counted in the endpoint times).
The clients speak Gradio's queue protocol directly over HTTP with asyncio
(``gradio_client`` spends more CPU per call than the server does, on the same two
cores). ``--typed-share`` of the battles use a unique typed prompt, so they
generate instead of answering from the output cache.

Afterwards it reads the vote log and checks that every acknowledged vote is
there exactly once, and that the live board (the app's ``/leaderboard``) equals the
CLI's replay of the log (``python -m arena_core leaderboard --format json`` with the
settings and reader's clock the live board names): every row and rating, the
provenance blocks (revision, code version, settings) left out. A vote missing or
doubled, a board that differs, or any request error makes the exit status 1.
``--format json`` prints one object with ``votes_acked``, ``votes_found`` (in the log
once), ``votes_duplicated`` (more than once), ``votes_lost`` (missing),
``votes_on_board``, ``board_equals_replay``, ``board_differences`` (the keys that
differ), ``votes_per_s``, ``battles_per_s``, ``vote_p50_ms``, ``vote_p99_ms``,
``battle_p50_ms``, ``battle_p99_ms``, ``fetch_p99_ms``, ``server_cpu_ms_per_visit``,
``client_cpu_ms_per_visit`` and ``errors``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from synth import simulate, write_parquet  # noqa: E402

from arena_core.registry import load_registry  # noqa: E402
from arena_core.snapshots.source import board_part  # noqa: E402
from arena_core.votes.read import read_votes  # noqa: E402

ARENA = "tts-en"
CHOICES = ("a", "b", "tie", "both_bad")
#: Seconds to wait for the app to answer and finish its replay and warm-up.
START_TIMEOUT = 900.0
#: ARENA_RATE_LIMIT for the run: the largest the app's config accepts (RANGES in
#: arena_core/space/config.py; a value above it stops the app at start-up). A million votes
#: per voter per window is the limit switched off in effect: no run comes near it.
RATE_LIMIT_OFF = 1_000_000
#: Lines of the server's log shown when the app exits before it is ready.
LOG_TAIL_LINES = 30


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--replayed", type=int, default=0, help="votes in the log before start")
    parser.add_argument("--typed-share", type=float, default=0.0)
    parser.add_argument("--rate", type=float, default=0.0,
                        help="visits per second arriving at random (0: each visitor loops)")  # fmt: skip
    parser.add_argument("--fetch", action=argparse.BooleanOptionalAction, default=True,
                        help="fetch both clips of each battle, as a browser does")  # fmt: skip
    parser.add_argument("--data", help="data folder to reuse (keeps the output cache warm)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--format", choices=("table", "json"), default="table")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="arena-load-") as tmp:
        data = Path(args.data) if args.data else Path(tmp)
        result = run(data, args)
    if args.format == "json":
        print(json.dumps(result, indent=1))
    else:
        print(table(result, args))
    return 0 if sound(result) else 1


def sound(result: dict) -> bool:
    """Whether the run kept its promise: every acknowledged vote in the log exactly once,
    the live board equal to the CLI's replay of the log, and no request failed (a failed
    request is a visitor turned away, and a vote that may have been lost unacknowledged)."""
    return (
        result["votes_found"] == result["votes_acked"]
        and result["board_equals_replay"]
        and not result["errors"]
    )


def run(data: Path, args) -> dict:
    votes_dir = data / "votes"
    for old in votes_dir.glob("votes-*"):  # a reused folder keeps its cache, not its votes
        old.unlink()
    if args.replayed:
        seed_votes(votes_dir, args.replayed, args.seed)
    warm_cache(data)
    port = free_port()
    env = {**os.environ, "ARENA_DATA_DIR": str(data), "GRADIO_SERVER_PORT": str(port),
           "ARENA_REGISTRY": str(arena_registry(data)),
           "GRADIO_SERVER_NAME": "127.0.0.1", "ARENA_LISTEN_SHARE": "0",
           "ARENA_RATE_LIMIT": str(RATE_LIMIT_OFF), "ARENA_VOTER_SALT": "load-bench",
           "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"}  # fmt: skip
    # The server's log goes to a file: a pipe nobody reads would stall it once full.
    with open(data / "server.log", "w") as server_log:
        server = subprocess.Popen([sys.executable, str(ROOT / "app.py")], cwd=ROOT, env=env,
                                  stdout=subprocess.DEVNULL, stderr=server_log)  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}/"
            stats = asyncio.run(load(base, args, server, data / "server.log"))
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
    stats["rebuilds"] = rebuilds((data / "server.log").read_text(errors="replace"))
    return summarise(stats, data, args)


def seed_votes(folder: Path, n_votes: int, seed: int) -> None:
    """``n_votes`` synthetic votes between the arena's models, as one Parquet file (written
    by bench/synth.py's ``write_parquet``: the schema's fields the frames lack are null)."""
    models = [m.id for m in load_registry(ROOT / "registry.yaml").arena(ARENA).models]
    frames, _ = simulate(n_votes, n_models=len(models), seed=seed)
    mapping = {f"model-{k:02d}": m for k, m in enumerate(models)}
    start_us = time.time_ns() // 1000 - 10**12  # all of them in the past
    for frame in frames:
        frame["arena"] = ARENA
        frame["model_a"] = frame["model_a"].map(mapping)
        frame["model_b"] = frame["model_b"].map(mapping)
        frame["category"] = None
        ts = start_us + np.arange(len(frame)) * 1000
        frame["ts"] = np.char.add(
            np.datetime_as_string(ts.astype("datetime64[us]"), unit="ms"), "Z"
        )
        start_us = int(ts[-1]) + 1000
    write_parquet(frames, folder, name="votes-seed.parquet")


class Connection:
    """One keep-alive HTTP/1.1 connection, as one browser tab keeps: minimal and cheap.

    httpx spends about 4 ms of CPU per request here, as much as the server spends
    answering it; this client spends a fraction of that, so the two cores measure
    the server rather than the load generator. Bodies come with Content-Length or
    chunked, which is all uvicorn sends.
    """

    def __init__(self, host: str, port: int, address: str):
        self.host, self.port, self.address = host, port, address
        self.reader = self.writer = None

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        for attempt in (0, 1):  # a keep-alive connection the server closed: reconnect once
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            # Each visitor has an address of its own: uvicorn takes X-Forwarded-For as the
            # client for connections from 127.0.0.1, so the app sees distinct voters.
            head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                    f"X-Forwarded-For: {self.address}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")  # fmt: skip
            try:
                self.writer.write(head.encode() + body)
                return await self._response()
            except (ConnectionError, asyncio.IncompleteReadError):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def _response(self) -> tuple[int, bytes]:
        status = int((await self.reader.readuntil(b"\r\n")).split()[1])
        headers = {}
        while (line := await self.reader.readuntil(b"\r\n")) != b"\r\n":
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            data = await self.reader.readexactly(int(headers["content-length"]))
        else:  # chunked
            parts = []
            while size := int((await self.reader.readuntil(b"\r\n")).strip(), 16):
                parts.append(await self.reader.readexactly(size))
                await self.reader.readexactly(2)
            await self.reader.readexactly(2)
            data = b"".join(parts)
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, data

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


class Gradio:
    """A Gradio 6 app's endpoints, called the way its page calls them.

    Endpoints outside the queue (``queue=False``) are one POST to ``run/<name>``;
    queued ones join the queue and read their result from its event stream.
    """

    def __init__(self, http: httpx.AsyncClient, base: str, config: dict):
        self.http, self.base = http, base
        self.prefix = "/" + config.get("api_prefix", "/gradio_api").strip("/") + "/"
        self.api = base.rstrip("/") + self.prefix
        named = [d for d in config["dependencies"] if d.get("api_name")]
        self.fn = {d["api_name"]: d["id"] for d in named}
        self.inputs = {d["api_name"]: d["inputs"] for d in named}
        self.queued = {d["api_name"]: d.get("queue", True) is not False for d in named}
        self.states = {c["id"] for c in config["components"] if c.get("type") == "state"}

    def _payload(self, name: str, values, session: str) -> dict:
        values = iter(values)
        # Inputs left out (a later, optional parameter such as /new_battle's language) go as None.
        data = [None if i in self.states else next(values, None) for i in self.inputs[name]]
        return {"data": data, "fn_index": self.fn[name], "session_hash": session,
                "event_data": None, "trigger_id": None}  # fmt: skip

    async def call(self, name: str, *values, session: str, conn: Connection | None = None) -> list:
        """Run endpoint ``name`` in ``session``; its output values."""
        payload = self._payload(name, values, session)
        if not self.queued[name] and conn is not None:
            status, body = await conn.request("POST", f"{self.prefix}run/{name}",
                                              json.dumps(payload).encode())  # fmt: skip
            answer = json.loads(body)
            if status != 200:
                raise RuntimeError(answer.get("error") or f"HTTP {status}")
            return answer["data"]
        joined = await self.http.post(self.api + "queue/join", json=payload)
        joined.raise_for_status()
        event_id = joined.json()["event_id"]
        async with self.http.stream("GET", self.api + "queue/data",
                                    params={"session_hash": session}) as stream:  # fmt: skip
            async for line in stream.aiter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("event_id") != event_id or message["msg"] != "process_completed":
                    continue
                output = message["output"]
                if not message.get("success", False):
                    raise RuntimeError(output.get("error") or "event failed")
                return output["data"]
        raise RuntimeError("the stream closed before the event completed")


def cpu_seconds(pid: int | None = None) -> float:
    """CPU time (user + system) used so far by process ``pid`` (Linux), or by this one."""
    if pid is None:
        return time.process_time()
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def load(base: str, args, server: subprocess.Popen, server_log: Path) -> dict:
    limits = httpx.Limits(
        max_connections=4 * args.clients, max_keepalive_connections=2 * args.clients
    )
    server_pid = server.pid
    async with httpx.AsyncClient(timeout=120.0, limits=limits) as http:
        config = await wait_until_ready(http, base, server, server_log)
        gradio = Gradio(http, base, config)
        (board,) = await gradio.call("leaderboard", ARENA, "", session=str(uuid.uuid4()))
        stats = {"battle_ms": [], "vote_ms": [], "fetch_ms": [], "acked": [], "errors": Counter(),
                 "votes_before": board["votes_used"]}  # fmt: skip
        started = time.perf_counter()
        cpu = (cpu_seconds(server_pid), cpu_seconds())
        deadline = started + args.seconds
        rng = random.Random(args.seed)
        arrivals = asyncio.Queue() if args.rate > 0 else None
        tasks = [visitor(gradio, http, stats, deadline, random.Random(rng.random()),
                         args.typed_share, k + 1, args.fetch, arrivals)
                 for k in range(args.clients)]  # fmt: skip
        if arrivals is not None:
            tasks.append(arrive(arrivals, args.rate, deadline, random.Random(rng.random())))
        await asyncio.gather(*tasks)
        stats["seconds"] = time.perf_counter() - started
        stats["server_cpu"] = cpu_seconds(server_pid) - cpu[0]
        stats["client_cpu"] = cpu_seconds() - cpu[1]
        await settled(gradio)  # a voter flagged at the end: their votes leave in the background
        (board,) = await gradio.call("leaderboard", ARENA, "", session=str(uuid.uuid4()))
        stats["votes_after"] = board["votes_used"]
        stats["board_after"] = board
        return stats


async def settled(gradio: Gradio) -> None:
    """Wait until no rebuild of the boards runs (a voter flagged during the run)."""
    until = time.monotonic() + START_TIMEOUT
    while time.monotonic() < until:
        (state,) = await gradio.call("status", session=str(uuid.uuid4()))
        if state.get("boards_settled", True):
            return
        await asyncio.sleep(0.5)
    raise TimeoutError("the boards did not settle")


async def wait_until_ready(
    http: httpx.AsyncClient, base: str, server: subprocess.Popen, server_log: Path
) -> dict:
    """The app's config, once it answers and its start-up replay and warm-up are done.

    An app that exits instead (a setting its config refuses, a crash in the replay) fails
    the run at once with the end of its log, not after :data:`START_TIMEOUT` of polling a
    port nobody listens on.
    """
    until = time.monotonic() + START_TIMEOUT
    while time.monotonic() < until:
        if server.poll() is not None:
            lines = server_log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
            raise RuntimeError(f"app.py exited with {server.returncode} before it was ready; "
                               f"the end of {server_log}:\n" + "\n".join(lines))  # fmt: skip
        try:
            config = (await http.get(base + "config")).json()
            (state,) = await Gradio(http, base, config).call("status", session=str(uuid.uuid4()))
            if state["replay_done"] and state["warmup_done"]:
                return config
        except (httpx.HTTPError, RuntimeError, KeyError, ValueError):
            pass
        await asyncio.sleep(1.0)
    raise TimeoutError("the app did not become ready")


def arena_registry(data: Path) -> Path:
    """The default registry reduced to the benchmarked arena (the others' warm-up, Kokoro's
    above all, would otherwise run during the measurement)."""
    import yaml

    registry = yaml.safe_load((ROOT / "registry.yaml").read_text(encoding="utf-8"))
    (arena,) = [a for a in registry["arenas"] if a["id"] == ARENA]
    if isinstance(arena.get("prompts"), str):
        arena["prompts"] = str(ROOT / arena["prompts"])
    path = data / "registry-load.yaml"
    data.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"arenas": [arena]}, allow_unicode=True), encoding="utf-8")
    return path


def warm_cache(data: Path) -> None:
    """Generate and shape every (model, set prompt) output of the speech arenas, with the
    app's own warm-up, into the data folder the app will use (kept across runs with --data).

    The app warms up at start-up too, but in the background, one generation at a time;
    done here first, the app finds everything cached and the load phase measures serving.
    """
    from arena_core.space.config import Settings
    from arena_core.space.startup import build_service

    settings = Settings(registry=arena_registry(data), data_dir=data, voter_salt="load-bench")
    service = build_service(settings)
    try:
        service.warmup.run()
    finally:
        service.close()


async def arrive(arrivals: asyncio.Queue, rate: float, deadline: float, rng: random.Random):
    """Put a visit in ``arrivals`` at Poisson times, ``rate`` a second, until ``deadline``."""
    due = time.perf_counter()
    while True:
        due += rng.expovariate(rate)
        if due >= deadline:
            return
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        arrivals.put_nowait(due)


async def visitor(gradio: Gradio, http, stats, deadline, rng: random.Random, typed_share: float,
                  number: int, fetch: bool, arrivals: asyncio.Queue | None = None):  # fmt: skip
    session = str(uuid.uuid4())
    url = httpx.URL(gradio.base)
    conn = Connection(
        url.host, url.port, f"10.{number // 65536 % 256}.{number // 256 % 256}.{number % 256}"
    )
    while time.perf_counter() < deadline:
        if arrivals is not None:  # open loop: wait for the next visit to arrive
            try:
                await asyncio.wait_for(arrivals.get(), deadline - time.perf_counter())
            except (TimeoutError, ValueError):
                break
        prompt = (
            f"Typed prompt {uuid.uuid4().hex[:8]}: the weather is fine."
            if rng.random() < typed_share
            else ""
        )
        try:
            t0 = time.perf_counter()
            outputs = await gradio.call("new_battle", ARENA, prompt, session=session, conn=conn)
            stats["battle_ms"].append(1000 * (time.perf_counter() - t0))
            t0 = time.perf_counter()
            for clip in clips(outputs) if fetch else ():
                status, _ = await conn.request("GET", httpx.URL(clip["url"]).raw_path.decode())
                if status != 200:
                    raise RuntimeError(f"clip fetch: HTTP {status}")
            if fetch:
                stats["fetch_ms"].append(1000 * (time.perf_counter() - t0))
            t0 = time.perf_counter()
            outputs = await gradio.call("vote", rng.choice(CHOICES), session=session, conn=conn)
            stats["vote_ms"].append(1000 * (time.perf_counter() - t0))
            (reveal,) = [o for o in outputs if isinstance(o, dict) and "vote_id" in o]
            stats["acked"].append(reveal["vote_id"])
        except (httpx.HTTPError, OSError, RuntimeError, KeyError, TypeError, ValueError) as exc:
            stats["errors"][f"{type(exc).__name__}: {str(exc)[:80]}"] += 1
    conn.close()


def clips(outputs: list) -> list[dict]:
    """The audio files among a battle's outputs (the state, if sent, is left out)."""
    return [o for o in outputs if isinstance(o, dict) and "url" in o]


def rebuilds(server_log: str) -> list[float]:
    """Seconds of each rebuild of the boards the server logged (a voter flagged as anomalous
    during the run: their earlier votes leave the boards)."""
    found = re.findall(r"boards rebuilt from \d+ votes in ([\d.]+) s", server_log)
    return [float(seconds) for seconds in found]


def cli_replay(data: Path, live: dict) -> dict:
    """The board ``python -m arena_core leaderboard --format json`` prints from the run's
    vote log, with the settings the live board names: the same registry, the models it
    marks as unable to run, and its reader's clock (so both judge the same rows to be
    from the future)."""
    read_at = (live.get("revision") or {}).get("read_at")
    unavailable = (live.get("settings") or {}).get("unavailable") or []
    args = [sys.executable, "-m", "arena_core", "leaderboard", "--votes", str(data / "votes"),
            "--registry", str(arena_registry(data)), "--arena", ARENA, "--format", "json",
            *(["--read-at", read_at] if read_at else []),
            *(["--unavailable", *unavailable] if unavailable else [])]  # fmt: skip
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"the CLI replay of the log failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def board_differences(live: dict, replayed: dict) -> list[str]:
    """The keys in which the live board and the CLI's replay differ (rows: which models),
    provenance blocks left out (their clocks and commits name the process, not the board)."""
    live, replayed = board_part(live), board_part(replayed)
    differ = [k for k in sorted(live.keys() | replayed.keys()) if live.get(k) != replayed.get(k)]
    if "rows" in differ:
        live_rows, cli_rows = ({r["model_id"]: r for r in b.get("rows") or []}
                               for b in (live, replayed))  # fmt: skip
        models = [m for m in sorted(live_rows.keys() | cli_rows.keys())
                  if live_rows.get(m) != cli_rows.get(m)]  # fmt: skip
        differ[differ.index("rows")] = f"rows ({', '.join(models) or 'their order'})"
    return differ


def summarise(stats: dict, data: Path, args) -> dict:
    votes = read_votes(data / "votes", columns=("vote_id",))
    logged = Counter(votes.column("vote_id").to_pylist())
    acked = stats["acked"]
    seconds = stats["seconds"]
    # The live board against a replay of the log with the CLI's code, every row and rating
    # (votes of voters the anomalous-voter test flags are left out of both).
    differences = board_differences(stats["board_after"], cli_replay(data, stats["board_after"]))

    def pct(values, q):
        return round(float(np.percentile(values, q)), 1) if values else None

    return {
        "clients": args.clients,
        "rate": args.rate or None,
        "seconds": round(seconds, 1),
        "typed_share": args.typed_share,
        "clips_fetched": args.fetch,
        "replayed": args.replayed,
        "votes_acked": len(acked),
        # Each acknowledged vote in the log exactly once, more than once, or not at all.
        "votes_found": sum(1 for v in acked if logged[v] == 1),
        "votes_duplicated": sum(1 for v in acked if logged[v] > 1),
        "votes_lost": sum(1 for v in acked if logged[v] == 0),
        "votes_on_board": stats["votes_after"] - stats["votes_before"],
        "board_equals_replay": not differences,
        "board_differences": differences,
        "votes_per_s": round(len(acked) / seconds, 1),
        "battles_per_s": round(len(stats["battle_ms"]) / seconds, 1),
        "vote_p50_ms": pct(stats["vote_ms"], 50),
        "vote_p99_ms": pct(stats["vote_ms"], 99),
        "battle_p50_ms": pct(stats["battle_ms"], 50),
        "battle_p99_ms": pct(stats["battle_ms"], 99),
        "fetch_p99_ms": pct(stats["fetch_ms"], 99),
        # CPU per battle-and-vote, which a crowded machine does not inflate as it does times:
        # two free cores serve about 2000 / (server + client ms) visits a second.
        "server_cpu_ms_per_visit": round(1000 * stats["server_cpu"] / max(len(acked), 1), 1),
        "client_cpu_ms_per_visit": round(1000 * stats["client_cpu"] / max(len(acked), 1), 1),
        # Rebuilds after the start-up replay (voters flagged during the run), and their time.
        "rebuilds": len(stats["rebuilds"]),
        "rebuild_max_s": max(stats["rebuilds"], default=None),
        "errors": dict(stats["errors"]),
    }


def table(r: dict, args) -> str:
    rows = [
        ("clients, arrival rate (/s), seconds, typed share, votes replayed first, clips fetched",
         f"{r['clients']}, {r['rate'] or 'closed loop'}, {r['seconds']}, {r['typed_share']}, "
         f"{r['replayed']:,}, {r['clips_fetched']}"),
        ("votes/s (acknowledged)", r["votes_per_s"]),
        ("battles/s", r["battles_per_s"]),
        ("/vote p50 / p99 (ms)", f"{r['vote_p50_ms']} / {r['vote_p99_ms']}"),
        ("/new_battle p50 / p99 (ms)", f"{r['battle_p50_ms']} / {r['battle_p99_ms']}"),
        ("both clips fetched, p99 (ms)", r["fetch_p99_ms"]),
        ("votes acknowledged / in the log once / more than once / missing",
         f"{r['votes_acked']} / {r['votes_found']} / {r['votes_duplicated']} / {r['votes_lost']}"),
        ("votes added to the board; board equals the CLI replay (rows and ratings)",
         f"{r['votes_on_board']}; {r['board_equals_replay']}"
         + (f" (differ: {', '.join(r['board_differences'])})" if r["board_differences"] else "")),
        ("CPU per visit (battle, 2 clips, vote), server / load client (ms)",
         f"{r['server_cpu_ms_per_visit']} / {r['client_cpu_ms_per_visit']}"),
        ("boards rebuilt for flagged voters (longest, s)", f"{r['rebuilds']} ({r['rebuild_max_s']})"),
        ("errors", r["errors"] or "none"),
    ]  # fmt: skip
    return "| measure | value |\n|---|---:|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    sys.exit(main())
