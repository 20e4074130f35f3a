"""Measures of outputs beyond the vote, for style-controlled boards and judges' biases:
:mod:`~arena_core.analysis.speech_style` is what a listener hears of a clip's style."""
