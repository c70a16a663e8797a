"""The ``placement`` command line: the typer app, consoles, renderers and charts.

Nothing but the CLI imports this package.
"""
