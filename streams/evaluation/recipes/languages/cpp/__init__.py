"""C and C++: detection, CMake's listfiles read (``listfile``, ``cmake``), Debian's gcc, CMake
and test frameworks per suite (``toolchain``), the Debian packages a build finds (``debian``),
the CMake recipe (``recipe``), swe-ctest (build what compiles, run CTest) and its report read
into per-test statuses (``ctest``, ``gtest``, ``report``), validated with three runs (a
compiled language)."""

from streams.evaluation.recipes.languages.cpp.language import Cpp

LANGUAGE = Cpp()
