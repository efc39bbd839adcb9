"""The ground floor: settings, the error vocabulary, API-key parsing, Redis URLs, metrics.

Nothing here imports any other part of app.
"""
