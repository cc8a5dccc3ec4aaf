"""Rust: detection, Cargo manifests (``cargo``), Debian's rustc and cargo per suite
(``toolchain``), recipes per workspace (``recipe``), libtest's output read into per-test
statuses (``runners.libtest``), tests inside source files (``inline``), validated with three
runs (a compiled language)."""

from streams.evaluation.recipes.languages.rust.language import Rust

LANGUAGE = Rust()
