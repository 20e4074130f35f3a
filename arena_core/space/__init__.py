"""The Space at run time: settings, battles, votes, voters and live boards, without any UI.

``app.py`` lays out the page; everything it calls lives here (``service.ArenaService``
is the entry point, ``startup.build_service`` assembles it from the settings).
"""
