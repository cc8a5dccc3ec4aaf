"""What every language's recipe reader shares: the file tree (``tree``), the loaders of its
structured files (``loaders``), the CI walker (``ci``) and the shell splitter (``shell``). Pure:
no Docker, no I/O of their own, nothing raises on bad input."""
