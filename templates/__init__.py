"""Jinja2 templates shipped with onboard (package data; see onboard.render)."""
