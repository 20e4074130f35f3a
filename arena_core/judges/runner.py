"""Running a judge over battles: the loop the CLI and the Space's background judges share.

Each battle is opened as a visitor's is (a random prompt of the arena's set, two
models drawn by the matchmaker, the clips delivered blind), judged in both orders,
and both verdicts are cast through :meth:`ArenaService.judge_vote` with the judge
token. A battle the judge cannot judge (a recogniser that does not speak the
prompt's language, an unreadable LLM reply), or on which the judge breaks its
contract (raises another error, answers something other than a :class:`Verdict`),
is left to expire and counted; it never becomes a vote.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from arena_core.backends.base import lower_thread_priority
from arena_core.judges.base import Case, Judge, JudgeError, Verdict, both_orders
from arena_core.space.views import ArenaError

log = logging.getLogger(__name__)

#: Longest reason a run counts a battle not judged under (characters).
REASON_CHARS = 80
#: Seconds the Space's judges wait at least after a round that judged nothing (the votes
#: still replaying, every battle refused at once): with ``ARENA_JUDGE_PAUSE=0`` the thread
#: asked again hundreds of thousands of times a second, taking the CPU from visitors.
IDLE_SECONDS = 1.0


@dataclass
class JudgeRun:
    """What a run did: battles judged (two votes each), and the others by reason."""

    judged: int = 0
    not_judged: Counter = field(default_factory=Counter)

    @property
    def votes(self) -> int:
        return 2 * self.judged


def judge_battles(service, judge: Judge, arena_id: str, battles: int, token: str, *,
                  progress: Callable[[JudgeRun], None] | None = None,
                  stop: threading.Event | None = None) -> JudgeRun:  # fmt: skip
    """Open ``battles`` battles of ``arena_id``, judge each in both orders, cast the verdicts.

    ``progress`` is called after each battle (a progress bar); ``stop`` ends the run early.
    Raises :class:`ArenaError` when the judge is not entered in the arena.
    """
    if arena_id not in judge.spec.arenas:
        raise ArenaError(f"Judge {judge.id!r} does not judge arena {arena_id!r}.")
    pool = service.pools[arena_id]
    run = JudgeRun()
    for _ in range(battles):
        if stop is not None and stop.is_set():
            break
        try:
            view = service.new_battle(arena_id)
            case = Case(view.prompt, view.output_a, view.output_b, pool.language_of(view.category))
            verdicts = _verdicts(judge, case)
            service.judge_vote(view.handle, verdicts, judge.id, token)
            run.judged += 1
        except (ArenaError, JudgeError) as exc:
            run.not_judged[reason(exc, judge.id)] += 1
            log.info("judge %s: battle not judged: %s", judge.id, exc)
        if progress is not None:
            progress(run)
    return run


def _verdicts(judge: Judge, case: Case) -> tuple[str, str]:
    """The judge's choices in both orders; a judge that breaks its contract (raises what is
    not a :class:`JudgeError`, answers what is not a :class:`Verdict`) costs this battle,
    with its traceback logged, not the whole run (``python -m arena_core judge`` ended at
    the first such battle with a traceback, the battles after it never judged)."""
    try:
        answers = both_orders(judge, case)
    except JudgeError:
        raise
    except Exception as exc:
        log.exception("judge %s failed on a battle", judge.id)
        raise JudgeError(f"the judge failed: {type(exc).__name__}") from exc
    for answer in answers:
        if not isinstance(answer, Verdict):
            raise JudgeError(f"the judge answered {type(answer).__name__}, not a verdict")
    return answers[0].choice, answers[1].choice


def reason(exc: Exception, judge_id: str) -> str:
    """What a run counts a battle not judged under: the message without the judge's own
    name in front (an LLM judge's messages begin with its id, a speech judge's with
    ``judge '<id>':``), cut before any quoted text (a reply, a prompt: different in each
    battle). Until session 33 the message was cut at its first colon, so every reason of
    an LLM judge read as its id and ``judge`` printed "not judged (50): judge/qwen2.5-72b"."""
    text = str(exc)
    for own in (f"{judge_id}: ", f"judge {judge_id!r}: "):
        text = text.removeprefix(own)
    for quote in (" '", ' "'):
        text = text.split(quote)[0]
    return text[:REASON_CHARS]


class BackgroundJudges:
    """The Space's judges: each configured judge judges one battle of each of its arenas in
    turn, with a pause between battles, in one low-priority thread, until stopped."""

    def __init__(self, service, judges: list[Judge], token: str, pause: float):
        self.service, self.judges, self.token, self.pause = service, judges, token, pause
        self.runs = {(j.id, a): JudgeRun() for j in judges for a in j.spec.arenas}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> threading.Thread:
        self._thread = threading.Thread(target=self._loop, name="arena-judges", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        lower_thread_priority()  # visitors first
        while not self._stop.is_set():
            judged = 0
            for judge in self.judges:
                for arena_id in judge.spec.arenas:
                    if self._stop.wait(self.pause):
                        return
                    if not self.service.progress.done:
                        continue  # votes still replaying: the board is not ready to draw from
                    try:
                        one = judge_battles(self.service, judge, arena_id, 1, self.token)
                    except Exception:  # a broken judge must not end the others, nor the Space
                        log.exception("judge %s failed on arena %s", judge.id, arena_id)
                        continue
                    total = self.runs[(judge.id, arena_id)]
                    total.judged += one.judged
                    total.not_judged.update(one.not_judged)
                    judged += one.judged
            if not judged and self._stop.wait(IDLE_SECONDS):
                return  # a round that judged nothing is not repeated at once (IDLE_SECONDS)
