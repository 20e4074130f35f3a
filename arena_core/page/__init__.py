"""What the page shows: the battle's pieces, board tables and summaries, charts, the page's
prose, and its script and styles.

Pure functions from the engine's results to HTML, Markdown and Plotly figures
(``battle``, ``table``, ``presenters``, ``plots``, ``ui_text``, ``speed``), so the page's
content is tested without a browser; ``assets`` hands the browser-side files to
``launch()``. Gradio itself appears only in ``app.py``.
"""
