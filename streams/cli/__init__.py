"""The ``swe-stream`` command: ``main`` builds the parser from one module per command group."""
