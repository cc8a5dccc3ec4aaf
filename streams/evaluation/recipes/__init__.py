"""How to install and test a repository: facts read from its files, a chain of small detectors
that turn them into a recipe, the Python version to run it on, and per-repository overrides."""
