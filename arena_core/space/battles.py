"""The server's record of open battles: what a vote is checked against.

The visitor's browser (or API client) holds only an opaque, unguessable
handle. Which models fought, in which arena, on which prompt, comes from this
record, never from the client, so a vote cannot name its own models. A battle
takes exactly one vote, only once both outputs were delivered, and only
before it expires.
"""

from __future__ import annotations

import math
import secrets
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

#: Bytes of randomness in a battle handle (URL-safe text of ~43 characters).
HANDLE_BYTES = 32


#: ``BattleError.reason`` of a second vote on one battle (its first vote was taken).
ALREADY_VOTED = "already_voted"
#: ``BattleError.reason`` of a vote the listening gate holds back for ``wait`` more seconds.
LISTENING = "listening"


class BattleError(ValueError):
    """A vote the battle record refuses; the message is shown to the visitor, ``reason`` and
    ``wait`` let a page react to it without parsing the message (see ``views.ArenaError``)."""

    def __init__(self, message: str, *, reason: str | None = None, wait: float | None = None,
                 answer=None):  # fmt: skip
        super().__init__(message)
        self.reason, self.wait = reason, wait
        #: With ``ALREADY_VOTED``: what the battle's vote was answered with (None: not yet).
        self.answer = answer


@dataclass
class Battle:
    arena: str
    model_a: str
    model_b: str
    prompt: str
    prompt_id: str | None
    category: str | None
    created: float
    battle_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    delivered: bool = False
    voted: bool = False
    #: Clock time the outputs were handed to the visitor.
    delivered_at: float | None = None
    #: Seconds after delivery before a vote is taken (the listening gate; 0: none).
    listen_seconds: float = 0.0
    #: Each side's style as delivered, as vote fields (``model_a_duration_s`` ...); empty
    #: when the outputs are not speech.
    style: dict = field(default_factory=dict)
    #: Each delivered clip's length, as vote fields (``clip_a_s``, ``clip_b_s``); empty when
    #: the outputs are not audio. The bound on the listening times the browser reports.
    clips: dict = field(default_factory=dict)
    #: What the battle's vote was answered with (the desk's reveal), handed again to a
    #: second vote on it: a visitor whose answer was lost on the way (a dropped connection,
    #: a server error after the row was written) sees what was recorded, instead of a
    #: refusal that the page, which cannot tell it from a double click, shows as nothing.
    answer: object = None

    @property
    def prompt_origin(self) -> str:
        """'set' for one of the arena's prompts, 'typed' for a visitor's own (the server's
        record says which: a typed prompt equal to one of the set counts as that one)."""
        return "set" if self.prompt_id is not None else "typed"


class BattleBook:
    """Open battles by handle; thread-safe; expired battles are dropped as new ones open."""

    def __init__(self, ttl: float, clock: Callable[[], float] = time.monotonic):
        self.ttl = ttl
        self._clock = clock
        # Insertion order is creation order (the clock never runs back), so expired
        # battles are always at the front: dropping them costs O(1) per battle.
        self._open: OrderedDict[str, Battle] = OrderedDict()
        self._lock = threading.Lock()

    def open(self, **fields) -> tuple[str, Battle]:
        """Record a new battle (fields of :class:`Battle` but ``created``); returns its handle."""
        handle = secrets.token_urlsafe(HANDLE_BYTES)
        now = self._clock()
        battle = Battle(created=now, **fields)
        with self._lock:
            self._drop_expired(now)
            self._open[handle] = battle
        return handle, battle

    def delivered(self, handle: str, listen_seconds: float = 0.0) -> None:
        """Both outputs reached the visitor: the battle may take a vote once
        ``listen_seconds`` more have passed (the server's own listening gate: the
        browser's "played to the end" is the visitor's to fake)."""
        with self._lock:
            battle = self._open.get(handle)
            if battle is not None:
                battle.delivered = True
                battle.delivered_at = self._clock()
                battle.listen_seconds = max(0.0, float(listen_seconds))

    def close_for_vote(self, handle: str | None, *, gate: bool = True) -> Battle:
        """Mark the battle voted and return it, or refuse with a reason the visitor can read.

        The check and the mark happen under one lock, so two racing votes on
        one battle cannot both pass. ``gate=False`` skips the listening gate: a
        judge, authenticated by its token, measures the clips faster than they play.
        """
        with self._lock:
            battle = self._open.get(handle) if handle else None
            if battle is None:
                raise BattleError("There is no open battle to vote on. Start a new battle.")
            if self._clock() - battle.created > self.ttl:
                del self._open[handle]
                raise BattleError("This battle has expired. Start a new battle.")
            if battle.voted:
                raise BattleError("You already voted on this battle. Start a new battle.",
                                  reason=ALREADY_VOTED, answer=battle.answer)  # fmt: skip
            if not battle.delivered:
                raise BattleError("Both outputs must arrive before you vote.")
            left = battle.delivered_at + battle.listen_seconds - self._clock()
            if gate and left > 0:
                raise BattleError(
                    f"Listen to both clips before you vote ({math.ceil(left)} s left).",
                    reason=LISTENING,
                    wait=left,
                )
            battle.voted = True
            return battle

    def answered(self, handle: str, answer) -> None:
        """Keep what the battle's vote was answered with (see ``Battle.answer``)."""
        with self._lock:
            battle = self._open.get(handle)
            if battle is not None:
                battle.answer = answer

    def reopen(self, handle: str) -> None:
        """Undo :meth:`close_for_vote` when the vote could not be written."""
        with self._lock:
            battle = self._open.get(handle)
            if battle is not None:
                battle.voted = False

    def __len__(self) -> int:
        with self._lock:
            return len(self._open)

    def _drop_expired(self, now: float) -> None:
        while self._open:
            handle, battle = next(iter(self._open.items()))
            if now - battle.created <= self.ttl:
                return
            del self._open[handle]
