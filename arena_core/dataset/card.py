"""The dataset card (``README.md`` of the Hub dataset repo) researchers read first.

Generated from :data:`~arena_core.votes.schema.FIELDS`, so the documented
schema, the declared ``dataset_info`` features (which let ``load_dataset`` merge
files where a column is all null) and the code can never disagree.
"""

from __future__ import annotations

import pyarrow as pa
import yaml

from arena_core.dataset.audio import AUDIO_CONFIG, AUDIO_DIR, AUDIO_FIELDS, AUDIO_GLOB
from arena_core.votes.schema import FIELDS, SCHEMA_VERSION

#: Where the vote files live in the repo, and the pattern the card's config loads.
DATA_GLOB = "data/**/*.parquet"
#: Folder of the registry snapshot that makes the board reproducible from the download.
REGISTRY_DIR = "registry"


def _feature(kind: pa.DataType) -> dict | str:
    if pa.types.is_list(kind):
        return {"list": "string"}
    if pa.types.is_struct(kind):  # the audio config's {bytes, path}
        return "audio"
    if pa.types.is_floating(kind):
        return "float64"
    if pa.types.is_boolean(kind):
        return "bool"
    return "int64" if pa.types.is_integer(kind) else "string"


def _type_name(kind: pa.DataType) -> str:
    feature = _feature(kind)
    return feature if isinstance(feature, str) else "list of string"


def front_matter(license_id: str) -> dict:
    """The card's YAML header: licence, the two configs (the votes, the default, and the
    battles' audio), and every column's type in each."""
    votes = [{"name": f.name, "dtype": _feature(f.type)} for f in FIELDS]
    audio = [{"name": name, "dtype": _feature(kind)} for name, kind, _ in AUDIO_FIELDS]
    return {
        "license": license_id,
        "pretty_name": "Open Model Arena votes",
        "tags": ["arena", "pairwise-comparison", "human-preference", "text-to-speech", "audio"],
        "configs": [
            {"config_name": "default", "default": True, "data_files": _train(DATA_GLOB)},
            {"config_name": AUDIO_CONFIG, "data_files": _train(AUDIO_GLOB)},
        ],
        # Features only: declared split sizes would have to match the data exactly.
        "dataset_info": [
            {"config_name": "default", "features": votes},
            {"config_name": AUDIO_CONFIG, "features": audio},
        ],
    }


def _train(pattern: str) -> list[dict]:
    return [{"split": "train", "path": pattern}]


def dataset_card(repo_id: str, *, license_id: str = "cc-by-4.0", space_id: str = "",
                 arenas: tuple[str, ...] = ()) -> str:  # fmt: skip
    """The whole card as Markdown with YAML front matter."""
    header = yaml.safe_dump(front_matter(license_id), sort_keys=False, allow_unicode=True)
    rows = "\n".join(
        f"| `{f.name}` | {_type_name(f.type)} | {'yes' if f.required else 'no'} | {f.doc} |"
        for f in FIELDS
    )
    audio_rows = "\n".join(f"| `{n}` | {_type_name(k)} | {doc} |" for n, k, doc in AUDIO_FIELDS)
    space = (
        f"[{space_id}](https://huggingface.co/spaces/{space_id})" if space_id else "the arena Space"
    )
    arena = arenas[0] if arenas else "ARENA_ID"
    return f"""---
{header}---

# Open Model Arena votes

Every vote cast in {space}: a visitor heard (or read, or saw) two anonymous outputs
for the same prompt and picked the better one, a tie, or "both are bad". One row per vote.
Arenas: {", ".join(f"`{a}`" for a in arenas) or "see the registry snapshot"}.

## Files

- `data/votes-<process>-<n>.parquet`: votes as each Space process pushed them, a new
  file per push. A push the Hub took but whose answer was lost is sent again under the
  same name with the same votes and those cast since, so such a file can be replaced by
  one holding more rows, never fewer; its `.damaged.jsonl` likewise.
- `data/votes-<process>-<n>.damaged.jsonl`, rarely: the lines of that push that are not
  valid votes (say, half a line a failed write left), as they were, so that a replay
  skips and counts them as the Space did. The `default` config reads Parquet only.
- `data/compacted/<YYYY-MM>/part-*.parquet`: the same votes rolled up by month (of `ts`
  in UTC).
- `data/adopted-<digest>.parquet`: votes of an earlier run that a restarted Space found on
  its disk and the repo lacked (a run whose last push failed), pushed under a name made
  from their ids.
- `data/compacted/MANIFEST.json`: what compaction proved of each monthly file (its digest
  and rows), so the arena's DuckDB engine need not prove it again. Not votes.
- `{AUDIO_DIR}/<arena>/<model>/<hash>.parquet`: the `{AUDIO_CONFIG}` config, one file per
  output that fought in a battle (see "Audio" below).
- `{REGISTRY_DIR}/registry.yaml` (and its prompt files): the models, names and priors
  the Space rated with.
- `leaderboards/<arena>/<YYYY-MM-DD>.json`: daily snapshots of the arena's boards (UTC
  date), each with the revision it was computed from (see "Reproduce the leaderboard").

A vote can appear in more than one file: a push retried after its first copy was
compacted brings its votes back until the next compaction, and a file holding another
row under a `vote_id` a monthly file holds (a damaged or forged copy) is left in place.
`vote_id` is unique per vote: the arena's readers keep one row of each, the earliest by
`ts`, while `load_dataset` keeps every row, so drop repeated `vote_id`s before counting.

## Schema (schema_version {SCHEMA_VERSION})

| field | type | required | meaning |
| --- | --- | --- | --- |
{rows}

`ts` is ISO-8601 UTC. Rows with a non-empty `flags` (for example `rate_limited`) are
kept for transparency but left out of the ratings. Rows of versions 1 to 3 read with
the newer fields null, but for `counted` and `count_reason`: compaction stamps every
row it rolls into a monthly file, of any version, with the replay's verdict.

### Who decided each column, and when

- **The server, from its own records** (never from the client): the models, prompt,
  `prompt_origin` (from its battle record), `session_order`, `clip_a_s`/`clip_b_s` and the
  style fields (measured on the files it delivered), `flags`.
- **The visitor's client, hashed by the server**: `session_id`, an HMAC under the voter
  salt of the session key Gradio's client makes for a page load or an API client (a client
  may choose or change it: it groups a visit's votes, and is never an identity).
- **The visitor's browser**: `vote`, and `listen_a_s`/`listen_b_s`, the seconds of each
  clip the page's script saw play (played intervals summed, so replays count and seeks
  do not). Client-reported and not verified: a modified client can send any number in
  the accepted range (0 to 10 times the clip's length; anything else is recorded as
  null). The server's own listening gate, which decides whether a vote is taken at all,
  does not rely on it. Votes through the API carry null.
- **`counted` and `count_reason`, at write time** in `data/votes-*.parquet`: false, with
  the first flag as the reason, when the vote was flagged as it was cast.
- **`counted` and `count_reason`, at replay time** in `data/compacted/`: the board's
  own verdict over every vote in the repo when the files were compacted, which also
  leaves out every vote of a voter the anomalous-voter test has flagged
  (`anomalous_voter`), those cast before the flag too. A voter flagged after a month
  was compacted is not written back (monthly files are never rewritten): for the verdict of
  the revision you downloaded, replay it with the arena's code
  (`arena_core.dataset.verdict.replay_verdict(read_votes("votes/data"))`), which is what
  the leaderboard command counts.

## Audio (config `{AUDIO_CONFIG}`)

The audio of each (model, version, prompt) output that fought in a battle on one of
the arena's own prompts, where the Space's output cache still held it when published:

| column | type | meaning |
| --- | --- | --- |
{audio_rows}

Join it to the votes on (`arena`, `model_a` or `model_b`, `model_a_version` or
`model_b_version`, `prompt_id`, `prompt`, `category`), null matching null: `category`
is null for prompts without one and the versions when unknown (in SQL,
`IS NOT DISTINCT FROM`, not `=`). A prompt whose text was edited under the same id has
one file per text. Files published before that rule are named by the id alone and may
repeat a row of a newer file (same output, same audio); drop repeated rows of these six
columns before counting outputs. The audio is the engine's own output; voters heard it
blinded: resampled to one rate, trimmed, set to one loudness and padded (the votes'
style and `clip_*` fields describe what they heard). Outputs of typed prompts are not
published (a visitor's text is not spread further as speech); nor are outputs of an
engine version no longer running, whose audio the cache no longer holds.

```python
from datasets import load_dataset
audio = load_dataset("{repo_id}", "{AUDIO_CONFIG}", split="train")
```

## Load

```python
from datasets import load_dataset
votes = load_dataset("{repo_id}", split="train")
```

## Reproduce the leaderboard

With the arena's code (its repository) and this dataset downloaded to `votes/`:

```bash
python -m arena_core leaderboard --votes votes/data --registry votes/{REGISTRY_DIR}/registry.yaml --arena {arena}
```

replays the revision you downloaded with the registry the Space rated with (`--format
json` for machines). The Space's board can differ from it in what the command does not
say: the commit, the models the Space could not run (a model without votes leaves its
board), and the clock it judged future-dated rows by. For exactly a board the Space
shows, to the last digit and skip counts included, run the command printed under that
board, which names all three (`--repo ID --revision SHA`, `--unavailable ...`,
`--read-at ...`); for a daily snapshot in `leaderboards/`, add the board's `settings`
(`--category`, `--unavailable`) and the snapshot's `revision` (`--revision` its `commit`,
`--read-at` its `read_at`) to `leaderboard --repo {repo_id}`.

## Privacy

No raw IP address, user name or OAuth identity is ever stored. `voter` is an HMAC-SHA256
of the voter's identity (user name when logged in, else the client address) under a secret
salt that is not published, truncated to 80 bits: it tells votes of one voter apart,
and cannot be turned back into the person without the salt. `session_id` is the same
HMAC of the session key Gradio's client makes for a page load (or an API client): it links
the votes of one visit, nothing more (a client may change it at will); the key itself is
never stored.

## Licence and citation

Licence: {license_id}. Please cite the dataset as:

```bibtex
@misc{{open_model_arena_votes,
  title        = {{Open Model Arena votes}},
  howpublished = {{\\url{{https://huggingface.co/datasets/{repo_id}}}}},
  note         = {{Pairwise human preference votes, schema version {SCHEMA_VERSION}}}
}}
```
"""


def card_files(repo_id: str, registry, *, license_id: str, space_id: str) -> dict[str, bytes]:
    """The repo paths and bytes HubSync publishes beside the votes: the card, and the
    registry with its prompt files (under :data:`REGISTRY_DIR`) when it was read from one,
    so that ``leaderboard --repo --revision`` replays with the registry the boards used."""
    card = dataset_card(repo_id, license_id=license_id, space_id=space_id,
                        arenas=tuple(a.id for a in registry.arenas))  # fmt: skip
    files = {"README.md": card.encode()}
    if registry.path is not None:
        base = registry.path.parent
        files[f"{REGISTRY_DIR}/registry.yaml"] = registry.path.read_bytes()
        for prompt_file in sorted({a.prompt_file for a in registry.arenas if a.prompt_file}):
            files[f"{REGISTRY_DIR}/{prompt_file.relative_to(base).as_posix()}"] = (
                prompt_file.read_bytes()
            )
    return files
