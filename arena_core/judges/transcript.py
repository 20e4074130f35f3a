"""English text as a word error rate should compare it: the words a listener hears.

A prompt says "Dr. Smith paid $3.50 on May 1st, 1999 - 20% more!" and the
recogniser writes "doctor smith paid three dollars fifty on may first nineteen
ninety nine twenty percent more". Counting the difference in case, punctuation
and digits as errors would charge a perfect reading with half its words. So both
the prompt and the transcript are brought to one form (:func:`normalise`):

* Unicode NFKC, case folded; typographic apostrophes and dashes made ASCII;
* a few abbreviations spoken as words (Mr. -> mister, Dr. -> doctor or drive,
  St. -> street or saint, e.g. -> for example, No. 5 -> number five, & -> and), and
  acronyms read as a word or letter by letter (NASA -> nasa, FAQ -> f a q);
* numbers spoken as a US English reader says them: cardinals ("12" -> twelve,
  "1,000" -> one thousand, "-4" -> minus four), decimals ("3.14" -> three point
  one four), ordinals ("21st" -> twenty first), percent and currency ("20%" ->
  twenty percent, "$3.50" -> three dollars fifty cents, see :func:`_money`);
* punctuation dropped (an apostrophe inside a word kept: "don't"), hyphens and
  slashes become spaces.

A four-digit number in 1100-2099 is a year as often as a quantity, and readers
differ ("nineteen ninety nine" or "one thousand nine hundred ninety nine"); so do
prices, acronyms and some abbreviations: the prompt then has several readings
(:func:`readings`), and a clip is scored against the one it matches best. Not handled: times ("3:30"), dates in figures,
decades ("the '90s"), Roman numerals, digit-by-digit readings of codes and telephone numbers, and
abbreviations beyond the list: those count as recogniser errors for both sides
alike.
"""

from __future__ import annotations

import itertools
import re
import unicodedata

#: Most readings of one prompt (each ambiguous number multiplies them; past this many, the
#: first combinations in order are kept, so the earliest numbers keep their first reading).
MAX_READINGS = 64
#: Numbers spoken as words up to this (exclusive); larger ones are read digit by digit.
LARGEST_CARDINAL = 10**15

_ONES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
         "eighteen", "nineteen")  # fmt: skip
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_SCALES = ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (1000, "thousand"))
_ORDINAL_ENDINGS = {"one": "first", "two": "second", "three": "third", "five": "fifth",
                    "eight": "eighth", "nine": "ninth", "twelve": "twelfth"}  # fmt: skip
#: Abbreviations (written with their full stop) and their readings, the usual one first.
_ABBREVIATIONS = {
    "mr": ("mister",), "mrs": ("missus",), "dr": ("doctor", "drive"), "prof": ("professor",),
    "st": ("street", "saint"), "mt": ("mount",), "ave": ("avenue",), "jr": ("junior",),
    "sr": ("senior",), "vs": ("versus",), "etc": ("et cetera",), "approx": ("approximately",),
    "e.g": ("for example", "e g"), "i.e": ("that is", "i e"), "a.m": ("a m", "am"),
    "p.m": ("p m", "pm"),
}  # fmt: skip
_CURRENCIES = {"$": ("dollar", "cent"), "£": ("pound", "penny"), "€": ("euro", "cent")}
_TYPOGRAPHIC = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "–": "-", "—": "-", "−": "-"})
#: An acronym (two to five capitals) is read as a word ("NASA") or letter by letter ("FAQ").
_ACRONYM = r"\b(?P<acronym>[A-Z]{2,5})\b"
_NUMBER = re.compile(
    r"(?P<cur>[$£€])?(?P<sign>(?<![\w.])-)?(?P<int>\d{1,3}(?:,\d{3})+|\d+)"
    r"(?:\.(?P<frac>\d+))?(?P<suffix>st|nd|rd|th|%)?(?!\w)"
)
#: An abbreviation, only with its full stop ("Dr." but not "dr" inside a word), or a number.
_SPOKEN_DIFFERENTLY = re.compile(
    r"(?i:\b(?P<abbr>"
    + "|".join(map(re.escape, _ABBREVIATIONS))
    + r")\.)|"
    + _ACRONYM
    + "|"
    + _NUMBER.pattern
)
#: The ``no`` abbreviation only before a number ("No. 5"), never the word "no."
_NUMBER_SIGN = re.compile(r"\bno\.(?=\s*\d)", re.IGNORECASE)
#: Characters that separate words; everything else that is not a letter, digit or apostrophe goes.
_SEPARATORS = re.compile(r"[-/_]+")
_NOT_WORD = re.compile(r"[^\w\s']+")
#: Recogniser markup: fillers (<sil>, [NOISE]) and alternate pronunciations ("the(2)").
_MARKUP = re.compile(r"<[^>]*>|\[[^\]]*\]|\(\d+\)")
_EDGE_APOSTROPHES = re.compile(r"(?<!\w)'|'(?!\w)")


def cardinal(n: int) -> str:
    """``n`` (0 <= n < :data:`LARGEST_CARDINAL`) in US English words, without "and"."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return _ONES[n // 100] + " hundred" + ("" if rest == 0 else " " + cardinal(rest))
    for size, name in _SCALES:
        if n >= size:
            rest = n % size
            return cardinal(n // size) + " " + name + ("" if rest == 0 else " " + cardinal(rest))
    raise AssertionError("unreachable")  # pragma: no cover


def ordinal(n: int) -> str:
    """``n`` as an ordinal: 1 -> first, 21 -> twenty first, 100 -> one hundredth."""
    words = cardinal(n).split()
    last = words[-1]
    if last in _ORDINAL_ENDINGS:
        words[-1] = _ORDINAL_ENDINGS[last]
    elif last.endswith("y"):
        words[-1] = last[:-1] + "ieth"
    else:
        words[-1] = last + "th"
    return " ".join(words)


def year(n: int) -> str:
    """A four-digit year as said in pairs: 1999 -> nineteen ninety nine, 1905 -> nineteen
    oh five, 1900 -> nineteen hundred, 2000 -> two thousand."""
    high, low = divmod(n, 100)
    if low == 0:
        return "two thousand" if n == 2000 else f"{cardinal(high)} hundred"
    return f"{cardinal(high)} {'oh ' if low < 10 else ''}{cardinal(low)}"


def _digits(text: str) -> str:
    return " ".join(_ONES[int(d)] for d in text)


def _integer_readings(digits: str) -> list[str]:
    """The ways an unsigned integer written as ``digits`` (commas removed) is read."""
    n = int(digits)
    if n >= LARGEST_CARDINAL:
        return [_digits(digits)]
    readings = [cardinal(n)]
    if len(digits) == 4 and 1100 <= n <= 2099 and year(n) != readings[0]:
        readings.append(year(n))
    return readings


def _money(amount: str, cents: str | None, currency: str) -> list[str]:
    """Readings of an amount: "$3.50" -> three dollars fifty cents / three dollars fifty /
    three fifty; "$1" -> one dollar; "$0.99" -> ninety nine cents. Cents past two digits
    are dropped."""
    unit, small = _CURRENCIES[currency]
    whole = int(amount)
    units = unit if whole == 1 else unit + "s"
    if cents is None or int(cents) == 0:
        return [f"{cardinal(whole)} {units}"]
    hundredths = int((cents + "0")[:2])
    smalls = small if hundredths == 1 else ("pence" if small == "penny" else small + "s")
    if whole == 0:
        return [f"{cardinal(hundredths)} {smalls}"]
    spoken = [f"{cardinal(whole)} {units} {cardinal(hundredths)} {smalls}",
              f"{cardinal(whole)} {units} {cardinal(hundredths)}"]  # fmt: skip
    if hundredths >= 10:  # "three fifty", but "two oh one" is not how a price is read
        spoken.append(f"{cardinal(whole)} {cardinal(hundredths)}")
    return spoken


def _number_readings(match: re.Match) -> list[str]:
    """Every reading of one written number (at least one)."""
    digits = match["int"].replace(",", "")
    currency, suffix, fraction = match["cur"], match["suffix"], match["frac"]
    if currency:
        spoken = _money(digits, fraction, currency)
    elif suffix in ("st", "nd", "rd", "th") and fraction is None and int(digits) < LARGEST_CARDINAL:
        spoken = [ordinal(int(digits))]
    else:
        spoken = _integer_readings(digits)
        if fraction is not None:
            spoken = [f"{s} point {_digits(fraction)}" for s in spoken]
        if suffix == "%":
            spoken = [f"{s} percent" for s in spoken]
    return [("minus " if match["sign"] else "") + s for s in spoken]


def _readings_of(match: re.Match) -> list[str]:
    """The readings of one abbreviation, acronym or number."""
    if match["abbr"]:
        return list(_ABBREVIATIONS[match["abbr"].casefold()])
    if match["acronym"]:
        word = match["acronym"].casefold()
        return [word, " ".join(word)]
    return _number_readings(match)


def readings(text: str) -> list[str]:
    """Every normalised reading of ``text`` (one unless it holds years, money, acronyms or
    ambiguous abbreviations), at most :data:`MAX_READINGS`, the first the usual one."""
    text = _prepare(text)
    pieces, options = [], []
    last = 0
    for match in _SPOKEN_DIFFERENTLY.finditer(text):
        pieces.append(text[last : match.start()])
        options.append(_readings_of(match))
        last = match.end()
    tail = text[last:]
    combos: list[tuple[str, ...]] = []
    for combo in itertools.product(*options):
        combos.append(combo)
        if len(combos) == MAX_READINGS:
            break
    out = []
    for combo in combos:
        joined = "".join(p + f" {w} " for p, w in zip(pieces, combo, strict=True)) + tail
        out.append(_finish(joined))
    return list(dict.fromkeys(out))


def normalise(text: str) -> str:
    """``text`` in the one form a word error rate compares (its first reading)."""
    return readings(text)[0]


def _prepare(text: str) -> str:
    """Unicode, markup, typographic punctuation, "No." and "&": before the readings (case
    stays until :func:`_finish`: it tells an acronym)."""
    text = unicodedata.normalize("NFKC", text).translate(_TYPOGRAPHIC)
    # An underscore joins word characters as far as a regular expression's \b can tell, so
    # "0_" hid its number from the readings; it separates words, as _finish treats it.
    text = _MARKUP.sub(" ", text).replace("_", " ")
    return _NUMBER_SIGN.sub(" number ", text).replace("&", " and ")


def _finish(text: str) -> str:
    """Case folded, separators to spaces, other punctuation and edge apostrophes gone,
    spaces collapsed."""
    text = _SEPARATORS.sub(" ", text.casefold())
    text = _NOT_WORD.sub(" ", text)
    text = _EDGE_APOSTROPHES.sub(" ", text)
    return " ".join(text.split())
