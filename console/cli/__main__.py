"""``python -m console.cli``: the same as the ``kazami`` console script."""

from console.cli.commands import run

run()
