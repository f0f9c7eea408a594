"""The ``taskyard`` command."""
