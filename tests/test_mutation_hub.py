"""HubSync and VoteUploader on their own: card publication, adoption, the SIGTERM flush.

The real Hugging Face Hub cannot be reached from the test machine: ``LocalHubApi``
(tests/hubfake.py) keeps the dataset repo in a local folder, records every call and
fails on demand. No speech engine or app is started: a VoteLog writes the votes, as
build_service wires it.
"""

import json
import signal
import threading

import pytest
from hubfake import PROMPTS, REGISTRY, REPO, LocalHubApi, repo_votes, row, seed_repo, writer

from arena_core.registry import load_registry
from arena_core.votes.log import VoteLog


@pytest.fixture
def registry(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "registry.yaml").write_text(REGISTRY)
    (tmp_path / "conf" / "prompts.yaml").write_text(PROMPTS)
    return load_registry(tmp_path / "conf" / "registry.yaml")


def append(log, vote="a"):
    return log.append(arena="speech", model_a="espeak/en-us", model_b="espeak/en-gb", vote=vote)


def test_the_card_and_the_registry_snapshot_are_published_once_and_again_only_when_changed(
    tmp_path, registry
):
    api = LocalHubApi(tmp_path / "hub")
    sync, _ = writer(tmp_path / "data", api)
    sync.publish_card(registry)
    assert len(api.commits) == 1
    files = api.commits[0]["files"]
    assert sorted(files) == ["README.md", "registry/prompts.yaml", "registry/registry.yaml"]
    assert files["registry/registry.yaml"] == REGISTRY.encode()
    assert files["registry/prompts.yaml"] == PROMPTS.encode()
    card = files["README.md"].decode()
    assert card.startswith("---\n") and REPO in card and "speech" in card
    assert api.commits[0]["message"] == "Update dataset card and registry snapshot"
    # The mirror now holds what the repo holds (a restart downloads it): nothing to send.
    api.snapshot_download(repo_id=REPO, repo_type="dataset", local_dir=sync.mirror)
    sync.publish_card(registry)
    assert len(api.commits) == 1
    (tmp_path / "conf" / "prompts.yaml").write_text(PROMPTS + "- {id: p3, text: Hello.}\n")
    sync.publish_card(load_registry(tmp_path / "conf" / "registry.yaml"))
    assert list(api.commits[1]["files"]) == ["registry/prompts.yaml"]


def test_start_names_the_card_licence_and_space(tmp_path, registry):
    api = LocalHubApi(tmp_path / "hub")
    sync, _ = writer(tmp_path / "data", api, license_id="cc0-1.0", space_id="org/the-space")
    sync.publish_card(registry)
    card = api.commits[0]["files"]["README.md"].decode()
    assert "license: cc0-1.0" in card and "org/the-space" in card


def test_earlier_local_votes_the_repo_lacks_are_pushed_once(tmp_path):
    api = LocalHubApi(tmp_path / "hub")
    seed_repo(api, [row(k) for k in range(3)])
    earlier = VoteLog(tmp_path / "data" / "votes")  # an earlier run whose last votes never left
    earlier.path.write_text("".join(json.dumps(row(k)) + "\n" for k in (1, 2, 3, 4)))
    earlier.close()
    sync, log = writer(tmp_path / "data", api)
    assert sync.status().waiting == 2  # rows 3 and 4; rows 1 and 2 are on the Hub
    append(log)
    assert sync.status().waiting == 3
    sync.flush()
    votes = repo_votes(api)
    assert len(votes) == 6 and not votes.skipped
    adopted = [p for p in api.commits[-1]["files"] if "adopted-" in p]
    assert len(adopted) == 1 and adopted[0].startswith("data/adopted-")
    assert sync.status().waiting == 0 and sync.status().pushed_votes == 3


def test_sigterm_flushes_then_hands_over_to_the_previous_handler(tmp_path):
    api = LocalHubApi(tmp_path / "hub")
    sync, log = writer(tmp_path / "data", api)
    append(log, "a")
    append(log, "b")
    called = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: called.append(signum))
    try:
        sync.flush_on_sigterm()
        with pytest.raises(SystemExit) as stop:
            signal.raise_signal(signal.SIGTERM)
        assert stop.value.code == 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert called == [signal.SIGTERM]
    assert sorted(repo_votes(api).column("vote").to_pylist()) == ["a", "b"]
    assert sync.uploader is not None and sync._stopped.is_set()


def test_sigterm_handler_only_from_the_main_thread(tmp_path):
    api = LocalHubApi(tmp_path / "hub")
    sync, _ = writer(tmp_path / "data", api)
    errors = []

    def install():
        try:
            sync.flush_on_sigterm()
        except RuntimeError as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=install)
    thread.start()
    thread.join()
    assert errors == ["signal handlers can only be installed from the main thread"]
    sync.flush()
