"""Voter identity: only what the client cannot write counts, and only its salted hash is kept."""

import hashlib
import hmac
import ipaddress
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.datastructures import Headers

from arena_core.integrity.identity import (
    IdentityError,
    IdentityRule,
    client_address,
    forwarded_chain,
    voter_hash,
    voter_identity,
)
from arena_core.space.config import ConfigError, Settings

SPACE = IdentityRule(trusted_proxies=1)  # what a Space runs with by default
LOCAL = IdentityRule(trusted_proxies=0)


def fwd(value):
    return {"x-forwarded-for": value}


def test_the_proxy_appended_entry_counts_and_everything_left_of_it_is_ignored():
    # The client wrote "6.6.6.6, 7.7.7.7"; the one proxy appended the address it saw.
    headers = fwd("6.6.6.6, 7.7.7.7, 198.51.100.7")
    assert client_address(SPACE, headers, "10.16.0.3") == "198.51.100.7"
    assert client_address(IdentityRule(trusted_proxies=2), headers, "10.16.0.3") == "7.7.7.7"
    # Without trusted proxies the header is the client's own words: only the peer counts.
    assert client_address(LOCAL, headers, "203.0.113.9") == "203.0.113.9"


def test_repeated_header_lines_are_read_in_order():
    # A client's own X-Forwarded-For line comes first; the proxy's entry stays the last one.
    headers = Headers(raw=[(b"x-forwarded-for", b"6.6.6.6"), (b"x-forwarded-for", b"198.51.100.7")])
    assert forwarded_chain(headers) == ["6.6.6.6", "198.51.100.7"]
    assert client_address(SPACE, headers, None) == "198.51.100.7"


@pytest.mark.parametrize(
    ("headers", "peer"),
    [
        (fwd("not-an-ip <script>"), "10.0.0.1"),  # the client's junk, and no proxy entry
        (fwd(""), "10.0.0.1"),
        ({}, "10.0.0.1"),  # the proxy appended nothing: misconfigured or bypassed
        (fwd("203.0.113.9:4711"), "10.0.0.1"),  # a port is not an address
        (fwd("1.2.3.4, 203.0.113.999"), "10.0.0.1"),
    ],
)
def test_no_usable_address_is_refused_without_logging_it(headers, peer, caplog):
    caplog.set_level(logging.DEBUG)
    with pytest.raises(IdentityError, match="could not tell"):
        voter_identity(SPACE, username=None, headers=headers, client_host=peer)
    assert "script" not in caplog.text and "4711" not in caplog.text and "999" not in caplog.text


def test_the_socket_peer_must_be_an_address_too():
    with pytest.raises(IdentityError):
        client_address(LOCAL, {}, None)
    with pytest.raises(IdentityError):
        client_address(LOCAL, {}, "testclient")


def test_an_ipv6_client_counts_as_its_slash_64():
    one = client_address(SPACE, fwd("2001:DB8:1:2::1"), None)
    other = client_address(SPACE, fwd("2001:db8:1:2:ffff:eeee:dddd:cccc"), None)
    assert one == other == "2001:db8:1:2::/64"
    assert client_address(SPACE, fwd("2001:db8:1:3::1"), None) != one
    assert client_address(SPACE, fwd("::ffff:198.51.100.7"), None) == "198.51.100.7"


def test_a_signed_in_user_is_the_voter_whatever_the_address():
    for headers in (fwd("1.1.1.1"), fwd("2.2.2.2"), {}):
        assert (
            voter_identity(SPACE, username="ada", headers=headers, client_host=None) == "user:ada"
        )
    required = IdentityRule(trusted_proxies=1, require_login=True)
    assert voter_identity(required, username="ada", headers={}, client_host=None) == "user:ada"
    with pytest.raises(IdentityError, match="Sign in"):
        voter_identity(required, username=None, headers=fwd("198.51.100.7"), client_host=None)


_octet = st.integers(0, 255)
_ipv4 = st.tuples(_octet, _octet, _octet, _octet).map(lambda t: ".".join(map(str, t)))
_junk = st.text(alphabet=st.characters(blacklist_characters=",", blacklist_categories=["Cs"]))


@given(prefix=st.lists(st.one_of(_ipv4, _junk), max_size=6), appended=_ipv4)
def test_whatever_the_client_writes_the_voter_is_the_appended_address(prefix, appended):
    headers = fwd(", ".join([*prefix, appended]))
    got = voter_identity(SPACE, username=None, headers=headers, client_host="10.16.0.3")
    assert got == f"ip:{ipaddress.ip_address(appended)}"


def test_voter_hash_is_the_salted_hmac_and_never_the_raw_identity():
    # Expected value computed here with the standard library, not by the module.
    expected = hmac.new(b"salt-1", b"ip:1.2.3.4", hashlib.sha256).hexdigest()[:20]
    assert voter_hash("salt-1", "ip:1.2.3.4") == expected
    assert voter_hash("salt-2", "ip:1.2.3.4") != expected
    assert "1.2.3.4" not in expected


def test_the_rule_in_force_is_described_for_the_start_up_log():
    assert "socket peer" in LOCAL.describe() and "X-Forwarded-For ignored" in LOCAL.describe()
    assert "entry 1 from the right" in SPACE.describe()
    assert "refused" in IdentityRule(require_login=True).describe()
    with pytest.raises(ValueError, match="trusted_proxies"):
        IdentityRule(trusted_proxies=-1)


def test_settings_default_to_the_space_proxy_only_on_a_space():
    assert Settings.from_env({"ARENA_VOTER_SALT": "s"}).identity == IdentityRule(0, False)
    on_space = Settings.from_env({"ARENA_VOTER_SALT": "s", "SPACE_ID": "org/arena"})
    assert on_space.identity == IdentityRule(1, False)
    env = {"ARENA_VOTER_SALT": "s", "SPACE_ID": "org/arena", "ARENA_TRUSTED_PROXIES": "0"}
    assert Settings.from_env(env).trusted_proxies == 0
    env |= {"ARENA_TRUSTED_PROXIES": "2", "ARENA_REQUIRE_LOGIN": "yes"}
    assert Settings.from_env(env).identity == IdentityRule(2, True)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ARENA_TRUSTED_PROXIES": "-1"}, "whole number"),
        ({"ARENA_TRUSTED_PROXIES": "one"}, "whole number"),
        ({"ARENA_TRUSTED_PROXIES": "²"}, "whole number"),
        ({"ARENA_REQUIRE_LOGIN": "maybe", "SPACE_ID": "org/arena"}, "ARENA_REQUIRE_LOGIN"),
        ({"ARENA_REQUIRE_LOGIN": "1"}, "only a Space"),  # no sign-in off a Space: no one could vote
    ],
)
def test_identity_settings_that_cannot_work_stop_the_start(env, message):
    with pytest.raises(ConfigError, match=message):
        Settings.from_env({"ARENA_VOTER_SALT": "s", **env})
