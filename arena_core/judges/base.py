"""What a judge is: a registry entry that looks at a battle's two outputs and votes.

A judge votes through the visitor's code path (:meth:`ArenaService.judge_vote`), so
its verdicts are vote rows like any other, told apart by ``voter_kind = "judge"``
and the ``judge`` field. Every battle is judged twice, in both orders: a judge
that prefers whatever it is shown first then shows it in its own log, and the
bias analysis (:mod:`arena_core.judges.bias`) measures it from the pairs of
verdicts instead of assuming it away.

Judges are pure in what they need from the world: the outputs, the prompt and
the language come in a :class:`Case`; recognisers, HTTP clients and clocks are
injected where a judge uses them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from arena_core.votes.schema import VOTES

if TYPE_CHECKING:  # the registry imports this module, and the backends import the registry
    from arena_core.backends.output import Output

#: What a judge may answer: the visitor's four choices.
VERDICTS = VOTES
#: Judge kinds the registry accepts, each with its module.
KINDS = ("intelligibility", "prosody", "llm")


class JudgeError(RuntimeError):
    """The judge could not give a verdict on this case (recogniser missing, reply unreadable)."""


@dataclass(frozen=True)
class JudgeSpec:
    """A judge as the registry describes it.

    ``family`` names the model family the judge belongs to (an LLM judge from the
    same maker as a model under test), for the self-preference measure; None when
    the judge has none (a speech recogniser). ``options`` holds the kind's own
    settings (a margin, a backend), validated by the kind's constructor.
    """

    id: str
    name: str
    kind: str
    arenas: tuple[str, ...]
    family: str | None = None
    options: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))

    def option(self, key: str, default: Any = None) -> Any:
        return self.options.get(key, default)


@dataclass(frozen=True)
class Case:
    """One battle as a judge sees it, sides in the order shown.

    ``language`` is the prompt's language code (its category in a speech arena),
    None when unknown.
    """

    prompt: str
    a: Output
    b: Output
    language: str | None = None

    def swapped(self) -> Case:
        return Case(self.prompt, self.b, self.a, self.language)


@dataclass(frozen=True)
class Verdict:
    """A judge's answer on one case: the choice, each side's score, and why.

    ``scores`` are the judge's own measure per side in the order shown (a word
    error rate, a pitch range, None for an LLM), kept so a researcher can see how
    close the call was.
    """

    choice: str
    scores: tuple[float | None, float | None] = (None, None)
    reason: str = ""

    def __post_init__(self):
        if self.choice not in VERDICTS:
            raise JudgeError(f"a verdict is one of {', '.join(VERDICTS)}, not {self.choice!r}")


class Judge(ABC):
    """A judge: ``judge(case)`` returns a :class:`Verdict` or raises :class:`JudgeError`."""

    def __init__(self, spec: JudgeSpec):
        self.spec = spec

    @property
    def id(self) -> str:
        return self.spec.id

    @abstractmethod
    def judge(self, case: Case) -> Verdict:
        """The verdict on ``case`` with its sides in the order given."""


def both_orders(judge: Judge, case: Case) -> tuple[Verdict, Verdict]:
    """The judge's verdicts with the sides as drawn and swapped (each in its own order)."""
    return judge.judge(case), judge.judge(case.swapped())
