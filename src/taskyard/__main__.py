"""``python -m taskyard`` runs the CLI."""

from taskyard.cli.main import main

main()
