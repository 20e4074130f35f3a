"""Automatic judges: registry entries that vote on battles like visitors, and the
measures of their biases. ``base`` defines the interface; each kind has a module."""
