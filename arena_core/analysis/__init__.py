"""Analyses beyond the board: measures of outputs for style-controlled boards and judges' biases
(:mod:`~arena_core.analysis.speech_style` is what a listener hears of a clip's style), and the
per-prompt complementarity of an arena's models (:mod:`~arena_core.analysis.complementarity`)."""
