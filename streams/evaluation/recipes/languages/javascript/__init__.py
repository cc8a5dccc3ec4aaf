"""JavaScript / TypeScript: package.json, lockfiles, scripts, Node majors, its runners."""

from streams.evaluation.recipes.languages.javascript.language import LANGUAGE

__all__ = ["LANGUAGE"]
