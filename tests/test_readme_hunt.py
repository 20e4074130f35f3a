"""The README as a user follows it: what it cites and states about the code, checked.

Each test reads README.md and compares one kind of statement with the code: the files and
tests it cites exist, the options it gives a command are that command's and the main
commands' options are all named, the Configuration table's defaults and ranges are the
settings' own. Measured figures (timings, rates) are not checked here.
"""

from __future__ import annotations

import argparse
import importlib
import re
from pathlib import Path

import pytest

from arena_core.cli import _parser
from arena_core.simulation import SCENARIOS
from arena_core.space.config import RANGES, ConfigError, Settings

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
FENCED = re.compile(r"^```[a-z]*\n(.*?)^```", re.S | re.M)


def _code_spans(text: str) -> list[str]:
    """Fenced blocks, then inline code spans (which may wrap a line) of the rest."""
    blocks = FENCED.findall(text)
    rest = FENCED.sub("", text)
    return blocks + re.findall(r"`([^`]+)`", rest)


SPANS = _code_spans(README)

# ---------------------------------------------------------------------------------------
# Files and tests the README cites

#: Folders of the repository a cited path may start with.
REPO_DIRS = ("arena_core/", "tests/", "bench/", "docs/", "scripts/", "prompts/", ".ci/")
#: Endings of a bare file name that names a file of the repository (a bare ``x.json`` or
#: ``x.parquet`` is an output the README's commands write, not a file of the repository).
SOURCE_ENDINGS = (".py", ".yaml", ".toml", ".txt", ".md", ".sh", ".tsv", ".css", ".js")
#: Folders the tests and tools create (git-ignored), cited as where to look.
MADE_BY_RUNS = ("tests/output/", "mutants/")
#: How an example names a file of the reader's own (``my_arenas.yaml``), not the repo's.
USERS_OWN = ("my_", "my-", "your_", "your-", "example")


def _cited_paths() -> set[str]:
    cited = set()
    for span in SPANS:
        for word in span.split():
            word = word.removesuffix("'s").strip("(),;:.'\"")
            if not word or "<" in word or "…" in word or "..." in word or "://" in word:
                continue
            if word.startswith(MADE_BY_RUNS) or word.startswith(USERS_OWN):
                continue
            if word.startswith(REPO_DIRS) or (
                re.fullmatch(r"[\w.+-]+(/[\w.+-]+)*\.\w+", word) and word.endswith(SOURCE_ENDINGS)
            ):
                cited.add(word.rstrip("/") if word.endswith("/") else word)
    return cited


def _exists(path: str) -> bool:
    """A path from the repository's root, else from the package's (``votes/read.py``), else a
    bare name found in the package, the tests or the benchmarks."""
    if "*" in path:
        return any(ROOT.glob(path))
    if (ROOT / path).exists() or (ROOT / "arena_core" / path).exists():
        return True
    if "/" not in path:
        return any(
            next(base.rglob(path), None) is not None
            for base in (ROOT / "arena_core", ROOT / "tests", ROOT / "bench")
        )
    return False


def test_the_readme_cites_files_and_folders_of_the_repository():
    cited = _cited_paths()
    assert len(cited) > 100  # the extraction itself works
    missing = sorted(p for p in cited if not _exists(p))
    assert not missing, f"README cites paths that do not exist: {missing}"


def test_the_tests_the_readme_names_by_function_exist():
    names = {w for span in SPANS for w in re.findall(r"^(test_\w+)$", span.strip())}
    assert names  # e.g. test_a_line_arrow_reads_as_several_rows_never_shifts_the_others
    defined = {
        m
        for path in (ROOT / "tests").glob("test_*.py")
        for m in re.findall(r"^(?:async )?def (test_\w+)", path.read_text(), re.M)
    }
    assert not sorted(names - defined)


def test_the_extraction_sees_a_missing_path():
    """The check above would pass on an extraction that finds nothing it can miss."""
    fake = "`arena_core/votes/no_such_module.py` and `tests/test_no_such_file.py`"
    spans = _code_spans(fake)
    assert spans == ["arena_core/votes/no_such_module.py", "tests/test_no_such_file.py"]
    assert not any(_exists(p) for p in spans)


# ---------------------------------------------------------------------------------------
# The command line's options

PARSER = _parser()
COMMANDS = next(a for a in PARSER._actions if isinstance(a, argparse._SubParsersAction)).choices


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {o for a in parser._actions for o in a.option_strings if o.startswith("--")}


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def _simulate_options() -> set[str]:
    options = _options(COMMANDS["simulate"])
    for module in SCENARIOS.values():
        scenario = argparse.ArgumentParser(add_help=False)
        importlib.import_module(module).add_arguments(scenario)
        options |= _options(scenario)
    return options


def _options_of(command: str, words: list[str]) -> set[str]:
    if command == "simulate":
        return _simulate_options()
    parser = COMMANDS[command]
    if command == "analyze":
        parser = _subcommands(parser)[words[0]]
    return _options(parser)


INVOCATION = re.compile(r"python -m\s+arena_core\s+(\w+)((?:[ \t]+(?!python\b)[^\s#|;&`]+)*)")


def _invocations() -> list[tuple[str, str]]:
    """Each command with its words: in a fenced block a command ends with its line (unless
    the line ends in a backslash), so the next line's command is not read as its options;
    an inline span may wrap a line, so there a newline is a space."""
    blocks = FENCED.findall(README)
    inline = re.findall(r"`([^`]+)`", FENCED.sub("", README))
    texts = [b.replace("\\\n", " ") for b in blocks] + [t.replace("\n", " ") for t in inline]
    return [(m.group(1), m.group(2)) for text in texts for m in INVOCATION.finditer(text)]


def test_every_command_the_readme_runs_takes_the_options_it_is_given():
    invocations = _invocations()
    assert len(invocations) > 30
    wrong = []
    for command, rest in invocations:
        assert command in COMMANDS, f"README runs an unknown command: {command}"
        known = _options_of(command, rest.split())
        wrong += [
            (command, option)
            for option in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", rest)
            if option not in known
        ]
    assert not wrong


@pytest.mark.parametrize(
    "command",
    ["leaderboard", "counts", "manifest", "compact", "export", "model", "registry", "judge",
     "judges", "analyze complementarity", "simulate"],
)  # fmt: skip
def test_every_option_of_a_main_command_is_in_the_readme(command):
    words = command.split()
    if words[0] == "simulate":  # the options every scenario shares; each lists its own
        options = _options(COMMANDS["simulate"])
    else:
        options = _options_of(words[0], words[1:])
    missing = sorted(
        o
        for o in options - {"--help"}
        if not re.search(r"(?<![\w-])" + re.escape(o) + r"(?![\w-])", README)
    )
    assert not missing, f"{command}: options the README never names: {missing}"


# ---------------------------------------------------------------------------------------
# The Configuration table

SECTION = README.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
TABLE = re.findall(r"^\| (`[A-Z_]+`(?:, `[A-Z_]+`)*) \| ([^|]*) \| .* \|$", SECTION, re.M)
#: Variables the table lists whose default is not the app's to set.
NOT_SETTINGS = {"GRADIO_SERVER_NAME", "GRADIO_SERVER_PORT", "HF_HUB_OFFLINE", "SPACE_ID"}
FIELD = {"GRADIO_ANALYTICS_ENABLED": "analytics", "HF_TOKEN": "hf_token"}


def _table_defaults() -> dict[str, str]:
    defaults = {}
    for names, default in TABLE:
        names = re.findall(r"`([A-Z_]+)`", names)
        values = [v.strip() for v in re.split(r"`, `", default.strip())]
        if len(names) > 1:  # `30`, `600`
            assert len(values) == len(names), names
            values = [v.strip("`") for v in values]
        else:
            values = [default.strip()]
        defaults.update(zip(names, values, strict=True))
    return defaults


def _field(name: str) -> str:
    return FIELD.get(name, name.removeprefix("ARENA_").lower())


def test_the_configuration_table_lists_every_variable_the_settings_read():
    source = (ROOT / "arena_core/space/config.py").read_text()
    read = set(re.findall(r'_(?:text|number|switch)\(\s*env, "([A-Z_]+)"', source))
    assert len(read) > 25
    listed = set(_table_defaults())
    assert read <= listed, sorted(read - listed)
    assert listed - read <= NOT_SETTINGS, sorted(listed - read - NOT_SETTINGS)


def test_the_configuration_table_gives_the_settings_defaults():
    settings = Settings.from_env({"ARENA_VOTER_SALT": "s"})
    checked = 0
    for name, text in _table_defaults().items():
        if name in NOT_SETTINGS or name == "ARENA_VOTER_SALT":
            continue
        value = getattr(settings, _field(name))
        text = text.strip("`")
        if name == "ARENA_TRUSTED_PROXIES":  # "`1` on a Space, else `0`"
            assert text.startswith("1` on a Space, else `0")
            space = Settings.from_env({"ARENA_VOTER_SALT": "s", "SPACE_ID": "o/s"})
            assert (space.trusted_proxies, value) == (1, 0)
        elif text == "off":
            assert value is False, name
        elif text == "unset":
            assert not value, name
        elif isinstance(value, bool):
            assert value is {"1": True, "0": False}[text], name
        elif isinstance(value, (int, float)):
            assert float(text) == value, name
        else:
            assert str(value) == text, name
        checked += 1
    assert checked > 20


#: Units of the periods the README's ranges give in words.
UNIT = {"_MINUTES": 60.0, "_HOURS": 3600.0}
WORDS = {"a week": 7 * 86_400.0, "30 days": 30 * 86_400.0, "3600 s": 3600.0}


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _ranges() -> dict[str, tuple[float, float, bool]]:
    """``name: (low, high, above_low)`` from the sentence after the table."""
    sentence = SECTION.split("a value outside it", 1)[1].split("Whole-number settings", 1)[0]
    ranges = {}
    for part in sentence.split(";"):
        names = re.findall(r"`(ARENA_[A-Z_]+)`", part)
        tail = part.rsplit("`", 1)[-1].strip(" .")
        above = re.fullmatch(r"above 0, at most (.+)", tail)
        if above:
            for name in names:
                unit = next((u for end, u in UNIT.items() if name.endswith(end)), 1.0)
                ranges[name] = (0.0, WORDS[above.group(1)] / unit, True)
            continue
        span = re.fullmatch(r"(-?[\d,]+)(?:-| to )(-?[\d,]+)(?: [A-Za-z]+)?", tail)
        assert span, f"cannot read the range {tail!r}"
        for name in names:
            ranges[name] = (_number(span.group(1)), _number(span.group(2)), False)
    return ranges


def test_the_ranges_the_readme_gives_are_the_settings_ranges():
    ranges = _ranges()
    assert set(ranges) == set(RANGES)
    for name, (low, high, above_low) in ranges.items():
        bounds = RANGES[name]
        assert (low, high, above_low) == (bounds.low, bounds.high, bounds.above_low), name


@pytest.mark.parametrize("raw", ["١٢", "1_0", "²", "+ 5", "0x10", "1e2", "5.0"])
def test_a_whole_number_setting_takes_ascii_digits_only(raw):
    """The README: "Whole-number settings take ASCII digits only". ``int()`` alone reads
    Arabic-Indic digits and underscores as a number."""
    with pytest.raises(ConfigError, match="ARENA_RATE_LIMIT"):
        Settings.from_env({"ARENA_VOTER_SALT": "s", "ARENA_RATE_LIMIT": raw})
    assert (
        Settings.from_env({"ARENA_VOTER_SALT": "s", "ARENA_RATE_LIMIT": " +12 "}).rate_limit == 12
    )
