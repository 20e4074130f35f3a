"""Abuse of the vote through the running app, found by a hunt that played a scripted adversary.

**Votes sent from another site.** Gradio answers a cross-origin request from any site with
``Access-Control-Allow-Origin`` naming that site and ``Access-Control-Allow-Credentials:
true`` whenever the app is not reached as localhost (a Space is not), and the sign-in
cookie is ``SameSite=None``. A script on any web page could therefore open battles, read
the reveals and vote from its own visitors' browsers: every vote from the visitor's
address and, where the browser sends the cookie, as the visitor's Hugging Face account.
Sign-in and the rate limit counted each visitor as a voter of their own, so the ranking
went to whoever had the most traffic. The page that sent a request is in its ``Origin``
header, which a script cannot set: a vote from a page of another site is now refused and
writes nothing, while the arena's own page (its own site as ``Origin``) and API clients
(no ``Origin``) vote as before.

The app runs on 127.0.0.1 with fast fake models; the requests name a public host
(``Host``), as they would reach a Space.
"""

import json
from contextlib import contextmanager
from types import SimpleNamespace

import httpx
import numpy as np
import pytest
from conftest import launch_on_free_port
from fakes import REGISTRY, Clock, FakeBackend

from app import build_demo, clip_store, launch_options
from arena_core.backends import ModelPool
from arena_core.integrity import identity
from arena_core.integrity.identity import IdentityError, IdentityRule, voter_identity
from arena_core.registry import parse_registry
from arena_core.space.config import Settings
from arena_core.space.service import ArenaService
from arena_core.votes.log import VoteLog
from arena_core.votes.read import read_votes

#: The arena's public host, and a page of another site.
SITE, EVIL = "arena.example.org", "https://evil.example"
REFUSED = "not from a page of another site"


@contextmanager
def running(tmp_path, **settings):
    registry = parse_registry(REGISTRY)
    arena = registry.arenas[0]
    pool = ModelPool(arena, {m.id: FakeBackend(m) for m in arena.models})
    service = ArenaService(registry, {"speech": pool}, VoteLog(tmp_path / "votes"), clock=Clock(),
                           rate_limit=1000, rng=np.random.default_rng(0))  # fmt: skip
    service.load()
    settings = Settings(**{"data_dir": tmp_path, "voter_salt": "hunt", **settings})
    clips = clip_store(settings)
    demo = build_demo(service, settings, clips)
    demo.queue(default_concurrency_limit=8)
    url = launch_on_free_port(demo, **launch_options(settings, clips))
    try:
        with httpx.Client(base_url=url, timeout=30) as http:
            yield SimpleNamespace(
                http=http, data=tmp_path, config=http.get("config").json(), service=service
            )
    finally:
        demo.close()
        service.close()


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running(tmp_path_factory.mktemp("abuse")) as launched:
        yield launched


def rows(app) -> int:
    folder = app.data / "votes"
    return len(read_votes(folder)) if any(folder.glob("*.jsonl")) else 0


def call(app, api_name: str, values: list, session: str, headers: dict) -> dict:
    """One POST to an API event, as a page's script (or any client) sends it."""
    config = app.config
    (dep,) = [d for d in config["dependencies"] if d.get("api_name") == api_name]
    states = {c["id"] for c in config["components"] if c.get("type") == "state"}
    given = iter(values)
    data = [None if i in states else next(given) for i in dep["inputs"]]
    answer = app.http.post(f"gradio_api/run/{api_name}", headers=headers,
                           json={"data": data, "fn_index": dep["id"], "session_hash": session})  # fmt: skip
    return answer.json()


def battle_then_vote(app, session: str, headers: dict) -> dict:
    call(app, "new_battle", ["speech", "", ""], session, headers)
    return call(app, "vote", ["a"], session, headers)


def queued_vote(app, session: str, headers: dict) -> list:
    """The page's own A button (its queued event), as the page's script sends it."""
    config = app.config
    ids = {c["id"]: c for c in config["components"]}
    (button,) = [c["id"] for c in config["components"]
                 if c.get("props", {}).get("elem_id") == "vote-a"]  # fmt: skip
    (dep,) = [d for d in config["dependencies"] if [button, "click"] in d["targets"]]
    data = [None if ids[i]["type"] == "state" else "" for i in dep["inputs"]]
    joined = app.http.post("gradio_api/queue/join", headers=headers, json={
        "data": data, "fn_index": dep["id"], "session_hash": session, "event_data": None,
        "trigger_id": button})  # fmt: skip
    joined.raise_for_status()
    messages = []
    with app.http.stream("GET", "gradio_api/queue/data", params={"session_hash": session}) as sse:
        for line in sse.iter_lines():
            if line.startswith("data:"):
                messages.append(json.loads(line[5:]))
                if messages[-1].get("msg") == "process_completed":
                    return messages
    raise AssertionError("no answer")


def test_gradio_lets_any_site_read_and_send_credentialed_requests(app):
    """Why the app must check: the preflight of a page on another site is granted, cookies
    included, so a browser sends its votes and lets its script read the answers."""
    granted = app.http.options("gradio_api/run/vote", headers={
        "Host": SITE, "Origin": EVIL, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})  # fmt: skip
    assert granted.headers["access-control-allow-origin"] == EVIL
    assert granted.headers["access-control-allow-credentials"] == "true"


@pytest.mark.parametrize("origin", [EVIL, "null", f"https://{SITE}.evil.example",
                                    f"http://{SITE}:8443", "file://"])  # fmt: skip
def test_a_vote_sent_by_a_page_of_another_site_is_refused_and_writes_nothing(app, origin):
    before = rows(app)
    answer = battle_then_vote(app, f"foreign-{origin}", {"Host": SITE, "Origin": origin})
    assert REFUSED in (answer.get("error") or ""), answer
    assert rows(app) == before


def test_the_arenas_own_page_and_api_clients_still_vote(app):
    before = rows(app)
    own = battle_then_vote(app, "own-page", {"Host": SITE, "Origin": f"https://{SITE}"})
    assert own["data"][2]["counted"], own
    default_port = battle_then_vote(app, "own-port", {"Host": f"{SITE}:443",
                                                      "Origin": f"https://{SITE}"})  # fmt: skip
    assert default_port["data"][2]["counted"], default_port
    client = battle_then_vote(app, "api-client", {"Host": SITE})  # gradio_client sends no Origin
    assert client["data"][2]["counted"], client
    assert rows(app) == before + 3


def test_the_pages_own_vote_event_refuses_another_sites_page_too(app):
    """The page's A button is an event of Gradio's queue, which any site's script can post to."""
    session = "queued-foreign"
    call(app, "new_battle", ["speech", "", ""], session, {"Host": SITE})
    before = rows(app)
    messages = queued_vote(app, session, {"Host": SITE, "Origin": EVIL})
    assert any(REFUSED in json.dumps(m) for m in messages), messages
    assert rows(app) == before
    queued_vote(app, session, {"Host": SITE, "Origin": f"https://{SITE}"})
    assert rows(app) == before + 1  # the same battle takes the page's own vote


def test_a_battle_asked_for_by_a_page_of_another_site_is_refused_before_any_engine_runs(app):
    """A battle costs the engines' time: another site's page could keep them busy for its own
    visitors, and the arena's visitors waited behind them."""
    before = len(app.service.book)
    answer = call(app, "new_battle", ["speech", "", ""], "foreign-battle",
                  {"Host": SITE, "Origin": EVIL})  # fmt: skip
    assert REFUSED in (answer.get("error") or ""), answer
    assert len(app.service.book) == before  # no battle was opened, no engine ran
    own = call(app, "new_battle", ["speech", "", ""], "own-battle",
               {"Host": SITE, "Origin": f"https://{SITE}"})  # fmt: skip
    assert own.get("data") and len(app.service.book) == before + 1, own


def test_a_spaces_own_host_names_are_its_site_whatever_host_the_proxy_forwards(tmp_path):
    """On a Space, ``SPACE_HOST`` names the page's hosts (custom domains included), in case the
    proxy forwards another ``Host``."""
    settings = Settings.from_env({"ARENA_VOTER_SALT": "s", "ARENA_SITES": "embed.example.net",
                                  "SPACE_HOST": "owner-arena.hf.space, vote.example.org"})  # fmt: skip
    assert settings.identity.sites == ("owner-arena.hf.space", "vote.example.org",
                                       "embed.example.net")  # fmt: skip
    with running(tmp_path, space_host=settings.space_host, sites=settings.sites) as launched:
        inside = {"Host": "10.16.0.7:7860"}
        for origin in ("https://owner-arena.hf.space", "https://vote.example.org",
                       "https://embed.example.net"):  # fmt: skip
            answer = battle_then_vote(launched, origin, {**inside, "Origin": origin})
            assert answer["data"][2]["counted"], answer
        answer = battle_then_vote(launched, "evil", {**inside, "Origin": EVIL})
        assert REFUSED in (answer.get("error") or ""), answer
        # DNS rebinding: another site's page, its name pointed at the arena's address, sends
        # that name as Origin and Host; with the arena's names given, it is not among them.
        rebound = {"Host": "evil.example", "Origin": EVIL, "Sec-Fetch-Site": "same-origin"}
        answer = battle_then_vote(launched, "rebound", rebound)
        assert REFUSED in (answer.get("error") or ""), answer


@pytest.mark.parametrize(("headers", "sites", "foreign"), [
    ({}, (), False),  # an API client
    ({"host": "a.org"}, (), False),
    ({"host": "a.org", "origin": "https://a.org"}, (), False),
    ({"host": "A.ORG:443", "origin": "https://a.org"}, (), False),
    ({"host": "a.org", "origin": "http://a.org:80"}, (), False),
    ({"host": "10.0.0.1", "origin": "https://b.org"}, ("b.org",), False),
    ({"host": "a.org", "origin": "https://b.org"}, (), True),
    ({"host": "a.org", "origin": "https://a.org:8443"}, (), True),
    ({"host": "a.org", "origin": "https://a.org.b.org"}, (), True),
    ({"host": "a.org", "origin": "https://x@a.org"}, (), True),
    ({"host": "a.org", "origin": "null"}, (), True),
    ({"host": "a.org", "origin": "ftp://a.org"}, (), True),
    ({"host": "a.org", "origin": "https://[::1"}, (), True),
    ({"origin": "https://a.org"}, (), True),  # no Host to be the same site as
    ({"host": "a.org", "origin": "https://a.org."}, (), False),  # a final dot names the same host
    ({"host": "a.org.:443", "origin": "https://a.org"}, (), False),
    ({"host": "evil.org", "origin": "https://evil.org"}, ("a.org",), True),  # DNS rebinding
    ({"host": "10.0.0.7", "origin": "https://a.org"}, ("a.org",), False),  # a proxy's own Host
])  # fmt: skip
def test_foreign_origin(headers, sites, foreign):
    assert identity.foreign_origin(headers, sites) is foreign


def test_an_ipv6_host_is_its_own_site_whatever_its_case():
    headers = {"host": "[2001:db8::7]:8080", "origin": "http://[2001:DB8::7]:8080"}
    assert not identity.foreign_origin(headers)
    assert identity.foreign_origin({**headers, "origin": "http://[2001:db8::8]:8080"})


def test_no_identity_is_taken_from_another_sites_page_not_even_a_signed_in_user():
    rule = IdentityRule(trusted_proxies=0)
    with pytest.raises(IdentityError, match=REFUSED):
        voter_identity(rule, username="victim", headers={"host": "a.org", "origin": EVIL},
                       client_host="192.0.2.1")  # fmt: skip
    assert voter_identity(rule, username="me", headers={"host": "a.org", "origin": "https://a.org"},
                          client_host="192.0.2.1") == "user:me"  # fmt: skip
