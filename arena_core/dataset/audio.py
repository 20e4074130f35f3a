"""The dataset's second config: the audio of the outputs the votes judged.

A preference predictor learns from what was heard, so the dataset publishes, next to
the votes, the audio of each (model, prompt) output that fought in a battle, where
the Space's output cache still holds it: one Parquet file per output,
``audio/<arena>/<model>/<hash>.parquet`` (:meth:`OutputKey.path`), with the columns of
:data:`AUDIO_SCHEMA` and the ``datasets`` Audio feature declared in the file's
metadata (``audio`` is ``{bytes, path}``: a WAV file, 16-bit PCM at the engine's
own rate). A file's name is a hash of its key (arena, model, version, prompt id, text, category),
so it is written once and never rewritten: publishing again only adds the outputs
the repo lacks.

What is published, and what is not:

* the engine's output as cached, before blinding; the listener heard it resampled to
  the arena's delivery rate, trimmed, set to one loudness and padded
  (``arena_core/space/blinding.py``): the votes' ``clip_*`` and style fields describe that;
* only outputs of the model version the votes name: the cache is keyed by the
  backend's version, so the audio of an engine since upgraded is not the cache's any
  more and is left out rather than mislabelled;
* only set prompts (``prompt_id`` given). A typed prompt is a visitor's own text: the
  votes publish it, but its audio is left out, so a visitor's words are not spread
  further as speech files (and a typed prompt's outputs, made once, teach a predictor
  little). Set prompts are the arena's curated, licensed texts.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from arena_core.backends.cache import OutputCache
from arena_core.backends.output import Output
from arena_core.votes.clean import VoteTable
from arena_core.votes.parquet import COMPRESSION

log = logging.getLogger(__name__)

#: Repo folder of the audio config, and the pattern the card's config loads.
AUDIO_DIR = "audio"
AUDIO_GLOB = f"{AUDIO_DIR}/**/*.parquet"
#: Name of the second config in the card.
AUDIO_CONFIG = "audio"
#: The ``datasets`` Audio feature's storage: the encoded file, and a name for it.
AUDIO_TYPE = pa.struct([pa.field("bytes", pa.binary()), pa.field("path", pa.string())])
#: Columns of an audio file, and what each holds (the card documents them from here).
AUDIO_FIELDS: tuple[tuple[str, pa.DataType, str], ...] = (
    ("arena", pa.string(), "Arena id, as in the votes."),
    ("model", pa.string(), "Model id, as model_a or model_b in the votes."),
    ("model_version", pa.string(), "The model's version, as model_a_version/model_b_version in the votes (null when unknown)."),
    ("prompt_id", pa.string(), "Id of the prompt in the arena's set, as in the votes."),
    ("prompt", pa.string(), "The prompt text."),
    ("category", pa.string(), "Prompt category (a language code or a topic), as in the votes."),
    ("audio", AUDIO_TYPE, "The output as the engine made it: a WAV file (16-bit PCM, mono), before blinding."),
    ("sample_rate", pa.int64(), "Sample rate of the WAV file (Hz), the engine's own."),
    ("duration_s", pa.float64(), "Length of the WAV file in seconds."),
)  # fmt: skip
AUDIO_SCHEMA = pa.schema([pa.field(name, kind) for name, kind, _ in AUDIO_FIELDS])
#: The features ``datasets`` reads from a Parquet file's metadata (key ``huggingface``).
HF_FEATURES = {
    name: {"_type": "Audio"} if name == "audio" else {"dtype": _dtype, "_type": "Value"}
    for name, _dtype in (
        ("arena", "string"), ("model", "string"), ("model_version", "string"),
        ("prompt_id", "string"), ("prompt", "string"), ("category", "string"),
        ("audio", None), ("sample_rate", "int64"), ("duration_s", "float64"),
    )
}  # fmt: skip
#: Vote columns that name an output (each side's).
VOTE_COLUMNS = ("arena", "model_a", "model_b", "model_a_version", "model_b_version",
                "prompt_id", "prompt", "category")  # fmt: skip


@dataclass(frozen=True)
class OutputKey:
    """One output of a battle: which model (at which version) said which set prompt."""

    arena: str
    model: str
    model_version: str | None
    prompt_id: str
    prompt: str
    category: str | None

    def path(self) -> str:
        """Its file in the repo: readable folders, a hash of the whole key as the name. The
        text and category are in it: a prompt edited under its id is a new output, and a
        name of the id alone gave the new text's votes the old text's audio."""
        return self._named([self.arena, self.model, self.model_version, self.prompt_id,
                            self.prompt, self.category])  # fmt: skip

    def legacy_path(self) -> str:
        """The name the code before gave it (no text, no category): such files stay in a
        repo, and :func:`write_audio` does not add their outputs again."""
        return self._named([self.arena, self.model, self.model_version, self.prompt_id])

    def _named(self, parts: list) -> str:
        digest = hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:20]
        return f"{AUDIO_DIR}/{_slug(self.arena)}/{_slug(self.model)}/{digest}.parquet"


#: A model's cached output, or None: (arena, model, prompt, category, version) -> Output.
Lookup = Callable[[str, str, str, str | None, str | None], Output | None]


def battle_outputs(votes: VoteTable) -> list[OutputKey]:
    """Every distinct (model, version, set prompt) output of the votes, both sides, in
    first-seen order. Typed prompts are left out (see the module docstring)."""
    table = votes.table
    if "prompt_id" not in table.column_names or not len(votes):
        return []
    rows = table.filter(pc.is_valid(table.column("prompt_id"))).select(list(VOTE_COLUMNS))
    seen: dict[OutputKey, None] = {}
    for row in rows.to_pylist():
        for side in "ab":
            seen.setdefault(OutputKey(row["arena"], row[f"model_{side}"],
                                      row[f"model_{side}_version"], row["prompt_id"],
                                      row["prompt"], row["category"]))  # fmt: skip
    return list(seen)


def audio_table(items: Iterable[tuple[OutputKey, Output]]) -> pa.Table:
    """The audio rows of these outputs, with the features ``datasets`` decodes."""
    rows = []
    for key, output in items:
        name = key.path().rsplit("/", 1)[1].replace(".parquet", ".wav")
        rows.append({"arena": key.arena, "model": key.model, "model_version": key.model_version,
                     "prompt_id": key.prompt_id, "prompt": key.prompt, "category": key.category,
                     "audio": {"bytes": output.to_bytes(), "path": name},
                     "sample_rate": output.sample_rate,
                     "duration_s": round(float(output.duration), 3)})  # fmt: skip
    table = pa.Table.from_pylist(rows, schema=AUDIO_SCHEMA)
    meta = {b"huggingface": json.dumps({"info": {"features": HF_FEATURES}}).encode()}
    return table.replace_schema_metadata(meta)


def write_audio(folder: Path, keys: Iterable[OutputKey], lookup: Lookup, *,
                present: frozenset[str] = frozenset()) -> dict[str, Path]:  # fmt: skip
    """Write the file of each output the cache holds and ``present`` (repo paths) lacks;
    returns repo path -> local file. Outputs the cache no longer holds are skipped.

    ``keys`` are every output of the log (:func:`battle_outputs`). A file under an output's
    :meth:`~OutputKey.legacy_path` holds it when no other output of the log shares that
    name (the prompt kept its text): it is not added again. When several do, the old file
    holds one of their texts, unknown which, so each is added under its own name."""
    keys = list(keys)
    sharing = Counter(key.legacy_path() for key in keys)
    written = {}
    for key in keys:
        rel = key.path()
        legacy = key.legacy_path()
        if rel in present or (legacy in present and sharing[legacy] == 1):
            continue
        output = lookup(key.arena, key.model, key.prompt, key.category, key.model_version)
        if output is None or output.modality != "audio":
            continue
        path = Path(folder) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        _write(audio_table([(key, output)]), path)
        written[rel] = path
    return written


def cache_lookup(pools, cache: OutputCache) -> Lookup:
    """A :data:`Lookup` over the Space's model pools and their output cache (an instance
    on the same folder: entries are files, safe to read from any instance): the cached
    output of the model and prompt, only while the model's version is the one asked for."""

    def lookup(arena, model, prompt, category, version):
        pool = pools.get(arena)
        if pool is None or model not in {m.id for m in pool.arena.models}:
            return None
        if pool.model_version(model) != version:  # the cache holds the current engine's only
            return None
        key = pool.cache_key(model, prompt, category)
        return cache.get(key, "audio") if key is not None else None

    return lookup


def _write(table: pa.Table, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, tmp, compression=COMPRESSION)
    tmp.replace(path)


def _slug(text: str) -> str:
    """A path segment from an id: letters, digits, dot, dash and underscore kept."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "_"


#: Files per commit when publishing audio (the Hub prefers commits of hundreds of files
#: at most; the first publication of a busy arena may hold thousands).
FILES_PER_COMMIT = 100


def publish_audio(api, repo_id: str, votes: VoteTable, lookup: Lookup, folder: Path) -> int:
    """Add to the dataset repo the audio files of the votes' outputs that it lacks; returns
    how many were added. ``api`` is the Hub sync's ``HfApi`` (injected: tests pass a stand-in)."""
    # Imported here: the Hub client is slow to import, and readers of this module
    # (the card, the tests of the files) do not need it.
    from huggingface_hub import CommitOperationAdd
    from huggingface_hub.errors import EntryNotFoundError, RemoteEntryNotFoundError
    from huggingface_hub.hf_api import RepoFile

    try:
        tree = api.list_repo_tree(repo_id, path_in_repo=AUDIO_DIR, recursive=True,
                                  repo_type="dataset")  # fmt: skip
        present = frozenset(e.path for e in tree if isinstance(e, RepoFile))
    except (EntryNotFoundError, RemoteEntryNotFoundError):  # no audio published yet
        present = frozenset()
    files = sorted(write_audio(folder, battle_outputs(votes), lookup, present=present).items())
    for start in range(0, len(files), FILES_PER_COMMIT):
        chunk = files[start : start + FILES_PER_COMMIT]
        api.create_commit(repo_id=repo_id, repo_type="dataset",
                          operations=[CommitOperationAdd(path_in_repo=rel, path_or_fileobj=path)
                                      for rel, path in chunk],
                          commit_message=f"Add the audio of {len(chunk)} battle outputs")  # fmt: skip
    if files:
        log.info("published the audio of %d battle outputs to %s", len(files), repo_id)
    return len(files)


#: Seconds between two publications of new outputs' audio (and before the first, so the
#: start-up replay and the Hub download come first).
AUDIO_EVERY_SECONDS = 6 * 3600.0
AUDIO_FIRST_SECONDS = 300.0


class AudioPublisher:
    """Publishes new outputs' audio every :data:`AUDIO_EVERY_SECONDS`, through the Hub sync.

    ``sync`` is the app's :class:`~arena_core.dataset.hub.HubSync` (its API and repo;
    nothing is tried before it has connected); ``votes`` returns the log to look for
    outputs in. A failure is logged and retried at the next tick: the audio can wait.
    """

    def __init__(self, sync, votes: Callable[[], VoteTable], lookup: Lookup, folder: Path, *,
                 every: float = AUDIO_EVERY_SECONDS, first: float = AUDIO_FIRST_SECONDS):  # fmt: skip
        self.sync, self.votes, self.lookup, self.folder = sync, votes, lookup, Path(folder)
        self.every, self.first = every, first
        self._stopped = threading.Event()

    def run_once(self) -> int:
        """Publish what the repo lacks now; 0 while the Hub has not answered."""
        if self.sync.uploader is None:
            return 0
        return publish_audio(self.sync.api, self.sync.repo_id, self.votes(), self.lookup,
                             self.folder)  # fmt: skip

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self._loop, name="audio-publish", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self._stopped.set()

    def _loop(self) -> None:
        wait = self.first
        while not self._stopped.wait(wait):
            try:
                self.run_once()
            except Exception:  # the Hub or a file failed: try again at the next tick
                log.exception("could not publish the battles' audio")
            wait = self.every
