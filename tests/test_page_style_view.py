"""The style-controlled view's HTML (arena_core.page.analysis_html) at few votes: rank
bands as on the Votes view, and no figures for effects the votes cannot bound."""

import re

from arena_core.analysis.boards import StyleBoard, StyleRow
from arena_core.page.analysis_html import style_html
from arena_core.ratings.style import Coefficient

#: Three models: the first two's intervals overlap (either may be first), the third's lies
#: below both (third for sure). Bands by hand: 1–2, 1–2, 3.
ROWS = (StyleRow("a", 1040.0, 990.0, 1090.0), StyleRow("b", 1020.0, 970.0, 1070.0),
        StyleRow("c", 800.0, 760.0, 840.0))  # fmt: skip
#: The effects a 13-vote log gave on the page, and a sensible one.
WILD = Coefficient("duration_s", 28221.2, -151792.5, 208234.9, 1.1, 1.0, 0.0, 1.0, 13)
TAME = Coefficient("speech_rate", 40.0, 10.0, 70.0, 0.4, 0.557, 0.514, 0.600, 13)
#: Unbounded above: every informative vote went its way.
ONE_SIDED = Coefficient("lufs", None, 12.0, None, 2.0, None, 0.517, None, 13,
                        "unbounded above: every informative vote goes its way")  # fmt: skip


def board(*coefficients) -> StyleBoard:
    return StyleBoard(arena="tts", category=None, rows=ROWS, coefficients=coefficients,
                      votes_used=13, left_out=0, not_fitted={})  # fmt: skip


def cells(html: str, caption: str) -> list[list[str]]:
    table = html.split(f">{caption}</caption>")[1].split("</table>")[0]
    return [re.findall(r"<td>(.*?)</td>", row) for row in table.split("<tr>")[2:]]


def test_the_style_board_ranks_in_bands_like_the_votes_view():
    """Ranks were strict (1, 2, 3 ... 14) while the intervals overlapped: the Votes view said
    "1–14" for the same models."""
    rows = cells(style_html(board(TAME), {}), "Style-controlled board")
    assert [r[0] for r in rows] == ["1–2", "1–2", "3"]


def test_effects_the_votes_cannot_bound_are_not_estimated():
    """At 13 votes: "speech duration +28221.2 points [−151792.5, +208234.9]", "P(A wins)
    1.000". An interval that wide, or one open on a side, is "not estimated", with a note."""
    html = style_html(board(WILD, TAME, ONE_SIDED), {})
    rows = {r[0]: r[1:] for r in cells(html, "Style covariates")}
    assert rows["speech duration"] == ["not estimated", "–", "–"]
    assert rows["loudness (LU)"] == ["not estimated", "–", "–"]
    assert rows["speaking rate"] == ["+40.0", "[+10.0, +70.0]", "0.557"]  # bounded: shown
    assert "28221" not in html and "151792" not in html and "+inf" not in html
    assert "speech duration: not estimated: its 95% interval is wider than 800" in html
    assert "loudness (LU): not estimated: unbounded above" in html
