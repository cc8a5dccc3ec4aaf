"""Python: the readers of its project files, its recipes, its runners."""

from streams.evaluation.recipes.languages.python.language import LANGUAGE

__all__ = ["LANGUAGE"]
