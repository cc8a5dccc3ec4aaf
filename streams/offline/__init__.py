"""The testing kit: an offline world (GH Archive and GitHub stand-ins serving real recordings,
repositories made locally, local HTTP servers) for ``swe-stream demo`` and the tests."""
