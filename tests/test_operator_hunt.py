"""A hunt on the operator's path: ``registry.yaml`` edits and the Space's settings.

Each test is one defect an operator met: what the registry check or the Space's start
said (or did not say) about an ordinary mistake.
"""

import os
import re
import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT

from arena_core.cli import main
from arena_core.registry import RegistryError, load_registry
from arena_core.space.config import RANGES, ConfigError, Settings

#: Two English voices that pass every check (eSpeak NG ships in a wheel).
GOOD = textwrap.dedent("""
    arenas:
      - id: tts
        title: TTS
        modality: audio
        prompts:
          - {id: p1, text: Hello there., category: en}
          - {id: p2, text: Good night., category: en}
        models:
          - id: m1
            name: Voice one
            backend: {type: espeak, voice: en-us}
          - id: m2
            name: Voice two
            backend: {type: espeak, voice: en-us+f3}
    """)


def write(tmp_path, text, name="registry.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def run_check(capsys, path):
    code = main(["registry", "--check", "--registry", str(path)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_check_refuses_a_backend_block_the_space_refuses(tmp_path, capsys):
    """A typo in a backend's type (``espeek``) passed ``registry --check`` (exit 0, "0
    problem(s)", so CI went green) and then stopped the Space's start with
    BackendConfigError: the check only ran the loader, the Space also checks the backend
    blocks. The check promised that a file it passes is a file the Space loads."""
    path = write(
        tmp_path, GOOD.replace("{type: espeak, voice: en-us}", "{type: espeek, voice: en-us}")
    )
    code, out, err = run_check(capsys, path)
    assert code == 2, out
    assert str(path) in err and "model 'm1'" in err and "unknown backend type 'espeek'" in err
    # An option the type does not know, the same way.
    path = write(
        tmp_path, GOOD.replace("{type: espeak, voice: en-us}", "{type: espeak, vioce: en-us}")
    )
    code, _, err = run_check(capsys, path)
    assert code == 2 and "unknown option backend.vioce" in err
    # The file as it was still passes.
    code, _, _ = run_check(capsys, write(tmp_path, GOOD))
    assert code == 0


@pytest.mark.parametrize("repo", ["https://huggingface.co/datasets/my-org/arena-votes",
                                  "datasets/my-org/arena-votes", "my-org/arena-votes\n",
                                  "my-org/arena votes"])  # fmt: skip
def test_a_malformed_dataset_repo_stops_the_start_naming_the_variable(repo):
    """``ARENA_DATASET_REPO`` pasted as the repo's URL (or with a trailing newline) started
    the Space as if all were well: every connection to the Hub failed with HFValidationError,
    logged and retried forever, and the votes stayed on the Space's local disk, which a
    restart wipes. A value that can never name a repo is refused at start-up, like a
    malformed number."""
    with pytest.raises(ConfigError, match="ARENA_DATASET_REPO"):
        Settings.from_env({"ARENA_VOTER_SALT": "s", "ARENA_DATASET_REPO": repo})
    ok = Settings.from_env({"ARENA_VOTER_SALT": "s", "ARENA_DATASET_REPO": "my-org/arena-votes"})
    assert ok.dataset_repo == "my-org/arena-votes"


@pytest.mark.parametrize("name", sorted(RANGES))
def test_a_range_error_states_the_bound_exactly(name):
    """``ARENA_CACHE_MB=2000000`` said "must be a positive whole number at most
    1.04858e+06": a bound rounded to six digits (1,048,580, which is refused too) in
    exponent notation; ``ARENA_RATE_WINDOW`` said "at most 2.592e+06". The message now
    states the bounds as the README does, digit for digit."""
    bounds = RANGES[name]
    above = bounds.kind(bounds.high + abs(bounds.high) + 1)
    with pytest.raises(ConfigError) as refused:
        Settings.from_env({"ARENA_VOTER_SALT": "s", name: str(above)})
    message = str(refused.value)
    assert "e+" not in message
    shown = {m.replace(",", "") for m in re.findall(r"-?\d[\d,]*(?:\.\d+)?", message)}
    assert str(int(bounds.high)) in shown, message


def _start_app(tmp_path, **env) -> subprocess.CompletedProcess:
    env = {**os.environ, "ARENA_DATA_DIR": str(tmp_path / "data"), "ARENA_VOTER_SALT": "s",
           "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1", **env}  # fmt: skip
    return subprocess.run([sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def test_a_bad_registry_or_setting_stops_the_space_with_one_line_not_a_traceback(tmp_path):
    """A weight of 0 in ``registry.yaml`` stopped the Space with a 25-line Python traceback
    through the loader's internals (the error naming file, model and field came last, under
    ``File "arena_core/registry/loader.py", line 265``); a bad ``ARENA_TIMEOUT`` or an
    unknown backend type the same. The README promises one error naming file, arena, model
    and field; the start now logs that line and exits 2, writing nothing."""
    bad = write(tmp_path, GOOD.replace("name: Voice one", "name: Voice one\n        weight: 0"))
    for env, said in [
        ({"ARENA_REGISTRY": str(bad)}, f"{bad}, arena 'tts', model 'm1', field 'weight'"),
        ({"ARENA_REGISTRY": str(write(tmp_path, GOOD, "good.yaml")), "ARENA_TIMEOUT": "soon"},
         "ARENA_TIMEOUT='soon' is not a number"),
        ({"ARENA_REGISTRY": str(write(tmp_path, GOOD.replace("type: espeak, voice: en-us}",
                                                             "type: espeek, voice: en-us}"),
                                      "typo.yaml"))},
         "model 'm1': unknown backend type 'espeek'"),
    ]:  # fmt: skip
        started = _start_app(tmp_path, **env)
        assert started.returncode == 2, started.stderr[-2000:]
        assert "Traceback" not in started.stderr and said in started.stderr, started.stderr
        assert not (tmp_path / "data").exists()  # nothing written


def test_a_yaml_merge_key_is_read_as_yaml_reads_it(tmp_path, capsys):
    """Shared settings written once with YAML's merge key (``backend: {<<: *espeak, voice:
    en-us+f3}``, as PyYAML's safe loader and every YAML 1.1 reader take it) stopped the
    Space and the check with "could not determine a constructor for the tag
    'tag:yaml.org,2002:merge'": the loader's duplicate-key check built every key itself,
    ``<<`` included. A key given twice in one mapping is still refused."""
    merged = GOOD.replace(
        "backend: {type: espeak, voice: en-us}",
        "backend: &espeak {type: espeak, voice: en-us, rate: 150}",
    )
    merged = merged.replace("backend: {type: espeak, voice: en-us+f3}",
                            "backend: {<<: *espeak, voice: en-us+f3}")  # fmt: skip
    path = write(tmp_path, merged)
    m1, m2 = load_registry(path).arenas[0].models
    assert dict(m1.backend.options) == {"voice": "en-us", "rate": 150}
    assert m2.backend.type == "espeak" and dict(m2.backend.options) == {"voice": "en-us+f3",
                                                                        "rate": 150}  # fmt: skip
    assert run_check(capsys, path)[0] == 0
    twice = merged.replace("{<<: *espeak, voice: en-us+f3}", "{<<: *espeak, voice: a, voice: b}")
    with pytest.raises(RegistryError, match="duplicate key 'voice'"):
        load_registry(write(tmp_path, twice))


def test_two_models_of_an_arena_with_one_display_name_are_refused(tmp_path, capsys):
    """An entry copied to add a voice, its id and backend changed but not its ``name``,
    loaded and passed the check: the board, the Model view's picker and ``leaderboard``'s
    table (which show names only) then listed two "Voice one" rows that nobody could tell
    apart. The loader refuses a name two models of one arena share, naming both ids."""
    path = write(tmp_path, GOOD.replace("name: Voice two", "name: Voice  one"))
    with pytest.raises(
        RegistryError,
        match=r"arena 'tts', field 'name': models 'm1' and 'm2' have one display name",
    ):
        load_registry(path)
    code, _, err = run_check(capsys, path)
    assert code == 2 and "display name" in err
    # One name in two arenas is fine: each board is its own.
    other = GOOD.replace("arenas:\n", "").replace("id: tts", "id: tts-2")
    load_registry(write(tmp_path, GOOD + other))


def test_a_number_yaml_reads_as_text_says_why(tmp_path):
    """``weight: 5e-1`` (or a prior's ``value: 2e-2``) stopped the start with "field
    'weight': must be a number, got '5e-1'": PyYAML reads an exponent as a number only
    with a dot and a signed exponent (``5.0e-1``), so the operator was told that a number
    is not one. The message now says so, and how to write it."""
    path = write(tmp_path, GOOD.replace("name: Voice one", "name: Voice one\n        weight: 5e-1"))
    with pytest.raises(RegistryError, match=r"field 'weight'.*'5e-1'.*5\.0e-1") as refused:
        load_registry(path)
    assert "YAML" in str(refused.value)


def test_a_token_pasted_with_its_newline_and_a_judge_named_twice_are_read_as_meant():
    """A Space secret pasted with its trailing newline kept it: every Hub push and download
    failed authentication in the background while the votes stayed on a disk a restart
    wipes (huggingface_hub strips the variables it reads itself, not a token handed to it).
    And ``ARENA_JUDGES=a,b,a`` started judge ``a`` twice."""
    settings = Settings.from_env({"HF_TOKEN": "hf_abc123\n", "ARENA_JUDGES": "a, b,a",
                                  "ARENA_JUDGE_TOKEN": "secret"})  # fmt: skip
    assert settings.hf_token == "hf_abc123"
    assert settings.judges == ("a", "b")
