"""The sequential-Elo replay loop compiled to machine code at start-up, through llvmlite.

Why not numba, which compiled this loop before: in a fresh process, importing numba and
loading its on-disk cache costs 0.6 to 1.1 s on the 2-core bench machine, more than the
plain-Python loop spends on a million votes (0.2 to 0.3 s), so a researcher's one-off
``leaderboard`` run used the plain loop below two million votes. llvmlite is the compiler
numba itself is built on (installed with it): importing its binding and compiling the
loop below takes about 0.07 s, and the loop then runs a million votes in about 15 ms.

The loop is written once, in LLVM's assembly language, as :func:`~.elo.replay_loop` is in
Python, and runs the same IEEE operations in the same order: the same subtraction,
multiplication, ``exp`` (the C library's, which Python's ``math.exp`` calls too),
addition and division, with no fused multiply-add (LLVM fuses only instructions flagged
``contract``, and none is). So the ratings are bit-identical to the plain loop's; the
tests check it with hypothesis, and :func:`~.elo.compiled_replay` checks it once per
process on fixed votes before the loop is used. The wrapper checks every index before the
call: the machine code reads memory unchecked, as numba's did.
"""

from __future__ import annotations

import ctypes
import functools
import logging

import numpy as np

log = logging.getLogger(__name__)

#: ``elo(ratings, played, k_table, a, b, outcome, scores, natural, n)``: for each vote t,
#: ``delta = scores[outcome[t]] - 1 / (1 + exp((r[b] - r[a]) * natural))``, then
#: ``r[a] += k_table[played[a]] * delta``, ``r[b] -= k_table[played[b]] * delta`` and both
#: battle counts grow by one; ``a[t] != b[t]`` (the callers check it).
_IR = r"""
declare double @exp(double)

define void @elo(ptr %r, ptr %played, ptr %k, ptr %a, ptr %b, ptr %o, ptr %s, double %nat,
                 i64 %n) {
entry:
  %none = icmp eq i64 %n, 0
  br i1 %none, label %done, label %vote
vote:
  %t = phi i64 [0, %entry], [%next, %vote]
  %pa = getelementptr i64, ptr %a, i64 %t
  %i = load i64, ptr %pa
  %pb = getelementptr i64, ptr %b, i64 %t
  %j = load i64, ptr %pb
  %pri = getelementptr double, ptr %r, i64 %i
  %ri = load double, ptr %pri
  %prj = getelementptr double, ptr %r, i64 %j
  %rj = load double, ptr %prj
  %gap = fsub double %rj, %ri
  %x = fmul double %gap, %nat
  %e = call double @exp(double %x)
  %den = fadd double 1.0, %e
  %expected = fdiv double 1.0, %den
  %po = getelementptr i64, ptr %o, i64 %t
  %code = load i64, ptr %po
  %ps = getelementptr double, ptr %s, i64 %code
  %score = load double, ptr %ps
  %delta = fsub double %score, %expected
  %pni = getelementptr i64, ptr %played, i64 %i
  %ni = load i64, ptr %pni
  %pki = getelementptr double, ptr %k, i64 %ni
  %ki = load double, ptr %pki
  %stepi = fmul double %ki, %delta
  %newi = fadd double %ri, %stepi
  store double %newi, ptr %pri
  %pnj = getelementptr i64, ptr %played, i64 %j
  %nj = load i64, ptr %pnj
  %pkj = getelementptr double, ptr %k, i64 %nj
  %kj = load double, ptr %pkj
  %stepj = fmul double %kj, %delta
  %newj = fsub double %rj, %stepj
  store double %newj, ptr %prj
  %ni1 = add i64 %ni, 1
  store i64 %ni1, ptr %pni
  %nj1 = add i64 %nj, 1
  store i64 %nj1, ptr %pnj
  %next = add i64 %t, 1
  %more = icmp ult i64 %next, %n
  br i1 %more, label %vote, label %done
done:
  ret void
}
"""

_PTR = ctypes.c_void_p
_SIGNATURE = ctypes.CFUNCTYPE(None, *[_PTR] * 7, ctypes.c_double, ctypes.c_int64)


@functools.cache
def _machine_code():
    """The compiled ``elo`` function, or None where llvmlite is missing or fails (the plain
    loop gives the same floats). The engine is kept for the process: the code lives in it."""
    try:
        import llvmlite.binding as llvm

        # The C library's exp, named to the compiler by its address: left to LLVM's own
        # lookup, a process that does not export it (a statically linked Python) ends in
        # LLVM's fatal error, which no ``except`` catches.
        llvm.add_symbol("exp", _c_exp())
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        module = llvm.parse_assembly(_IR)
        module.verify()
        # The generic CPU of the host's architecture: no instruction set chosen per machine.
        machine = llvm.Target.from_default_triple().create_target_machine(opt=2)
        engine = llvm.create_mcjit_compiler(module, machine)
        engine.finalize_object()
        function = _SIGNATURE(engine.get_function_address("elo"))
    except Exception as exc:  # an llvmlite too old or too new, an unknown platform
        log.info("sequential Elo runs the plain loop: llvmlite could not compile it (%s)", exc)
        return None
    return engine, function


def _c_exp() -> int:
    """The address of the C maths library's ``exp``, the one ``math.exp`` calls on the
    platforms Python is built for here (glibc, macOS); ``elo.compiled_replay`` checks that
    both give the same floats before the compiled loop is used. The library is opened by
    its usual name first: ``ctypes.util.find_library`` runs ``ldconfig`` (0.08 s here)."""
    for name in _LIBM_NAMES:
        try:
            return ctypes.cast(ctypes.CDLL(name).exp, ctypes.c_void_p).value
        except OSError:
            continue
    from ctypes.util import find_library

    name = find_library("m")
    if name is None:  # e.g. Windows, whose C runtime llvmlite would need named otherwise
        raise OSError("no C maths library found")
    return ctypes.cast(ctypes.CDLL(name).exp, ctypes.c_void_p).value


#: The C maths library's names on glibc and on macOS.
_LIBM_NAMES = ("libm.so.6", "libm.dylib")


def available() -> bool:
    """Whether the compiled loop can run here (compiling it on first use)."""
    return _machine_code() is not None


def compiled() -> bool:
    """Whether this process has compiled the loop already (so a call costs microseconds)."""
    return _machine_code.cache_info().currsize > 0 and _machine_code() is not None


def replay(ratings, played, k_table, a, b, outcome, scores, natural) -> None:
    """:func:`~arena_core.ratings.elo.replay_loop`'s contract, in machine code: ``ratings``
    (float64) and ``played`` (int64) are updated in place.

    Raises ValueError (before any rating moves) for an index the arrays do not hold, which
    the machine code would read past its arrays for."""
    compiled = _machine_code()
    if compiled is None:  # callers ask available() first
        raise RuntimeError("the compiled Elo loop is not available here (see the log)")
    function = compiled[1]
    n_items = len(ratings)
    if ratings.dtype != np.float64 or played.dtype != np.int64 or len(played) != n_items:
        raise ValueError("ratings must be float64 and played int64, one per model")
    if not all(x.flags.c_contiguous and x.flags.writeable for x in (ratings, played)):
        raise ValueError("ratings and played must be contiguous and writeable: they are "
                         "updated in place")  # fmt: skip
    if not all(np.issubdtype(np.asarray(x).dtype, np.integer) for x in (a, b, outcome)):
        raise ValueError("a, b and outcome must be integer arrays")
    a, b, outcome = (np.ascontiguousarray(x, dtype=np.int64) for x in (a, b, outcome))
    k_table = np.ascontiguousarray(k_table, dtype=np.float64)
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    if not len(a):
        return
    if len(b) != len(a) or len(outcome) != len(a):
        raise ValueError("a, b and outcome must have one entry per vote")
    if min(a.min(), b.min(), outcome.min(), played.min()) < 0 or max(a.max(), b.max()) >= n_items:
        raise ValueError(f"model index out of range 0..{n_items - 1}")
    if outcome.max() >= len(scores):
        raise ValueError(f"outcome code out of range 0..{len(scores) - 1}")
    if np.any(a == b):  # replay_loop would count the battle twice, the machine code once
        raise ValueError("a model cannot battle itself")
    if played.max() >= len(k_table):  # checked alone first: the sum below cannot wrap then
        raise ValueError("the K table is shorter than a model's battles")
    battles = np.bincount(a, minlength=n_items) + np.bincount(b, minlength=n_items) + played
    if battles.max() > len(k_table):  # a model's n-th battle reads entry n - 1
        raise ValueError("the K table is shorter than a model's battles")
    function(ratings.ctypes.data, played.ctypes.data, k_table.ctypes.data, a.ctypes.data,
             b.ctypes.data, outcome.ctypes.data, scores.ctypes.data, natural, len(a))  # fmt: skip
