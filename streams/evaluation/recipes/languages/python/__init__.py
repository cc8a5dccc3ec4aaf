"""Python: the readers of its project files, its recipes, its runners."""
