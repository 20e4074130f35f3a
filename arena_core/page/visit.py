"""One page's session: the battle on screen, the ones just left, and the votes cast.

Gradio keeps one ``dict`` per page (a ``gr.State``) and hands every handler the same object,
so these functions change it in place: a vote still in flight sees at once that the
visitor moved on. The dict holds

- ``handle``, ``arena``, ``modality``, ``voted``: the battle on screen (None while none is);
- ``shown``: the arena the page shows (picked, or of the last battle opened);
- ``asked``: how many battles the page asked for. The battle opened for request ``n`` is
  battle ``n``; the page's gate carries that number (``data-battle``) and the page's script
  sends it with each vote, read when the button is pressed;
- ``left``: the last few battles the visitor left unvoted (number, handle and when each);
- ``votes``: the session's recorded votes; ``counted``: the last battles they were on.

**Why the number.** A vote goes through Gradio's queue and "new battle" does not, so on a
busy server a visitor who presses A and then N at once can have the new battle asked for
before the vote is handled. Read from the state at that point, the vote would name no
battle and be dropped without a word. With the number, the vote is recorded on the battle
that was on screen when it was cast. The number is the client's claim, so it can only pick
between this session's own battles (the one on screen, or one left in the last
:data:`LEFT_GRACE` seconds): no battle a client could not already vote on. Several are kept
(:data:`LEFT_KEPT`): a visitor may press A, then N, then N again (or pick another arena)
before the queue reaches the vote.
"""

from __future__ import annotations

from arena_core.space.sessions import page_report

#: Seconds after leaving a battle during which a vote cast on it still counts: longer than
#: a vote waits in a busy queue, short enough that a left battle does not stay open.
LEFT_GRACE = 120.0
#: Left battles remembered at most: a vote waits for the queue behind a few clicks, not more.
LEFT_KEPT = 4
#: Battles whose vote the page counted, remembered (a vote answered twice is counted once):
#: the battle on screen and those left that a vote may still reach.
COUNTED_KEPT = LEFT_KEPT + 2


def claim(state: dict | None, handle: str, arena: str, modality: str) -> dict:
    """``state`` naming the battle ``handle`` as the one on screen (the API's sessions start
    from None). Its number is the request it answers (``asked``)."""
    state = state if state is not None else {}
    state.update(handle=handle, arena=arena, shown=arena, modality=modality, voted=False)
    state.setdefault("votes", 0)
    return state


def leave(state: dict | None, now: float, shown: str | None = None) -> None:
    """The battle on screen is left (another was asked for, or the arena ``shown`` picked):
    from now on nothing sent back for it changes the page, and a battle that arrives for an
    earlier request is not shown either (``asked`` counts the requests). If it was not
    voted on, it joins ``left``, so a vote already cast on it still counts."""
    if state is None:
        return
    if shown is not None:
        state["shown"] = shown
    handle = state.get("handle")
    if handle and not state.get("voted"):
        entry = {"battle": state.get("asked", 0), "handle": handle, "at": now}
        state["left"] = [*state.get("left", ())[-(LEFT_KEPT - 1) :], entry]
    state["handle"] = None
    state["asked"] = state.get("asked", 0) + 1


def battle_number(state: dict | None) -> int:
    """The number of the battle on screen, for the page's gate."""
    return (state or {}).get("asked", 0)


def shown_arena(state: dict | None) -> str | None:
    """The arena the page shows, for a header sent after the visitor moved on."""
    return (state or {}).get("shown")


def reported_battle(report) -> int | None:
    """The battle number in the page's vote report (JSON text); None if there is none."""
    number = page_report(report).get("battle")
    return number if isinstance(number, int) and not isinstance(number, bool) else None


def voted_battle(state: dict | None, number: int | None, now: float) -> tuple[str | None, bool]:
    """The handle a vote is for, and whether that battle is still the one on screen.

    ``number``: the battle the page showed when the vote was cast (None from a client that
    does not say: the battle on screen). A number this session cannot vote on gives None.
    """
    state = state or {}
    if number is None or number == state.get("asked", 0):
        return state.get("handle"), True
    for left in state.get("left", ()):
        if left["battle"] == number and 0 <= now - left["at"] <= LEFT_GRACE:
            return left["handle"], False
    return None, False


def counted(state: dict, handle: str) -> bool:
    """A vote on ``handle`` was recorded: one more for the session, unless this page counted
    that battle's vote already (False then); a left battle voted on is forgotten (it takes
    no second vote anyway: the service refuses it).

    The service answers a vote sent again with the vote it recorded (a page whose answer was
    lost), so two presses can both come back with it: the battle is counted once
    (``counted``: the last :data:`COUNTED_KEPT` battles counted)."""
    done = state.get("counted", [])
    if handle in done:
        return False
    state["counted"] = [*done, handle][-COUNTED_KEPT:]
    state["votes"] = state.get("votes", 0) + 1
    state["left"] = [left for left in state.get("left", ()) if left["handle"] != handle]
    return True
