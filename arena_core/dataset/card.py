"""The dataset card (``README.md`` of the Hub dataset repo) researchers read first.

Generated from :data:`~arena_core.votes.schema.FIELDS`, so the documented
schema, the declared ``dataset_info`` features (which let ``load_dataset`` merge
files where a column is all null) and the code can never disagree.
"""

from __future__ import annotations

import pyarrow as pa
import yaml

from arena_core.votes.schema import FIELDS, SCHEMA_VERSION

#: Where the vote files live in the repo, and the pattern the card's config loads.
DATA_GLOB = "data/**/*.parquet"
#: Folder of the registry snapshot that makes the board reproducible from the download.
REGISTRY_DIR = "registry"


def _feature(kind: pa.DataType) -> dict | str:
    if pa.types.is_list(kind):
        return {"list": "string"}
    if pa.types.is_floating(kind):
        return "float64"
    return "int64" if pa.types.is_integer(kind) else "string"


def _type_name(kind: pa.DataType) -> str:
    feature = _feature(kind)
    return feature if isinstance(feature, str) else "list of string"


def front_matter(license_id: str) -> dict:
    """The card's YAML header: licence, the file config, and every column's type."""
    return {
        "license": license_id,
        "pretty_name": "Open Model Arena votes",
        "tags": ["arena", "pairwise-comparison", "human-preference", "text-to-speech"],
        "configs": [
            {"config_name": "default", "data_files": [{"split": "train", "path": DATA_GLOB}]}
        ],
        # Features only: declared split sizes would have to match the data exactly.
        "dataset_info": {"features": [{"name": f.name, "dtype": _feature(f.type)} for f in FIELDS]},
    }


def dataset_card(repo_id: str, *, license_id: str = "cc-by-4.0", space_id: str = "",
                 arenas: tuple[str, ...] = ()) -> str:  # fmt: skip
    """The whole card as Markdown with YAML front matter."""
    header = yaml.safe_dump(front_matter(license_id), sort_keys=False, allow_unicode=True)
    rows = "\n".join(
        f"| `{f.name}` | {_type_name(f.type)} | {'yes' if f.required else 'no'} | {f.doc} |"
        for f in FIELDS
    )
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

- `data/votes-<process>-<n>.parquet`: votes as each Space process pushed them (a new
  file per push, never rewritten).
- `data/compacted/<YYYY-MM>/part-*.parquet`: the same votes rolled up by month.
- `{REGISTRY_DIR}/registry.yaml` (and its prompt files): the models, names and priors
  the Space rated with.

A vote can appear in two files for a moment while files are compacted; `vote_id` is
unique per vote and readers keep its first row.

## Schema (schema_version {SCHEMA_VERSION})

| field | type | required | meaning |
| --- | --- | --- | --- |
{rows}

`ts` is ISO-8601 UTC. Rows with a non-empty `flags` (for example `rate_limited`) are
kept for transparency but left out of the ratings.

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

prints exactly the board the Space shows (`--format json` for machines).

## Privacy

No raw IP address, user name or OAuth identity is ever stored. `voter` is an HMAC-SHA256
of the voter's identity (user name when logged in, else the client address) under a secret
salt that is not published, truncated to 80 bits: it tells votes of one voter apart,
and cannot be turned back into the person without the salt.

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
