"""Who is voting: an identity the visitor cannot choose, stored only as a salted hash.

A rate limit or an anomaly test is only as good as the identity it counts, so
the identity comes only from what the client cannot write itself:

* the signed-in Hugging Face user (OAuth on a Space), when there is one;
* else the client address as the trusted proxies saw it. Behind ``n`` trusted
  proxies, each appending the address it received the request from to
  ``X-Forwarded-For``, the client's address is the ``n``-th entry from the
  right; everything left of it was written by the client and is ignored. With
  ``n = 0`` the header is ignored and the socket peer is the client.

The address must parse as an IP address (``ipaddress``), so junk such as
``not-an-ip <script>`` is never an identity; an IPv6 address counts as its /64
network, since one subscriber holds a whole /64 and could otherwise vote from
2^64 addresses. A request without a usable identity is refused (see
:class:`IdentityError` for why refusing beats pooling such votes).

The published log never holds the raw value: a voter is an HMAC of the
identity under a secret salt, stable while the salt is, unlinkable without it.

**Votes sent from another site are refused** (:func:`foreign_origin`). Gradio answers a
cross-origin request from any site with ``Access-Control-Allow-Origin`` set to that site and
``Access-Control-Allow-Credentials: true`` (unless the app is reached as localhost), and
the sign-in cookie is ``SameSite=None``. So a script on any web page could open battles and
vote from its own visitors' browsers: each vote from the visitor's address, and, where the
browser sends the cookie, as the visitor's Hugging Face account. The ranking would then
belong to whoever has the most traffic, however sign-in and the rate limit count. A
browser always names the page that sent a request in its ``Origin`` header, and a script
cannot change it: the arena's own page sends its own site, and API clients
(``gradio_client``, scripts) send none.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

#: Hex characters kept of the HMAC: 80 bits, ample to tell voters apart.
VOTER_HASH_CHARS = 20
#: Header each trusted proxy appends the address of its peer to (lower case, as Starlette keys it).
FORWARDED_FOR = "x-forwarded-for"
#: Prefix length an IPv6 client is counted by: the /64 a subscriber is usually given.
IPV6_PREFIX = 64
#: Header in which a browser names the site of the page that sent a request (RFC 6454).
ORIGIN = "origin"
#: Ports an origin leaves out, by scheme.
_DEFAULT_PORTS = {"http": "80", "https": "443"}


class IdentityError(ValueError):
    """A vote whose voter cannot be told; the message is written for the visitor.

    Refused rather than counted as one shared "unknown" voter: a missing or
    malformed proxy entry means a misconfigured hop count or a request that
    bypassed the proxy, and pooling such votes would let anyone spend that
    shared quota (or hide among it) while the operator sees nothing wrong. A
    refusal writes nothing, tells the visitor what to do, and shows up in the log.
    """


@dataclass(frozen=True)
class IdentityRule:
    """How a request's voter is identified (``ARENA_TRUSTED_PROXIES``, ``ARENA_REQUIRE_LOGIN``)."""

    #: Proxies in front of the app that append to X-Forwarded-For; 0 trusts the socket peer.
    trusted_proxies: int = 0
    #: Refuse votes from visitors who are not signed in.
    require_login: bool = False
    #: Host names the arena's page is served under besides the request's ``Host`` (a
    #: Space's ``SPACE_HOST``: its hf.space name and custom domains); see :func:`foreign_origin`.
    sites: tuple[str, ...] = ()

    def __post_init__(self):
        if not isinstance(self.trusted_proxies, int) or self.trusted_proxies < 0:
            raise ValueError(
                f"trusted_proxies must be an integer >= 0, got {self.trusted_proxies!r}"
            )

    def describe(self) -> str:
        """One line for the start-up log: which rule is in force."""
        if self.require_login:
            return "the signed-in Hugging Face user; votes without sign-in are refused"
        if self.trusted_proxies == 0:
            where = "the socket peer address (X-Forwarded-For ignored; ARENA_TRUSTED_PROXIES=0)"
        else:
            where = (
                f"entry {self.trusted_proxies} from the right of X-Forwarded-For "
                f"(ARENA_TRUSTED_PROXIES={self.trusted_proxies})"
            )
        return f"the signed-in Hugging Face user, else the client address: {where}"


def forwarded_chain(headers: Mapping[str, str] | None) -> list[str]:
    """Every X-Forwarded-For entry, left to right, across repeated header lines.

    HTTP folds repeated fields into one comma-separated list in order, so a
    second header line a client adds cannot push the proxy's entry out of place.
    """
    if not headers:
        return []
    getlist = getattr(headers, "getlist", None)
    lines = getlist(FORWARDED_FOR) if getlist else [headers.get(FORWARDED_FOR) or ""]
    return [entry.strip() for line in lines for entry in line.split(",")]


def client_address(rule: IdentityRule, headers: Mapping[str, str] | None,
                   client_host: str | None) -> str:  # fmt: skip
    """The client's address under ``rule``, normalised (IPv6 as its /64 network).

    Raises :class:`IdentityError` when the entry the rule points at is missing
    or is not an IP address.
    """
    if rule.trusted_proxies == 0:
        raw = client_host or ""
    else:
        chain = forwarded_chain(headers)
        if len(chain) < rule.trusted_proxies:
            log.warning("vote refused: X-Forwarded-For has %d entries, ARENA_TRUSTED_PROXIES=%d",
                        len(chain), rule.trusted_proxies)  # fmt: skip
            raise IdentityError(_UNKNOWN)
        raw = chain[-rule.trusted_proxies]
    try:
        address = ipaddress.ip_address(raw)
    except ValueError:
        log.warning("vote refused: the client address is not an IP address")  # never the value
        raise IdentityError(_UNKNOWN) from None
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, IPV6_PREFIX), strict=False))
    return str(address)


def foreign_origin(headers: Mapping[str, str] | None, sites: Iterable[str] = ()) -> bool:
    """Whether a browser sent the request from a page of another site than the arena's.

    No ``Origin`` header: not sent by a page's script (an API client), so not foreign.
    Otherwise the origin's host and port must be one of ``sites`` when any are named (a
    Space's ``SPACE_HOST``, ``ARENA_SITES``), else the request's own ``Host`` (default ports,
    case and a final dot aside); ``null`` (a sandboxed or local page) and anything that is
    not an http(s) origin are foreign. See the module docstring for why.

    Named sites leave the ``Host`` out on purpose: a server that answers any ``Host`` (as
    uvicorn does) can be reached by DNS rebinding, where another site's page sends its own
    name as both ``Origin`` and ``Host`` (the browser sees one site, so even its
    ``Sec-Fetch-Site`` says ``same-origin``); only names the operator gave cannot be spoken so.
    """
    origin = (headers or {}).get(ORIGIN)
    if origin is None:
        return False
    try:
        parts = urlsplit(origin.strip())
        scheme, netloc = parts.scheme.lower(), parts.netloc.lower()
    except ValueError:
        return True
    if scheme not in _DEFAULT_PORTS or not netloc or "@" in netloc:
        return True
    own = list(sites) or [(headers or {}).get("host") or ""]
    return _authority(netloc, scheme) not in {_authority(h, scheme) for h in own if h.strip()}


def _authority(host: str, scheme: str) -> str:
    """``host[:port]`` in lower case, without the scheme's default port or a final dot
    (``arena.org.`` names ``arena.org``)."""
    host = host.strip().lower()
    default = f":{_DEFAULT_PORTS[scheme]}"
    host = host[: -len(default)] if host.endswith(default) else host
    name, colon, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
    if not colon or not port.isdigit():  # no port (an IPv6 address's colons aside)
        return host.rstrip(".")
    return f"{name.rstrip('.')}:{port}"


def same_site(rule: IdentityRule, headers: Mapping[str, str] | None) -> None:
    """Raise :class:`IdentityError` when a page of another site sent the request
    (:func:`foreign_origin`): checked for votes (:func:`voter_identity`) and for battles,
    whose engines another site's visitors would otherwise keep busy for it."""
    if foreign_origin(headers, rule.sites):
        log.warning("request refused: sent from a page of another site")  # never the value
        raise IdentityError(_FOREIGN)


def voter_identity(rule: IdentityRule, *, username: str | None,
                   headers: Mapping[str, str] | None, client_host: str | None) -> str:  # fmt: skip
    """The raw identity to hash: ``user:<name>`` when signed in, else ``ip:<address>``.

    Raises :class:`IdentityError` when the request comes from a page of another site
    (:func:`foreign_origin`: that site's script cast it, not the visitor), when sign-in is required and missing, or when the address cannot be told
    (see :func:`client_address`).
    """
    same_site(rule, headers)
    if username:
        return f"user:{username}"
    if rule.require_login:
        raise IdentityError("Sign in with Hugging Face (button at the top) to vote in this arena.")
    return f"ip:{client_address(rule, headers, client_host)}"


def voter_hash(salt: str, identity: str) -> str:
    """Salted, keyed hash of an identity; the only form in which a voter is stored."""
    # surrogatepass: a client writes its own session key, and a lone surrogate in it made
    # every vote of that session fail; each string still has one encoding of its own.
    digest = hmac.new(salt.encode(), identity.encode("utf-8", "surrogatepass"),
                      hashlib.sha256).hexdigest()  # fmt: skip
    return digest[:VOTER_HASH_CHARS]


def session_hash(salt: str, session: str | None) -> str | None:
    """The published form of a visitor's session: the HMAC of :func:`voter_hash`, under the
    same salt, of the session key Gradio's client sends (``request.session_hash``: a random
    key per page load, one per API client). The client makes it and may choose or change
    it, so it groups a visit's votes (``session_order``) and identifies no one. None
    without one.

    The identity is prefixed (``session:``), so a session's hash can never equal a
    voter's even if a session key happened to read like an address.
    """
    return voter_hash(salt, f"session:{session}") if session else None


_FOREIGN = (
    "Battles and votes are taken only from the arena's own page (or an API client), not from "
    "a page of another site. Open the arena itself to vote."
)
_UNKNOWN = (
    "We could not tell where this vote comes from, so it was not recorded. "
    "Sign in with Hugging Face if the arena offers it, or try again later."
)
