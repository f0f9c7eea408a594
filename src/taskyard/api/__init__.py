"""The public faces of taskyard: the Python API (``Yard``) and, later, HTTP."""
