"""What the page shows: board tables and summaries, charts, and the page's prose.

Pure functions from the engine's results to Markdown, DataFrames and Plotly
figures, so the page's content is tested without a browser.
"""
