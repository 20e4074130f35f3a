"""The Leaderboard's charts (``arena_core.page.plots``): what they draw, their axes, and
titles that fit a phone's chart."""

import html
from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_app_parts import small_board

from arena_core.page import plots, presenters


def test_charts_follow_the_board_order_and_show_only_models_that_played():
    board, counts = small_board()
    ids = ["x", "y", "z"]
    fig = plots.rating_chart(board)
    assert list(fig.data[0].y) == [r.model for r in board.rows if r.battles]
    assert "Model Z" not in fig.data[0].y  # no battles
    heat = plots.win_rate_heatmap(board, ids, counts)
    order = [ids.index(r.model_id) for r in board.rows if r.battles]
    expected = presenters.win_fraction(counts.wins)[np.ix_(order, order)]
    np.testing.assert_array_equal(np.asarray(heat.data[0].z, dtype=float), expected)
    assert (heat.data[0].zmin, heat.data[0].zmax) == (0.0, 1.0)  # a share, whatever the votes
    battles = plots.battle_count_heatmap(board, ids, counts)
    assert np.nansum(np.asarray(battles.data[0].z, dtype=float)) == 2 * board.votes_used
    assert battles.data[0].zmin == 0.0 and battles.data[0].zmax == board.votes_used  # one pair


def test_a_board_without_votes_has_no_charts():
    board, counts = small_board()
    empty = replace(board, rows=tuple(replace(r, battles=0) for r in board.rows), votes_used=0)
    assert plots.rating_chart(empty) is None
    assert plots.win_rate_heatmap(empty, ["x", "y", "z"], counts) is None
    assert plots.battle_count_heatmap(empty, ["x", "y", "z"], counts) is None


def test_rating_axis_spans_the_intervals_in_whole_points():
    board, _ = small_board()
    rows = [r for r in board.rows if r.battles]
    low, high = plots.rating_span(rows)
    assert low % 10 == 0 and high % 10 == 0
    assert low < min(r.ci_low for r in rows) and high > max(r.ci_high for r in rows)
    # One model, or equal ratings without intervals: still a readable span, never 999-1001.
    flat = [replace(rows[0], rating=1000.0, ci_low=None, ci_high=None)]
    assert plots.rating_span(flat) == (950, 1050)
    fig = plots.rating_chart(replace(board, rows=tuple(flat)))
    assert fig.layout.xaxis.tickformat == "d" and tuple(fig.layout.xaxis.range) == (950, 1050)


def test_long_names_wrap_on_chart_axes():
    assert plots.label("eSpeak NG (British English, Received Pronunciation)") == (
        "eSpeak NG<br>(British English, Received Pronunciation)"
    )
    assert plots.label("SVOX Pico (British)") == "SVOX Pico (British)"  # short: one line


def _title(fig) -> list[str]:
    return fig.layout.title.text.split("<br>")


def _shown(line: str) -> str:
    """A title line's text as drawn (its small-type span stripped, its escapes read)."""
    return html.unescape(line.removeprefix("<span style='font-size:13px'>").removesuffix("</span>"))


@settings(max_examples=300)
@given(st.text(st.characters(codec="utf-8", exclude_categories=["Cc", "Cs"]), max_size=120),
       st.text(st.characters(codec="utf-8", exclude_categories=["Cc", "Cs"]), max_size=120))  # fmt: skip
def test_a_title_and_its_note_break_into_lines_that_fit_a_phone(title, note):
    """Plotly draws a title on one line: on a 370 px chart the rating chart's note on models
    left out ran off the edge. Every character is kept in order (a word longer than a line is
    cut, as textwrap does), each line within its width, and the note's lines come last."""
    lines = plots.title_lines(title, note)
    words = [_shown(line) for line in lines]
    assert "".join("".join(words).split()) == "".join(f"{title}{note}".split())
    n_title = len([w for w in lines if not w.startswith("<span")])
    assert all(len(w) <= plots.TITLE_CHARS for w in words[:n_title])
    assert all(len(w) <= plots.NOTE_CHARS for w in words[n_title:])


def test_a_name_with_markup_is_drawn_as_written():
    """Plotly reads a title as HTML: "<b>" in a name would have set the rest in bold."""
    (line,) = plots.title_lines("Model <b> & co")
    assert line == "Model &lt;b&gt; &amp; co" and _shown(line) == "Model <b> & co"


def test_a_model_name_with_markup_is_drawn_as_written_in_every_chart():
    """Plotly reads annotations, category tick labels and hover text as HTML too: a name
    holding ``<a href=...>`` drew a link in the rating chart and the heatmaps' axes."""
    board, counts = small_board()
    name = '<a href="https://example.com/">Z</a> & <b>co</b>'
    board = replace(board, rows=tuple(replace(r, model=name) if i == 0 else r
                                      for i, r in enumerate(board.rows)))  # fmt: skip
    ids = ["x", "y", "z"]
    figures = [plots.rating_chart(board), plots.win_rate_heatmap(board, ids, counts),
               plots.battle_count_heatmap(board, ids, counts)]  # fmt: skip
    for fig in figures:
        texts = [a.text for a in fig.layout.annotations or ()]
        texts += [str(v) for trace in fig.data for v in (*trace.x, *trace.y)]
        assert not any("<a" in t or "<b>" in t for t in texts), texts
        assert any(_shown(t.replace("<br>", " ")) == name for t in texts), texts


def test_the_rating_charts_note_on_models_left_out_is_a_line_of_its_own():
    board, _ = small_board()
    plain = plots.rating_chart(board)
    assert [_shown(line) for line in _title(plain)] == ["Rating with 95% interval",
                                                        "Grey: provisional."]  # fmt: skip
    rated = [r for r in board.rows if r.battles]
    first = rated[0]
    left_out = replace(board, rows=tuple(replace(r, rating=None) if r is first else r
                                         for r in board.rows))  # fmt: skip
    fig = plots.rating_chart(left_out)
    note = " ".join(_shown(line) for line in _title(fig)[1:])
    assert note == "Grey: provisional. Models without a finite rating are left out."
    # Each line of the title gets its room above the plot, and the plot keeps its height.
    lines = len(_title(fig))
    assert fig.layout.margin.t == plots.TITLE_ROOM_PX + plots.TITLE_LINE_PX * lines
    plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    assert plot_px == plain.layout.height - plain.layout.margin.t - plain.layout.margin.b


def test_every_chart_title_line_fits_a_phone():
    board, counts = small_board()
    ids = ["x", "y", "z"]
    for fig in (plots.rating_chart(board), plots.win_rate_heatmap(board, ids, counts),
                plots.battle_count_heatmap(board, ids, counts)):  # fmt: skip
        assert all(len(_shown(line)) <= plots.TITLE_CHARS for line in _title(fig))
