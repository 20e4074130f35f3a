"""The researchers' CLI, run as researchers run it: ``python -m arena_core leaderboard``."""

import csv
import io
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from arena_core.board_row import format_table
from arena_core.cli import main
from arena_core.leaderboard import COLUMNS, BoardParams, Entrant, board_from_votes
from arena_core.registry import load_registry
from arena_core.snapshots.source import board_part
from arena_core.votes.log import VoteLog
from arena_core.votes.read import read_votes

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"

REGISTRY = """
arenas:
  - id: ar
    title: Test arena
    modality: text
    prior_mapping: {benchmark: index, center: 50, points_per_unit: 4}
    prompts: [{id: p1, text: Hi}]
    models:
      - {id: x, name: Model X, params: 7B, params_m: 7000, backend: {type: fake}}
      - {id: y, name: Model Y, prior: {value: 75, source: "https://example.org", accessed: 2026-03-01}, backend: {type: fake}}
      - {id: z, name: Model Z, backend: {type: fake}}
"""


def run(*args, check=True):
    proc = subprocess.run(
        [sys.executable, "-m", "arena_core", *map(str, args)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def run_with_registry(log_dir, tmp_path):
    (tmp_path / "registry.yaml").write_text(REGISTRY)
    return run(
        "leaderboard",
        "--votes",
        log_dir,
        "--registry",
        tmp_path / "registry.yaml",
        "--format",
        "json",
    )


@pytest.fixture
def log_dir(tmp_path):
    store = VoteLog(tmp_path / "votes")
    for a, b, vote in [("x", "y", "a"), ("y", "z", "tie"), ("x", "z", "a"), ("z", "x", "both_bad"),
                       ("y", "x", "b"), ("x", "ghost", "a")]:  # fmt: skip
        store.append(arena="ar", model_a=a, model_b=b, vote=vote)
    with store.path.open("a") as f:
        f.write('{"broken json\n')
    return tmp_path / "votes"


def test_json_output_is_one_object_with_rows_and_skips(log_dir):
    proc = run("leaderboard", "--votes", log_dir, "--format", "json", "--bootstrap", "100")
    data = json.loads(proc.stdout)
    assert data["arena"] == "ar" and data["method"] == "bt"
    assert data["votes_used"] == 6
    assert data["skipped"] == {"invalid_json": 1}
    assert [c.name for c in COLUMNS] == list(data["rows"][0])
    assert "skipped" in proc.stderr  # the warning goes to stderr, not into the JSON


def test_registry_changes_names_priors_and_skips_unknown_models(log_dir, tmp_path):
    proc = run_with_registry(log_dir, tmp_path)
    data = json.loads(proc.stdout)
    assert data["votes_used"] == 5
    assert data["skipped"] == {"invalid_json": 1, "unknown_model": 1}
    rows = {r["model_id"]: r for r in data["rows"]}
    assert rows["x"]["model"] == "Model X" and rows["x"]["params_m"] == 7000
    assert rows["x"]["elo_per_m_params"] == pytest.approx(rows["x"]["rating"] / 7000, abs=1e-4)
    # y's published prior: 1000 + 4 x (75 - 50); x and z have votes only, too few to trust.
    assert (
        rows["y"]["prior_rating"] == 1100.0 and rows["y"]["prior_source"] == "https://example.org"
    )
    assert (
        rows["y"]["provenance"] in ("prior", "blended") and rows["x"]["provenance"] == "arena_thin"
    )
    assert rows["y"]["prior_shift"] == pytest.approx(rows["y"]["rating"] - 1100.0, abs=0.11)


def test_cli_reproduces_the_in_process_board_exactly(log_dir, tmp_path):
    proc = run_with_registry(log_dir, tmp_path)
    arena = load_registry(tmp_path / "registry.yaml").arena("ar")
    board = board_from_votes(
        read_votes(log_dir), "ar", entrants=Entrant.from_arena(arena), params=BoardParams()
    )
    expected = json.loads(json.dumps(board.to_json()))
    assert board_part(json.loads(proc.stdout)) == expected


def test_csv_and_table_formats(log_dir):
    rows = list(
        csv.DictReader(
            io.StringIO(run("leaderboard", "--votes", log_dir, "--format", "csv").stdout)
        )
    )
    assert len(rows) == 4 and set(rows[0]) == {c.name for c in COLUMNS}
    table = run("leaderboard", "--votes", log_dir, "--method", "elo").stdout
    assert "Seq. Elo" in table and "6 votes used, method elo" in table and "Provenance" in table


def test_fastchat_export_is_detected():
    data = json.loads(run("leaderboard", "--votes", DATA / "fastchat_clean_battle_clustering.json",
                          "--format", "json", "--bootstrap", "0").stdout)  # fmt: skip
    assert data["votes_used"] == 123 and data["skipped"] == {"same_model": 1}
    assert len(data["rows"]) == 14


def test_category_filter(tmp_path):
    store = VoteLog(tmp_path)
    store.append(arena="ar", model_a="x", model_b="y", vote="a", category="de")
    store.append(arena="ar", model_a="x", model_b="y", vote="b", category="fr")
    data = json.loads(
        run("leaderboard", "--votes", tmp_path, "--category", "fr", "--format", "json").stdout
    )
    assert data["votes_used"] == 1 and data["category"] == "fr"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--votes", "/no/such/place"], "no vote file"),
        (["--votes", "{log}", "--registry", "/no/registry.yaml"], "cannot read"),
        (["--votes", "{log}", "--prior-weight", "-1"], "prior weight"),
        # Not numbers a fit can use: refused before anything is written (inf once printed
        # half a JSON document, 1e-300 failed with "Singular matrix").
        (["--votes", "{log}", "--prior-weight", "inf", "--format", "json"], "prior weight"),
        (["--votes", "{log}", "--prior-weight", "nan"], "prior weight"),
        (["--votes", "{log}", "--prior-weight", "1e-300"], "between 0.001 and 1e+09"),
        (["--votes", "{log}", "--since", "last week"], "ISO-8601"),
        (["--votes", "{log}", "--half-life", "0"], "half_life"),
    ],
)
def test_errors_are_one_clear_line_and_exit_code_2(log_dir, tmp_path, args, message):
    (tmp_path / "registry.yaml").write_text(REGISTRY)
    args = [a.format(log=log_dir, registry=tmp_path / "registry.yaml") for a in args]
    proc = run("leaderboard", *args, check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_without_arena_the_table_lists_every_board_and_json_asks_for_one(tmp_path, capsys):
    # Issue 11: without --arena the CLI picked one arena and named it only in the footer.
    store = VoteLog(tmp_path)
    store.append(arena="one", model_a="x", model_b="y", vote="a")
    store.append(arena="two", model_a="x", model_b="y", vote="a")
    store.append(arena="two", model_a="y", model_b="x", vote="tie")
    assert main(["leaderboard", "--votes", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "== one ==" in out and "== two ==" in out
    assert "one: 1 votes used" in out and "two: 2 votes used" in out
    assert main(["leaderboard", "--votes", str(tmp_path), "--format", "json"]) == 2
    assert "several arenas (one, two); choose one with --arena" in capsys.readouterr().err
    assert (
        main(["leaderboard", "--votes", str(tmp_path), "--arena", "two", "--format", "json"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["votes_used"] == 2


def test_the_table_names_models_by_display_name_and_json_keeps_ids(log_dir, tmp_path, capsys):
    (tmp_path / "registry.yaml").write_text(REGISTRY)
    args = ["leaderboard", "--votes", str(log_dir), "--registry", str(tmp_path / "registry.yaml")]
    assert main(args) == 0
    table = capsys.readouterr().out
    assert all(name in table for name in ("Model X", "Model Y", "Model Z"))
    header = table.splitlines()[1]  # after the "== ar ==" title
    assert header.startswith("Rank") and " Model " in header and "Model id" not in header
    assert main([*args, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {r["model_id"] for r in rows} == {"x", "y", "z"}
    assert {r["model"] for r in rows} == {"Model X", "Model Y", "Model Z"}


def test_help_reads_as_plain_text():
    helped = run("--help").stdout
    assert "``" not in helped and "replay votes into leaderboards" in helped
    assert "the table lists every arena's board" in " ".join(
        run("leaderboard", "--help").stdout.split()
    )


def test_a_leaderboard_run_imports_no_other_command_and_help_lists_them_all(log_dir):
    # Issue 16: the analyses' modules import SciPy and pandas, most of a fresh run's start-up;
    # the registry's loader imports YAML, which a board without a registry does not read.
    # (Not pandas: this log's broken line is read by votes.lines, whose rows pyarrow
    # builds from Python objects; test_votes_arrow checks a clean log leaves pandas out.)
    probe = ("import sys; from arena_core.cli import main; "
             f"main(['leaderboard', '--votes', {str(log_dir)!r}, '--format', 'json']); "
             "print(sorted(m for m in sys.modules if m.startswith('arena_core.analysis') "
             "or m in ('scipy', 'yaml')), file=sys.stderr)")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, check=True)  # fmt: skip
    assert proc.stderr.strip().splitlines()[-1] == "[]"
    assert json.loads(proc.stdout)["votes_used"] == 6  # the ghost model counts without a registry
    listed = run("-v", "--help").stdout
    assert all(c in listed for c in ("leaderboard", "analyze", "model", "judge", "registry"))
    assert "invalid choice: 'analyse'" in run("-v", "analyse", check=False).stderr


def test_plain_mle_with_an_unbeaten_model_still_prints_a_board(tmp_path):
    # Issue 9: this used to exit 2 with no board at all.
    oneway = VoteLog(tmp_path / "oneway")
    oneway.append(arena="ar", model_a="x", model_b="y", vote="a")
    proc = run("leaderboard", "--votes", oneway.folder, "--prior-weight", "0", "--format", "json")
    data = json.loads(proc.stdout)
    rows = {r["model_id"]: r for r in data["rows"]}
    assert rows["x"]["rating"] == 1000.0 and rows["y"]["rating"] is None
    assert rows["y"]["ci_high"] is not None and "never beat" in rows["y"]["note"]
    assert data["fit"]["bootstrap_dropped"] == 0 and data["warnings"]
    assert "no finite maximum-likelihood rating" in proc.stderr
    table = run("leaderboard", "--votes", oneway.folder, "--prior-weight", "0").stdout
    assert "note: y: never beat" in table and "warning:" in table


def test_windows_decay_prior_and_availability_options(log_dir, tmp_path, capsys):
    # In-process (arena_core.cli.main) to keep the suite fast; the subprocess tests above
    # cover the command as researchers run it.
    now = datetime.now(UTC).isoformat()

    def board(*extra):  # one reader's clock: the documents are compared whole
        argv = ["leaderboard", "--votes", str(log_dir), "--read-at", now, "--format", "json"]
        assert main([*argv, *extra]) == 0
        return json.loads(capsys.readouterr().out)

    assert board("--since", "2000-01-01")["votes_used"] == 6
    assert board("--until", "2000-01-01")["votes_used"] == 0
    fitted = board("--prior-weight", "fitted")
    assert fitted == board() and fitted["fit"]["prior"] == "fitted"
    assert board("--prior-weight", "4")["fit"]["prior"] == "4"
    assert board("--half-life", "30")["fit"]["half_life_days"] == 30
    (tmp_path / "registry.yaml").write_text(REGISTRY)
    gone = board("--registry", str(tmp_path / "registry.yaml"), "--unavailable", "z", "w")
    assert {r["model_id"]: r["available"] for r in gone["rows"]}["z"] is False
    with pytest.raises(SystemExit):
        main(["leaderboard", "--votes", str(log_dir), "--prior-weight", "lots"])
    assert "expected 'fitted' or a number" in capsys.readouterr().err


def test_the_table_lists_models_not_yet_rated_on_one_line(log_dir):
    entrants = [Entrant("x", "X"), Entrant("y", "Y"), Entrant("z", "Z"), Entrant("w", "W"),
                Entrant("v", "V")]  # fmt: skip
    board = board_from_votes(read_votes(log_dir), "ar", entrants=entrants)
    text = format_table(board)
    assert "not yet rated: no published prior and no votes yet: V, W" in text
    assert "note: W" not in text  # the per-model notes are for unbounded ratings


@pytest.mark.parametrize("engine", ["python", "duckdb"])
def test_read_at_judges_rows_from_the_future_by_the_clock_a_board_names(tmp_path, capsys, engine):
    """The same files gave different boards depending on when they were replayed: rows a
    fast clock dated ahead were skipped by a replay run then and counted by one run later,
    and no option replayed "as of" a board's time. A board now names the reader's clock
    (``revision.read_at``) and ``--read-at`` replays with it, on either engine."""
    from arena_core.votes.parquet import write_parquet

    moments = iter(datetime(2026, 11, 1, 12, 0, tzinfo=UTC).replace(minute=m) for m in range(60))
    log = VoteLog(tmp_path / "log", clock=lambda: next(moments))
    for k in range(40):  # the last 10 are dated 30 to 39 minutes after the first 30
        log.append(arena="ar", model_a="m1", model_b="m2", vote="ab"[k % 3 == 0])
    write_parquet(read_votes(tmp_path / "log", now_us=10**18).table, tmp_path / "v" / "v.parquet")

    def board(read_at):
        argv = ["leaderboard", "--votes", str(tmp_path / "v"), "--engine", engine,
                "--format", "json", "--read-at", read_at]  # fmt: skip
        assert main(argv) == 0
        return json.loads(capsys.readouterr().out)

    then = board("2026-11-01T12:19:00Z")  # rows after 12:29 are from the future
    assert then["votes_used"] == 30 and then["skipped"] == {"future_ts": 10}
    assert then["revision"]["read_at"] == "2026-11-01T12:19:00.000000Z"
    later = board("2026-11-02")
    assert later["votes_used"] == 40 and later["skipped"] == {}
    assert board(then["revision"]["read_at"]) == then  # replayed with its clock, digit for digit
    assert main(["counts", "--votes", str(tmp_path / "v"), "--out", str(tmp_path / "c.parquet"),
                 "--engine", engine, "--read-at", "2026-11-01T12:19:00Z"]) == 0  # fmt: skip
    capsys.readouterr()
    from arena_core.scale.contract import read_counts

    counts = read_counts(tmp_path / "c.parquet")
    assert sum(counts.column("votes").to_pylist()) == 30


@pytest.mark.parametrize("names", [
    ("X\nnew row", "Y\x1b[31mred", "Z\tW", "V\r", "W\x00"),
    ("m1 ", " m1", "m1", "m\u200b1", "Kokoro 82M（jf）"),
])  # fmt: skip
def test_the_table_prints_names_a_terminal_would_garble_quoted(log_dir, names):
    """A model name with a newline broke the table's rows, an escape sequence recoloured the
    terminal, and "m1 " and " m1" looked the same: such names are printed quoted, with
    JSON's escapes; every other name as it is."""
    entrants = [Entrant(i, n) for i, n in zip("xyzwv", names, strict=True)]
    board = board_from_votes(read_votes(log_dir), "ar", entrants=entrants)
    text = format_table(board)
    assert all(ch.isprintable() or ch == "\n" for ch in text), repr(text)
    table = text.split("\n\n")[0].splitlines()
    assert len(table) == 2 + len(board.rows)  # the arena, the header, one line per model
    for name in names:
        plain = name.strip() == name and name.isprintable()
        assert (name if plain else json.dumps(name)) in text
